// Which kernel sources a library's code needs (backend/kernel_sources.h), read from the kernel
// list of this source tree.
#include "backend/kernel_sources.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace kiln::backend {
namespace {

using Names = std::vector<std::string>;

std::vector<std::string> NamesNeededBy(const std::string& code) {
  std::vector<std::string> names;
  for (const SourceFile& file : KernelSourcesFor({{"op.cc", code, {}}}, ReadKernelList(KernelSourceDir()),
                                                 KernelSourceDir())) {
    names.push_back(file.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(KernelSources, CodeCompilesTheSourcesOfTheKernelsItCalls) {
  // Sources listed without kernels always; none of the others for code that calls no kernel.
  EXPECT_EQ(NamesNeededBy("int f() { return 0; }"), (Names{"kernels/linked_params.cc", "kernels/support.cc"}));
  // A plain convolution runs its groups as matrix products and its depthwise form itself: the
  // kernel sources it calls come too. A name that is not called (a comment, a longer name) does not.
  EXPECT_EQ(NamesNeededBy("// TopK\nint f() { return kiln::kernels::Conv2D(p, a, b, c) + MyDet(1); }"),
            (Names{"kernels/conv/conv2d.cc", "kernels/conv/depthwise_conv2d.cc", "kernels/gemm/gemm.cc",
                   "kernels/linked_params.cc", "kernels/support.cc"}));
}

TEST(KernelSources, EachInstanceOfAKernelTemplateIsOneObject) {
  std::vector<SourceFile> needed = KernelSourcesFor(
      {{"a.cc", "kiln::kernels::Conv2DNCHWc<16, 0, 16, 1, 16>(p, x, w, y, nullptr, 0);", {}},
       {"b.cc",
        "kiln::kernels::Conv2DWinograd(p, x, w, y, nullptr, 0, &kiln::kernels::Conv2DNCHWc<16,0,16,1,16>);"
        "kiln::kernels::Conv2DNCHWc<8, 1, 0, 1, 8>(p, x, w, y, nullptr, 0);"
        "kiln::kernels::Conv2DPointwiseDepthwise<16>(p, x, w, b, d, y, nullptr, 0);",
        {}}},
      ReadKernelList(KernelSourceDir()), KernelSourceDir());
  Names names, defines;
  for (const SourceFile& file : needed) {
    if (file.name.find('<') == std::string::npos) continue;
    names.push_back(file.name);
    defines.insert(defines.end(), file.defines.begin(), file.defines.end());
  }
  // Each instance names its template, which the source instantiates alone.
  EXPECT_EQ(names, (Names{"kernels/conv/conv2d_nchwc.cc Conv2DNCHWc<16,0,16,1,16>",
                          "kernels/conv/conv2d_nchwc.cc Conv2DNCHWc<8,1,0,1,8>",
                          "kernels/conv/pointwise_depthwise.cc Conv2DPointwiseDepthwise<16>"}));
  EXPECT_EQ(defines, (Names{"KILN_INSTANTIATE=16,0,16,1,16", "KILN_INSTANTIATE_Conv2DNCHWc",
                            "KILN_INSTANTIATE=8,1,0,1,8", "KILN_INSTANTIATE_Conv2DNCHWc", "KILN_INSTANTIATE=16",
                            "KILN_INSTANTIATE_Conv2DPointwiseDepthwise"}));
  EXPECT_EQ(needed.size(), 6u);  // support, linked_params, the three instances, Winograd's source
}

}  // namespace
}  // namespace kiln::backend
