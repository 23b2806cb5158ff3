// Kernel selection rules (see kernel_choice.h).
#include "target/kernel_choice.h"

#include "kernels/kernels.h"

namespace kiln::target {
namespace {

using kernels::kGemmPanel;

// Elementwise loops over fewer values than this run on the calling thread: waking the pool costs
// more than it saves.
constexpr int64_t kParallelElements = 1 << 15;

}  // namespace

int64_t PreferredConvBlock(const Target& target) { return target.vector_floats >= 8 ? 16 : 8; }

int64_t ConvOutputBlock(int64_t block, int64_t out_channels) {
  if (block <= 0) return 0;
  if (out_channels % block == 0) return block;
  if (block % 2 == 0 && block / 2 >= 8 && out_channels % (block / 2) == 0) return block / 2;
  return 0;
}

ConvKernel ConvKernelFor(const std::string& data_layout, const std::string& kernel_layout,
                         const std::string& out_layout) {
  bool plain = data_layout == "NCHW" && kernel_layout == "OIHW" && (out_layout.empty() || out_layout == "NCHW");
  return plain ? ConvKernel::kDirect : ConvKernel::kBlocked;
}

std::string PackedDenseLayout(int64_t n) { return n % kGemmPanel == 0 ? "NK" + std::to_string(kGemmPanel) + "n" : ""; }

DenseKernel DenseKernelFor(const std::string& weight_layout) {
  if (weight_layout == "NK") return DenseKernel::kGemm;
  if (weight_layout == PackedDenseLayout(kGemmPanel)) return DenseKernel::kGemmPacked;
  return DenseKernel::kNone;
}

bool SplitElementwiseLoop(int64_t elements) { return elements >= kParallelElements; }

}  // namespace kiln::target
