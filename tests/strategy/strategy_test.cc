// Kernel selection: each instruction set's kernel configuration, which implementation of a
// convolution or dense layer is chosen for which shapes and target, the layouts it asks for, the
// implementation lowering finds for a call as it is laid out (and its errors), and the kernel
// parameters an implementation decides.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "ir/text.h"
#include "runtime/error.h"
#include "strategy/config.h"
#include "strategy/conv2d.h"
#include "strategy/dense.h"

namespace kiln::strategy {
namespace {

using kernels::KernelConfig;
using ::testing::HasSubstr;

// The first call of `op` in the body of a function written in IR text (kept alive by `holder`).
const ir::CallNode& FirstCall(const std::string& text, const std::string& op, ir::Expr* holder) {
  *holder = ir::ParseFunction(text);
  for (const ir::Expr& e : ir::PostOrder(holder->get()->As<ir::FunctionNode>()->body)) {
    const auto* call = e->As<ir::CallNode>();
    if (call != nullptr && call->op != nullptr && call->op->name == op) return *call;
  }
  ADD_FAILURE() << "no " << op << " in " << text;
  throw std::runtime_error("no call");
}

// An NCHW convolution of x [1, C, 14, 14] with weight [O, C / groups, K, K] and `attrs`.
std::string Conv(int64_t c, int64_t o, int64_t k, const std::string& attrs = "", const std::string& dtype = "float32") {
  int64_t groups = 1;
  if (auto at = attrs.find("groups="); at != std::string::npos) groups = std::stoll(attrs.substr(at + 7));
  return "fn (%x: Tensor[(1, " + std::to_string(c) + ", 14, 14), " + dtype + "], %w: Tensor[(" + std::to_string(o) +
         ", " + std::to_string(c / groups) + ", " + std::to_string(k) + ", " + std::to_string(k) + "), " + dtype +
         "]) { %0 = nn.conv2d(%x, %w" + (attrs.empty() ? "" : ", " + attrs) + "); %0 }";
}

std::string Chosen(const std::string& text, const KernelConfig& config = kernels::kAvx2Config) {
  ir::Expr holder;
  const Conv2DImplementation* chosen = ChooseConv2D(Conv2DProblemOf(FirstCall(text, "nn.conv2d", &holder)), config);
  return chosen == nullptr ? "none" : chosen->name;
}

TEST(KernelConfig, OnePerInstructionSet) {
  EXPECT_EQ(ConfigFor(target::TargetFor("x86-64", target::Isa::kBaseline)).isa, std::string("baseline"));
  const KernelConfig& avx2 = ConfigFor(target::TargetFor("x86-64-v3", target::Isa::kAvx2));
  EXPECT_EQ(avx2.vector_floats, 8);
  EXPECT_EQ(avx2.conv_block, 16);
  EXPECT_EQ(avx2.conv_tile_16, 6);  // 12 of the 16 ymm registers hold accumulators
  const KernelConfig& avx512 = ConfigFor(target::TargetFor("x86-64-v4", target::Isa::kAvx512));
  EXPECT_EQ(avx512.vector_floats, 16);
  EXPECT_EQ(avx512.conv_tile_16, 14);
  EXPECT_EQ(avx512.conv_multi_tile_16 / avx512.conv_tile_blocks_16, 13);  // two blocks of up to 13 positions
  EXPECT_EQ(kernels::kBaselineConfig.conv_block, 8);
  EXPECT_EQ(&ConfigFor(target::HostTarget()), &ConfigFor(target::TargetFor("native", target::HostTarget().isa)));
}

TEST(Conv2DStrategy, ChoosesByShapeGroupsAndType) {
  EXPECT_EQ(Chosen(Conv(16, 32, 3, "padding=[1, 1, 1, 1]")), "conv2d.nchwc_direct");
  EXPECT_EQ(Chosen(Conv(16, 32, 1)), "conv2d.nchwc_1x1");
  EXPECT_EQ(Chosen(Conv(32, 32, 3, "groups=32")), "conv2d.nchwc_depthwise");
  EXPECT_EQ(Chosen(Conv(16, 24, 3)), "conv2d.nchwc_direct");          // in blocks of 8
  EXPECT_EQ(Chosen(Conv(12, 12, 3, "groups=12")), "conv2d.nchw_depthwise");  // no block fits 12
  EXPECT_EQ(Chosen(Conv(24, 48, 3, "groups=24")), "conv2d.nchw_depthwise");  // channel multiplier 2
  EXPECT_EQ(Chosen(Conv(64, 64, 3, "groups=2")), "conv2d.nchwc_grouped");   // 32 channels per group
  EXPECT_EQ(Chosen(Conv(32, 32, 3, "groups=4")), "conv2d.nchwc_grouped");   // 8 per group
  EXPECT_EQ(Chosen(Conv(32, 32, 3, "groups=8")), "conv2d.nchwc_small_groups");   // 4 per group, inside a block
  EXPECT_EQ(Chosen(Conv(32, 32, 3, "groups=16")), "conv2d.nchwc_small_groups");  // 2 per group
  EXPECT_EQ(Chosen(Conv(32, 64, 3, "groups=8")), "conv2d.nchwc_grouped");  // 4 in, 8 out per group: not local
  EXPECT_EQ(Chosen(Conv(24, 24, 3, "groups=8")), "conv2d.nchw_im2col_gemm");     // 3 per group
  EXPECT_EQ(Chosen(Conv(16, 12, 3)), "conv2d.nchw_im2col_gemm");
  // Non-overlapping windows (a patch embedding): im2col is a permutation; overlapping or padded
  // ones, and small windows, stay direct.
  EXPECT_EQ(Chosen(Conv(3, 32, 7, "strides=[7, 7]")), "conv2d.nchw_patches_gemm");
  EXPECT_EQ(Chosen(Conv(16, 32, 4, "strides=[4, 4]")), "conv2d.nchw_patches_gemm");
  EXPECT_EQ(Chosen(Conv(16, 32, 4, "strides=[2, 2]")), "conv2d.nchwc_direct");
  EXPECT_EQ(Chosen(Conv(16, 32, 4, "strides=[4, 4], padding=[1, 1, 1, 1]")), "conv2d.nchwc_direct");
  EXPECT_EQ(Chosen(Conv(16, 32, 2, "strides=[2, 2]")), "conv2d.nchwc_direct");
  EXPECT_EQ(Chosen(Conv(16, 32, 3, "", "float64")), "none");
  KernelConfig unblocked = kernels::kAvx2Config;
  unblocked.conv_block = 0;
  EXPECT_EQ(Chosen(Conv(16, 32, 3), unblocked), "conv2d.nchw_im2col_gemm");
}

// A 3x3 convolution at stride 1 of 16 channels into 32 with a constant weight, output 14x14.
Conv2DProblem WinogradProblem() {
  Conv2DProblem p;
  p.batch = 1;
  p.channels = 16;
  p.height = p.width = p.out_h = p.out_w = 14;
  p.out_channels = 32;
  p.kernel_h = p.kernel_w = 3;
  p.strides = p.dilation = {1, 1};
  p.padding = {1, 1, 1, 1};
  p.float32 = p.constant_weight = true;
  return p;
}

// Winograd's F(4x4, 3x3) for 3x3 stride-1 layers with a constant weight (transformed when the
// library is built) on planes of 8x8 or more; the direct convolution otherwise.
TEST(Conv2DStrategy, WinogradForConstant3x3WeightsOnPlanesOf8OrMore) {
  auto name = [](const Conv2DProblem& p, const KernelConfig& config = kernels::kAvx2Config) {
    const Conv2DImplementation* chosen = ChooseConv2D(p, config);
    return chosen == nullptr ? std::string("none") : std::string(chosen->name);
  };
  Conv2DProblem p = WinogradProblem();
  EXPECT_EQ(name(p), "conv2d.nchwc_winograd");
  EXPECT_EQ(name(p, kernels::kBaselineConfig), "conv2d.nchwc_winograd");  // in blocks of 8
  p.out_channels = 24;
  EXPECT_EQ(name(p), "conv2d.nchwc_winograd");  // output blocks of 8
  auto direct = [&](auto change) {
    Conv2DProblem q = WinogradProblem();
    change(q);
    return name(q);
  };
  EXPECT_EQ(direct([](Conv2DProblem& q) { q.constant_weight = false; }), "conv2d.nchwc_direct");
  EXPECT_EQ(direct([](Conv2DProblem& q) { q.out_h = q.out_w = 7; }), "conv2d.nchwc_direct");
  EXPECT_EQ(direct([](Conv2DProblem& q) { q.out_h = 1; }), "conv2d.nchwc_direct");
  EXPECT_EQ(direct([](Conv2DProblem& q) { q.strides = {2, 2}; }), "conv2d.nchwc_direct");
  EXPECT_EQ(direct([](Conv2DProblem& q) { q.dilation = {1, 2}; }), "conv2d.nchwc_direct");
  EXPECT_EQ(direct([](Conv2DProblem& q) { q.kernel_w = 5; }), "conv2d.nchwc_direct");
  EXPECT_EQ(direct([](Conv2DProblem& q) { q.channels = 8; }), "conv2d.nchwc_direct");    // read plain
  EXPECT_EQ(direct([](Conv2DProblem& q) { q.channels = 20; }), "conv2d.nchwc_direct");   // no block fits
  EXPECT_EQ(direct([](Conv2DProblem& q) { q.groups = 2; }), "conv2d.nchwc_grouped");
  EXPECT_EQ(direct([](Conv2DProblem& q) { q.out_channels = 12; }), "conv2d.nchw_im2col_gemm");
  // Its layouts: the data in the producer's block of 8 or 16, else the target's; the output in the
  // target's block.
  const Conv2DImplementation& winograd = *ChooseConv2D(p, kernels::kAvx2Config);
  EXPECT_EQ(winograd.layouts(p, kernels::kAvx2Config, 8).data, "NCHW8c");
  EXPECT_EQ(winograd.layouts(p, kernels::kAvx2Config, 0).data, "NCHW16c");
  EXPECT_EQ(winograd.layouts(p, kernels::kAvx2Config, 0).out, "NCHW8c");
  p.out_channels = 32;
  EXPECT_EQ(winograd.layouts(p, kernels::kAvx2Config, 16).out, "NCHW16c");
}

// The weight in Winograd's domain, and the parameters of an nn.conv2d_winograd call.
TEST(Conv2DStrategy, WinogradWeightAndKernelParameters) {
  runtime::NDArray weight = runtime::NDArray::Empty({16, 8, 3, 3}, runtime::kFloat32);
  auto* w = static_cast<float*>(weight.data());
  for (int i = 0; i < 16 * 8 * 9; ++i) w[i] = 0.0f;
  w[(5 * 8 + 3) * 9 + 4] = 1.0f;  // output 5, input 3: the centre tap only
  runtime::NDArray transformed = WinogradWeightOf(weight, 8, 16);
  EXPECT_EQ(transformed.shape(), (std::vector<int64_t>{36, 1, 1, 8, 16}));
  // G e_1 G^T for the centre tap: the outer product of G's middle column (0, -1/6, 1/6, 1/12,
  // -1/12, 0) with itself.
  const double g1[6] = {0, -1.0 / 6, 1.0 / 6, 1.0 / 12, -1.0 / 12, 0};
  const auto* t = static_cast<const float*>(transformed.data());
  for (int e = 0; e < 36; ++e) {
    for (int c = 0; c < 8; ++c) {
      for (int o = 0; o < 16; ++o) {
        double want = c == 3 && o == 5 ? g1[e / 6] * g1[e % 6] : 0.0;
        ASSERT_NEAR(t[(e * 8 + c) * 16 + o], want, 1e-7) << "point " << e << " input " << c << " output " << o;
      }
    }
  }
  ir::Expr holder;
  const ir::CallNode& call = FirstCall(R"(fn (%x: Tensor[(2, 3, 13, 10, 8), float32], %w: Tensor[(36, 2, 3, 8, 16), float32]) {
      %0 = nn.conv2d_winograd(%x, %w, padding=[2, 0, 1, 2], data_layout="NCHW8c", out_layout="NCHW16c"); %0 })",
                                       "nn.conv2d_winograd", &holder);
  EXPECT_EQ(call.type().tensor().shape, (std::vector<int64_t>{2, 2, 14, 10, 16}));
  kernels::Conv2DWinogradParams params = Conv2DWinogradKernelParams(call);
  EXPECT_EQ(params.Fields(), (kernels::Conv2DWinogradParams{2, 24, 13, 10, 8, 32, 16, 14, 10, 2, 0}.Fields()));
}

