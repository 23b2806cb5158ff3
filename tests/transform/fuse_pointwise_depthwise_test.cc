// FusePointwiseDepthwise, through the -O3 pipeline: MobileNetV2's and EfficientNet's expansion (a
// 1x1 convolution, its bias and clip, relu or swish) and the depthwise convolution after it become
// one call where the target computes it (AVX-512) and the expansion reads at most 64 channels,
// with the depthwise layer's bias and clip left to FuseOps; an AVX2 target, an expanded value read
// twice, a window the kernel has no tile for, a wider expansion, or one of unblocked input keep the
// two convolutions.
// (Numerics: the kernel against the two convolutions' definition in
// tests/kernels/conv2d_nchwc_test.cc; MobileNetV2 and EfficientNet-B0 against ONNX Runtime in the
// model suite.)
#include <gmock/gmock.h>

#include <sstream>
#include <string>

#include "ir/text.h"
#include "transform/pipeline.h"

namespace kiln::transform {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A constant of `shape` (its text) with `count` values.
std::string Constant(const std::string& name, const std::string& shape, int count) {
  std::string values;
  for (int i = 0; i < count; ++i) values += (i > 0 ? ", " : "") + std::to_string(i % 7 * 0.125 - 0.25);
  return "  %" + name + " = const(Tensor[(" + shape + "), float32], [" + values + "]);\n";
}

// x [1, C, 20, 20] -> 1x1 to 32 channels, bias, `activation` -> depthwise 3x3 at `stride` (or a
// 3x3 window dilated along the row), bias, clip; `extra_output` also returns the activation.
std::string InvertedResidual(const std::string& activation, int stride, bool extra_output = false,
                             int row_dilation = 1, int channels = 16) {
  const std::string c = std::to_string(channels);
  std::string act = activation == "relu"    ? "  %2 = nn.relu(%1);\n"
                    : activation == "swish" ? "  %s = sigmoid(%1);\n  %2 = multiply(%1, %s);\n"
                                            : "  %2 = clip(%1, a_min=0.0, a_max=6.0);\n";
  std::string text = "fn (%x: Tensor[(1, " + c + ", 20, 20), float32]) {\n" +
                     Constant("w1", "32, " + c + ", 1, 1", 32 * channels) +
                     Constant("b1", "32, 1, 1", 32) + Constant("w2", "32, 1, 3, 3", 288) +
                     Constant("b2", "32, 1, 1", 32) + "  %0 = nn.conv2d(%x, %w1);\n  %1 = add(%0, %b1);\n" + act +
                     "  %3 = nn.conv2d(%2, %w2, strides=[" + std::to_string(stride) + ", " + std::to_string(stride) +
                     "], padding=[1, 1, 1, 1], dilation=[1, " + std::to_string(row_dilation) +
                     "], groups=32);\n  %4 = add(%3, %b2);\n  %5 = clip(%4, a_min=0.0, a_max=6.0);\n";
  return text + (extra_output ? "  %6 = (%5, %2);\n  %6\n}" : "  %5\n}");
}

std::string AfterFusion(const std::string& model, target::Isa isa) {
  PassContext context;
  context.opt_level = 3;
  context.print_ir_after = {"FuseOps"};
  std::ostringstream log;
  const target::Target target =
      target::TargetFor(isa == target::Isa::kAvx512 ? "x86-64-v4" : isa == target::Isa::kAvx2 ? "x86-64-v3" : "x86-64", isa);
  RunPipeline(ir::ParseFunction(model), PassEnvironment{context, target}, log);
  return log.str();
}

TEST(FusePointwiseDepthwise, AnExpansionAndItsDepthwiseLayerBecomeOneCall) {
  for (const target::Isa isa : {target::Isa::kAvx512, target::Isa::kAvx2}) {
    const char* isa_name = isa == target::Isa::kAvx2 ? " AVX2" : " AVX-512";
    for (const std::string activation : {"clip", "relu", "swish"}) {
      for (int stride : {1, 2}) {
        std::string ir = AfterFusion(InvertedResidual(activation, stride), isa);
        EXPECT_THAT(ir, HasSubstr("nn.conv2d_pointwise_depthwise(")) << activation << " stride " << stride << isa_name;
        EXPECT_THAT(ir, Not(HasSubstr("nn.conv2d("))) << ir;
        // relu: a clip to [0, infinity); the depthwise layer's bias and clip in the same function
        if (activation == "swish") {
          EXPECT_THAT(ir, HasSubstr("activation=\"swish\"")) << ir;
        } else {
          EXPECT_THAT(ir, HasSubstr(activation == "relu" ? "a_max=inf" : "a_max=6.0")) << ir;
        }
        EXPECT_THAT(ir, HasSubstr("clip(")) << ir;
      }
    }
  }
}

TEST(FusePointwiseDepthwise, LeavesWhatTheKernelDoesNotCompute) {
  // Without AVX2 (8-channel blocks, SSE vectors): the kernel is not built for it.
  EXPECT_THAT(AfterFusion(InvertedResidual("clip", 1), target::Isa::kBaseline),
              Not(HasSubstr("nn.conv2d_pointwise_depthwise(")));
  // The expanded tensor is read by something else too: it must be written whole anyway.
  EXPECT_THAT(AfterFusion(InvertedResidual("clip", 1, /*extra_output=*/true), target::Isa::kAvx512),
              Not(HasSubstr("nn.conv2d_pointwise_depthwise(")));
  // A depthwise window dilated along the row: no row tile for it.
  EXPECT_THAT(AfterFusion(InvertedResidual("clip", 1, false, /*row_dilation=*/2), target::Isa::kAvx512),
              Not(HasSubstr("nn.conv2d_pointwise_depthwise(")));
  // An expansion of more than 64 channels: its pointwise work outweighs the saved traffic.
  EXPECT_THAT(AfterFusion(InvertedResidual("clip", 1, false, 1, /*channels=*/96), target::Isa::kAvx512),
              Not(HasSubstr("nn.conv2d_pointwise_depthwise(")));
  EXPECT_THAT(AfterFusion(InvertedResidual("clip", 1, false, 1, /*channels=*/64), target::Isa::kAvx512),
              HasSubstr("nn.conv2d_pointwise_depthwise("));
  // An expansion of a few plain input channels reads them unblocked (NCHW): not the kernel's input,
  // and the pass leaves it (it once made the call anyway, and the compile stopped at its type).
  for (int channels : {3, 8}) {
    std::string ir;
    ASSERT_NO_THROW(ir = AfterFusion(InvertedResidual("clip", 1, false, 1, channels), target::Isa::kAvx512))
        << channels << " input channels";
    EXPECT_THAT(ir, HasSubstr("nn.conv2d(")) << ir;
  }
}

}  // namespace
}  // namespace kiln::transform