TEST(Conv2DStrategy, LayoutsFollowTheProducerAndTheBlock) {
  ir::Expr holder;
  Conv2DProblem direct = Conv2DProblemOf(FirstCall(Conv(16, 24, 3), "nn.conv2d", &holder));
  const Conv2DImplementation& chosen = *ChooseConv2D(direct, kernels::kAvx2Config);
  // Plain data with 16 channels is blocked first; with 3 (an image), read plain.
  EXPECT_EQ(chosen.layouts(direct, kernels::kAvx2Config, 0), (Conv2DLayouts{"NCHW16c", "OIHW16i8o", "NCHW8c"}));
  Conv2DProblem image = Conv2DProblemOf(FirstCall(Conv(3, 24, 3), "nn.conv2d", &holder));
  EXPECT_EQ(ChooseConv2D(image, kernels::kAvx2Config)->layouts(image, kernels::kAvx2Config, 0),
            (Conv2DLayouts{"NCHW", "OIHW1i8o", "NCHW8c"}));
  EXPECT_EQ(chosen.layouts(direct, kernels::kAvx2Config, 16), (Conv2DLayouts{"NCHW16c", "OIHW16i8o", "NCHW8c"}));
  Conv2DProblem depthwise = Conv2DProblemOf(FirstCall(Conv(32, 32, 3, "groups=32"), "nn.conv2d", &holder));
  EXPECT_EQ(ChooseConv2D(depthwise, kernels::kAvx2Config)->layouts(depthwise, kernels::kAvx2Config, 8),
            (Conv2DLayouts{"NCHW16c", "OIHW1i16o", "NCHW16c"}));  // its own block, whatever comes
  EXPECT_EQ(ChooseConv2D(depthwise, kernels::kBaselineConfig)->layouts(depthwise, kernels::kBaselineConfig, 0),
            (Conv2DLayouts{"NCHW8c", "OIHW1i8o", "NCHW8c"}));
  // Grouped, 8 channels per group: blocks of 8 on both sides, the producer's 16 not taken.
  Conv2DProblem grouped = Conv2DProblemOf(FirstCall(Conv(32, 32, 3, "groups=4"), "nn.conv2d", &holder));
  EXPECT_EQ(ChooseConv2D(grouped, kernels::kAvx2Config)->layouts(grouped, kernels::kAvx2Config, 16),
            (Conv2DLayouts{"NCHW8c", "OIHW8i8o", "NCHW8c"}));
  // 18 input channels per group take no block: the data stays NCHW.
  Conv2DProblem wide = Conv2DProblemOf(FirstCall(Conv(36, 32, 3, "groups=2"), "nn.conv2d", &holder));
  EXPECT_EQ(ChooseConv2D(wide, kernels::kAvx2Config)->layouts(wide, kernels::kAvx2Config, 16),
            (Conv2DLayouts{"NCHW", "OIHW1i16o", "NCHW16c"}));
}

// Lowering: the named implementation, or the first whose kernel computes the layouts.
TEST(Conv2DStrategy, LoweringFindsTheImplementationOfACallAsLaidOut) {
  ir::Expr holder;
  auto of = [&](const std::string& text) { return std::string(Conv2DImplementationOf(FirstCall(text, "nn.conv2d", &holder)).name); };
  const std::string blocked = R"(fn (%x: Tensor[(1, 2, 14, 14, 8), float32], %w: Tensor[(1, 2, 1, 1, 8, 16), float32]) {
      %0 = nn.conv2d(%x, %w, data_layout="NCHW8c", kernel_layout="OIHW8i16o", out_layout="NCHW16c"%s); %0 })";
  auto with = [&](const std::string& extra) {
    std::string text = blocked;
    return text.replace(text.find("%s"), 2, extra);
  };
  EXPECT_EQ(of(with("")), "conv2d.nchwc_1x1");
  EXPECT_EQ(of(with(", implementation=\"conv2d.nchwc_direct\"")), "conv2d.nchwc_direct");
  EXPECT_EQ(of(Conv(64, 64, 3, "groups=2")), "conv2d.nchw_im2col_gemm");  // plain layouts: no blocked kernel
  EXPECT_EQ(of(Conv(64, 64, 3, "groups=64")), "conv2d.nchw_depthwise");
  EXPECT_EQ(of(Conv(3, 32, 7, "strides=[7, 7]")), "conv2d.nchw_patches_gemm");
  try {
    of(with(", implementation=\"conv2d.nchwc_depthwise\""));
    ADD_FAILURE() << "a depthwise implementation computed a dense convolution";
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("its implementation conv2d.nchwc_depthwise does not compute it"));
  }
  try {
    of(Conv(16, 16, 3, "implementation=\"conv2d.nchwc_winograd\""));
    ADD_FAILURE() << "an nn.conv2d call was computed by the Winograd implementation";
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("it computes nn.conv2d_winograd calls, which AlterOpLayout writes"));
  }
  try {
    of(with(", implementation=\"conv2d.winograd\""));
    ADD_FAILURE() << "an unknown implementation was accepted";
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown implementation 'conv2d.winograd' (known: conv2d.nchwc_depthwise"));
  }
  try {
    of(R"(fn (%x: Tensor[(1, 2, 14, 14, 8), float32], %w: Tensor[(2, 2, 1, 1, 8, 8), float32]) {
      %0 = nn.conv2d(%x, %w, data_layout="NCHW8c", kernel_layout="OIHW8i8o", out_layout="NCHW16c"); %0 })");
    ADD_FAILURE() << "a weight packed for another output block was accepted";
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("is not supported by the host code generator"));
  }
}

// How the blocked kernel reads its input, decided with the implementation.
TEST(Conv2DStrategy, BlockedKernelParameters) {
  ir::Expr holder;
  auto params = [&](const std::string& text, const kernels::KernelConfig& config = kernels::kAvx512Config) {
    const ir::CallNode& call = FirstCall(text, "nn.conv2d", &holder);
    return Conv2DNCHWcKernelParams(call, Conv2DImplementationOf(call), config);
  };
  auto blocked = [](int64_t k, const std::string& attrs, const std::string& plane = "14, 14") {
    return "fn (%x: Tensor[(1, 1, " + plane + ", 16), float32], %w: Tensor[(1, 1, " + std::to_string(k) + ", " +
           std::to_string(k) + ", 16, 16), float32]) { %0 = nn.conv2d(%x, %w, data_layout=\"NCHW16c\", "
           "kernel_layout=\"OIHW16i16o\", out_layout=\"NCHW16c\"" + attrs + "); %0 }";
  };
  kernels::Conv2DNCHWcParams padded = params(blocked(3, ", padding=[1, 1, 1, 1]"));
  EXPECT_TRUE(padded.copy_padded);
  EXPECT_FALSE(padded.gather_strided || padded.flat_plane || padded.depthwise);
  EXPECT_EQ(padded.in_block, 16);
  EXPECT_EQ(padded.out_height, 14);
  kernels::Conv2DNCHWcParams strided = params(blocked(1, ", strides=[2, 2]"));
  EXPECT_TRUE(strided.gather_strided && strided.flat_plane);  // 7 x 7 positions after the gather
  EXPECT_FALSE(strided.copy_padded);
  kernels::Conv2DNCHWcParams large = params(blocked(1, "", "32, 32"));  // the kernel keeps its rows (32 x 32)
  EXPECT_TRUE(large.flat_plane);
  EXPECT_FALSE(large.copy_padded || large.gather_strided);
  kernels::Conv2DNCHWcParams depthwise = params(R"(fn (%x: Tensor[(1, 1, 14, 14, 16), float32], %w: Tensor[(1, 1, 3, 3, 1, 16), float32]) {
      %0 = nn.conv2d(%x, %w, groups=16, padding=[1, 1, 1, 1], data_layout="NCHW16c", kernel_layout="OIHW1i16o", out_layout="NCHW16c"); %0 })");
  EXPECT_TRUE(depthwise.depthwise);
  EXPECT_FALSE(depthwise.copy_padded);  // reads too little to repay a copy
  // Groups of one 8-channel block: with AVX-512 two to a vector, whose tiles skip the padding
  // themselves; elsewhere one each, on a copy with the padding written out.
  const std::string groups = R"(fn (%x: Tensor[(1, 4, 14, 14, 8), float32], %w: Tensor[(4, 1, 3, 3, 8, 8), float32]) {
      %0 = nn.conv2d(%x, %w, groups=4, padding=[1, 1, 1, 1], data_layout="NCHW8c", kernel_layout="OIHW8i8o", out_layout="NCHW8c"); %0 })";
  EXPECT_FALSE(params(groups).copy_padded);
  EXPECT_TRUE(params(groups, kernels::kAvx2Config).copy_padded);
}

TEST(DenseStrategy, ConstantWeightsOfWholePanelsArePacked) {
  ir::Expr holder;
  auto chosen = [&](const std::string& text) {
    const DenseImplementation* d = ChooseDense(DenseProblemOf(FirstCall(text, "nn.dense", &holder)), kernels::kAvx2Config);
    return d == nullptr ? std::string("none") : d->name + (" " + d->weight_layout(kernels::kAvx2Config));
  };
  auto constant_weight = [](int64_t n) {
    std::string zeros;
    for (int64_t i = 0; i < n * 2; ++i) zeros += i == 0 ? "0" : ", 0";
    return "fn (%x: Tensor[(3, 2), float32]) { %w = const(Tensor[(" + std::to_string(n) + ", 2), float32], [" + zeros +
           "]); %0 = nn.dense(%x, %w); %0 }";
  };
  EXPECT_EQ(chosen(constant_weight(32)), "dense.gemm_packed NK16n");
  EXPECT_EQ(chosen(constant_weight(24)), "dense.gemm NK");
  EXPECT_EQ(chosen(R"(fn (%x: Tensor[(3, 2), float32], %w: Tensor[(32, 2), float32]) {
      %0 = nn.dense(%x, %w); %0 })"), "dense.gemm NK");  // packing would cost every run
  auto of = [&](const std::string& layout, const std::string& shape) {
    return std::string(DenseImplementationOf(FirstCall("fn (%x: Tensor[(3, 2), float32], %w: Tensor[(" + shape +
                                                           "), float32]) { %0 = nn.dense(%x, %w, weight_layout=\"" +
                                                           layout + "\"); %0 }",
                                                       "nn.dense", &holder)).name);
  };
  EXPECT_EQ(of("NK16n", "2, 2, 16"), "dense.gemm_packed");
  EXPECT_EQ(of("NK", "32, 2"), "dense.gemm");
  try {
    of("NK8n", "4, 2, 8");
    ADD_FAILURE() << "an unknown weight layout was accepted";
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("nn.dense with weight layout NK8n"));
  }
}

}  // namespace
}  // namespace kiln::strategy
