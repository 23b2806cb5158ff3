// AlterOpLayout: IR text before and the expected IR text after — implementations chosen and named,
// blocked convolution chains with
// transforms only at the borders, layout-aware consumers, constants (dense weights too) packed at build time,
// transform pairs cancelled — and where it must not fire (opt level below 3, channels that fit
// no block, grouped convolutions, graphs without convolutions, block 0), and its errors.
#include "transform/alter_op_layout.h"

#include <gmock/gmock.h>

#include <cstring>
#include <sstream>

#include "pass_test_util.h"
#include "runtime/error.h"
#include "strategy/conv2d.h"
#include "transform/pipeline.h"

namespace kiln::transform {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

void ExpectAltered(const std::string& before, const std::string& expected, int64_t block = 16) {
  AlterOpLayoutOptions options;
  options.block = block;
  ir::Expr actual = AlterOpLayout(ir::ParseFunction(before), options);
  ir::Expr want = ir::ParseFunction(expected);
  EXPECT_TRUE(ir::StructurallyEqual(actual, want)) << "got:\n" << ir::PrintFunction(actual) << "expected:\n"
                                                   << ir::PrintFunction(want);
}

void ExpectUnchanged(const std::string& text, int64_t block = 16) { ExpectAltered(text, text, block); }

// `text` with its "%s" replaced by `attrs`.
std::string With(std::string text, const std::string& attrs) { return text.replace(text.find("%s"), 2, attrs); }

// The first convolution reads the 3-channel input as it is (NCHW, weights OIHW1i16o); bias,
// relu, the second convolution, the residual add and relu stay in NCHW16c; one transform brings
// the result back.
TEST(AlterOpLayout, ConvChainIsBlockedWithTransformsOnlyAtTheBorders) {
  ExpectAltered(R"(fn (%x: Tensor[(1, 3, 8, 8), float32], %w1: Tensor[(16, 3, 3, 3), float32], %b: Tensor[(16), float32], %w2: Tensor[(16, 16, 1, 1), float32]) {
    %0 = nn.conv2d(%x, %w1, padding=[1, 1, 1, 1]);
    %1 = nn.bias_add(%0, %b);
    %2 = nn.relu(%1);
    %3 = nn.conv2d(%2, %w2);
    %4 = add(%3, %2);
    %5 = nn.relu(%4);
    %5
  })",
                R"(fn (%x: Tensor[(1, 3, 8, 8), float32], %w1: Tensor[(16, 3, 3, 3), float32], %b: Tensor[(16), float32], %w2: Tensor[(16, 16, 1, 1), float32]) {
    %p1 = layout_transform(%w1, src_layout="OIHW", dst_layout="OIHW1i16o");
    %0 = nn.conv2d(%x, %p1, padding=[1, 1, 1, 1], kernel_layout="OIHW1i16o", out_layout="NCHW16c", implementation="conv2d.nchwc_direct");
    %b4 = reshape(%b, newshape=[1, 16, 1, 1]);
    %b5 = reshape(%b4, newshape=[1, 1, 1, 1, 16]);
    %1 = add(%0, %b5);
    %2 = nn.relu(%1);
    %p2 = layout_transform(%w2, src_layout="OIHW", dst_layout="OIHW16i16o");
    %3 = nn.conv2d(%2, %p2, data_layout="NCHW16c", kernel_layout="OIHW16i16o", out_layout="NCHW16c", implementation="conv2d.nchwc_1x1");
    %4 = add(%3, %2);
    %5 = nn.relu(%4);
    %6 = layout_transform(%5, src_layout="NCHW16c", dst_layout="NCHW");
    %6
  })");
}

// Weights and per-channel constants are transformed now: OIHW [8, 2, 1, 1] with values 0..15
// packed as OIHW1i8o holds w[o][i] at [i][o]; the bias becomes [1, 1, 1, 1, 8].
TEST(AlterOpLayout, ConstantsArePackedAtBuildTime) {
  ExpectAltered(R"(fn (%x: Tensor[(1, 2, 1, 2), float32]) {
    %w = const(Tensor[(8, 2, 1, 1), float32], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
    %b = const(Tensor[(8, 1, 1), float32], [1, 2, 3, 4, 5, 6, 7, 8]);
    %0 = nn.conv2d(%x, %w);
    %1 = add(%0, %b);
    %1
  })",
                R"(fn (%x: Tensor[(1, 2, 1, 2), float32]) {
    %w = const(Tensor[(1, 2, 1, 1, 1, 8), float32], [0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15]);
    %b = const(Tensor[(1, 1, 1, 1, 8), float32], [1, 2, 3, 4, 5, 6, 7, 8]);
    %0 = nn.conv2d(%x, %w, kernel_layout="OIHW1i8o", out_layout="NCHW8c", implementation="conv2d.nchwc_1x1");
    %1 = add(%0, %b);
    %2 = layout_transform(%1, src_layout="NCHW8c", dst_layout="NCHW");
    %2
  })",
                8);
}

// A 3x3 stride-1 convolution with a constant weight on an 8x8 plane becomes nn.conv2d_winograd:
// the data blocked, the weight put in Winograd's domain now ([36, O / ob, C / ib, ib, ob], as
// strategy::WinogradWeightOf writes it, whose values strategy_test checks), the output brought
// back to NCHW. A weight that is a parameter keeps the direct convolution.
TEST(AlterOpLayout, Constant3x3WeightsAreTransformedForWinograd) {
  std::string values;
  for (int i = 0; i < 8 * 16 * 9; ++i) values += (i == 0 ? "" : ", ") + std::to_string(i % 7 - 3);
  ir::Expr before = ir::ParseFunction(R"(fn (%x: Tensor[(1, 16, 8, 8), float32]) {
    %w = const(Tensor[(8, 16, 3, 3), float32], [)" + values + R"(]);
    %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
    %1 = nn.relu(%0);
    %1
  })");
  AlterOpLayoutOptions options;
  options.block = 8;
  ir::Expr after = AlterOpLayout(before, options);
  const ir::CallNode* winograd = nullptr;
  for (const ir::Expr& e : ir::PostOrder(after.get()->As<ir::FunctionNode>()->body)) {
    const auto* call = e->As<ir::CallNode>();
    ASSERT_FALSE(call != nullptr && call->op->name == "nn.conv2d") << ir::PrintFunction(after);
    if (call != nullptr && call->op->name == "nn.conv2d_winograd") winograd = call;
  }
  ASSERT_NE(winograd, nullptr) << ir::PrintFunction(after);
  EXPECT_EQ(winograd->attrs.GetInts("padding"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(winograd->attrs.GetString("data_layout"), "NCHW8c");
  EXPECT_EQ(winograd->attrs.GetString("out_layout"), "NCHW8c");
  EXPECT_EQ(winograd->args[0]->type().tensor().shape, (std::vector<int64_t>{1, 2, 8, 8, 8}));
  const auto* weight = winograd->args[1]->As<ir::ConstantNode>();
  ASSERT_NE(weight, nullptr);
  const ir::ConstantNode* original = nullptr;
  for (const ir::Expr& e : ir::PostOrder(before.get()->As<ir::FunctionNode>()->body)) {
    if (e->As<ir::ConstantNode>() != nullptr) original = e->As<ir::ConstantNode>();
  }
  ASSERT_NE(original, nullptr);
  runtime::NDArray want = strategy::WinogradWeightOf(original->value, 8, 8);
  ASSERT_EQ(weight->value.shape(), (std::vector<int64_t>{36, 1, 2, 8, 8}));
  EXPECT_EQ(std::memcmp(weight->value.data(), want.data(), want.NumBytes()), 0);
  EXPECT_THAT(ir::PrintFunction(after), HasSubstr("%3 = nn.relu(%2);\n  %4 = layout_transform(%3, dst_layout=\"NCHW\", src_layout=\"NCHW8c\")"));
  // With the weight a parameter there is nothing to transform at build time.
  ExpectAltered(R"(fn (%x: Tensor[(1, 16, 8, 8), float32], %w: Tensor[(8, 16, 3, 3), float32]) {
    %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
    %0
  })",
                R"(fn (%x: Tensor[(1, 16, 8, 8), float32], %w: Tensor[(8, 16, 3, 3), float32]) {
    %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW8c");
    %1 = layout_transform(%w, src_layout="OIHW", dst_layout="OIHW8i8o");
    %2 = nn.conv2d(%0, %1, padding=[1, 1, 1, 1], data_layout="NCHW8c", kernel_layout="OIHW8i8o", out_layout="NCHW8c", implementation="conv2d.nchwc_direct");
    %3 = layout_transform(%2, src_layout="NCHW8c", dst_layout="NCHW");
    %3
  })",
                8);
}

// A constant dense weight [N, K] = [16, 2] with values 0..31 (w[n][k] = 2n + k) is packed as
// NK16n [1, 2, 16], w[n][k] at [0][k][n]: first the 16 values of k = 0, then those of k = 1.
TEST(AlterOpLayout, ConstantDenseWeightsArePackedAtBuildTime) {
  ExpectAltered(R"(fn (%x: Tensor[(3, 2), float32]) {
    %w = const(Tensor[(16, 2), float32], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]);
    %0 = nn.dense(%x, %w);
    %1 = nn.relu(%0);
    %1
  })",
                R"(fn (%x: Tensor[(3, 2), float32]) {
    %w = const(Tensor[(1, 2, 16), float32], [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31]);
    %0 = nn.dense(%x, %w, weight_layout="NK16n", implementation="dense.gemm_packed");
    %1 = nn.relu(%0);
    %1
  })");
}

// 24 output channels fit no block of 16 but one of 8 (the 16 input channels are blocked first);
// the depthwise convolution, max pooling,
// global pooling and a mean over H and W follow the input's block; the flatten gets the plain
// tensor, which for H = W = 1 is a reshape.
TEST(AlterOpLayout, DepthwisePoolingAndReductionsFollowTheBlock) {
  ExpectAltered(R"(fn (%x: Tensor[(1, 16, 6, 6), float32], %w: Tensor[(24, 16, 1, 1), float32], %d: Tensor[(24, 1, 3, 3), float32]) {
    %0 = nn.conv2d(%x, %w);
    %1 = nn.conv2d(%0, %d, groups=24, padding=[1, 1, 1, 1]);
    %2 = nn.max_pool2d(%1, pool_size=[2, 2], strides=[2, 2]);
    %3 = mean(%2, axis=[-1, -2], keepdims=1);
    %4 = nn.global_avg_pool2d(%2);
    %5 = add(%3, %4);
    %6 = reshape(%5, newshape=[1, 24]);
    %6
  })",
                R"(fn (%x: Tensor[(1, 16, 6, 6), float32], %w: Tensor[(24, 16, 1, 1), float32], %d: Tensor[(24, 1, 3, 3), float32]) {
    %x16 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c");
    %pw = layout_transform(%w, src_layout="OIHW", dst_layout="OIHW16i8o");
    %0 = nn.conv2d(%x16, %pw, data_layout="NCHW16c", kernel_layout="OIHW16i8o", out_layout="NCHW8c", implementation="conv2d.nchwc_1x1");
    %pd = layout_transform(%d, src_layout="OIHW", dst_layout="OIHW1i8o");
    %1 = nn.conv2d(%0, %pd, groups=24, padding=[1, 1, 1, 1], data_layout="NCHW8c", kernel_layout="OIHW1i8o", out_layout="NCHW8c", implementation="conv2d.nchwc_depthwise");
    %2 = nn.max_pool2d(%1, pool_size=[2, 2], strides=[2, 2], layout="NCHW8c");
    %3 = mean(%2, axis=[2, 3], keepdims=1);
    %4 = nn.global_avg_pool2d(%2, layout="NCHW8c");
    %5 = add(%3, %4);
    %6 = reshape(%5, newshape=[1, 24, 1, 1]);
    %7 = reshape(%6, newshape=[1, 24]);
    %7
  })");
}

// A resize of H and W only follows the block: the same taps of [N, C / b, H, W, b], its kept axes
// of scale 1. One whose coordinate mapping moves a kept coordinate (tf_half_pixel_for_nn: x + 0.5)
// gets the plain tensor.
TEST(AlterOpLayout, ResizingHeightAndWidthFollowsTheBlock) {
  ExpectAltered(R"(fn (%x: Tensor[(1, 16, 3, 3), float32], %w: Tensor[(16, 16, 1, 1), float32]) {
    %0 = nn.conv2d(%x, %w);
    %1 = image.resize(%0, size=[1, 16, 6, 5], scales=[1.0, 1.0, 2.0, 1.5], method="linear", coordinate_transformation_mode="half_pixel");
    %2 = image.resize(%0, size=[1, 16, 6, 6], scales=[1.0, 1.0, 2.0, 2.0], coordinate_transformation_mode="tf_half_pixel_for_nn");
    (%1, %2)
  })",
                R"(fn (%x: Tensor[(1, 16, 3, 3), float32], %w: Tensor[(16, 16, 1, 1), float32]) {
    %x16 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c");
    %p = layout_transform(%w, src_layout="OIHW", dst_layout="OIHW16i16o");
    %0 = nn.conv2d(%x16, %p, data_layout="NCHW16c", kernel_layout="OIHW16i16o", out_layout="NCHW16c", implementation="conv2d.nchwc_1x1");
    %1 = image.resize(%0, size=[1, 1, 6, 5, 16], scales=[1.0, 1.0, 2.0, 1.5, 1.0], method="linear", coordinate_transformation_mode="half_pixel");
    %2 = layout_transform(%1, src_layout="NCHW16c", dst_layout="NCHW");
    %3 = layout_transform(%0, src_layout="NCHW16c", dst_layout="NCHW");
    %4 = image.resize(%3, size=[1, 16, 6, 6], scales=[1.0, 1.0, 2.0, 2.0], coordinate_transformation_mode="tf_half_pixel_for_nn");
    (%2, %4)
  })");
}

// Groups of 8 channels: the data in blocks of 8 (a group is one block), the weight packed
// per group as OIHW8i8o of [O, C / groups, KH, KW].
TEST(AlterOpLayout, GroupedConvolutionsOfWholeBlocks) {
  ExpectAltered(R"(fn (%x: Tensor[(1, 32, 4, 4), float32], %w: Tensor[(32, 8, 3, 3), float32]) {
    %0 = nn.conv2d(%x, %w, groups=4); %0
  })",
                R"(fn (%x: Tensor[(1, 32, 4, 4), float32], %w: Tensor[(32, 8, 3, 3), float32]) {
    %x8 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW8c");
    %p = layout_transform(%w, src_layout="OIHW", dst_layout="OIHW8i8o");
    %0 = nn.conv2d(%x8, %p, groups=4, data_layout="NCHW8c", kernel_layout="OIHW8i8o", out_layout="NCHW8c", implementation="conv2d.nchwc_grouped");
    %1 = layout_transform(%0, src_layout="NCHW8c", dst_layout="NCHW");
    %1
  })");
}

// A 1x1 convolution whose result (through bias and relu) only a grouped convolution of 8-channel
// groups reads makes blocks of 8 (and blocks its plain input in 8), which that one reads, where it
// would make 16 for itself (RegNet's blocks); a convolution whose result another consumer also
// reads keeps 16.
TEST(AlterOpLayout, ConvolutionsMakeTheBlockTheirGroupedConsumerWants) {
  ExpectAltered(R"(fn (%x: Tensor[(1, 16, 4, 4), float32], %w: Tensor[(32, 16, 1, 1), float32], %b: Tensor[(32), float32], %g: Tensor[(32, 8, 3, 3), float32]) {
    %0 = nn.conv2d(%x, %w);
    %1 = nn.bias_add(%0, %b);
    %2 = nn.relu(%1);
    %3 = nn.conv2d(%2, %g, groups=4, padding=[1, 1, 1, 1]);
    %3
  })",
                R"(fn (%x: Tensor[(1, 16, 4, 4), float32], %w: Tensor[(32, 16, 1, 1), float32], %b: Tensor[(32), float32], %g: Tensor[(32, 8, 3, 3), float32]) {
    %x8 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW8c");
    %pw = layout_transform(%w, src_layout="OIHW", dst_layout="OIHW8i8o");
    %0 = nn.conv2d(%x8, %pw, data_layout="NCHW8c", kernel_layout="OIHW8i8o", out_layout="NCHW8c", implementation="conv2d.nchwc_1x1");
    %b4 = reshape(%b, newshape=[1, 32, 1, 1]);
    %b5 = reshape(%b4, newshape=[1, 4, 1, 1, 8]);
    %1 = add(%0, %b5);
    %2 = nn.relu(%1);
    %pg = layout_transform(%g, src_layout="OIHW", dst_layout="OIHW8i8o");
    %3 = nn.conv2d(%2, %pg, groups=4, padding=[1, 1, 1, 1], data_layout="NCHW8c", kernel_layout="OIHW8i8o", out_layout="NCHW8c", implementation="conv2d.nchwc_grouped");
    %4 = layout_transform(%3, src_layout="NCHW8c", dst_layout="NCHW");
    %4
  })");
  ExpectAltered(R"(fn (%x: Tensor[(1, 16, 4, 4), float32], %w: Tensor[(32, 16, 1, 1), float32], %g: Tensor[(32, 8, 3, 3), float32]) {
    %0 = nn.conv2d(%x, %w);
    %1 = nn.conv2d(%0, %g, groups=4, padding=[1, 1, 1, 1]);
    (%0, %1)
  })",
                R"(fn (%x: Tensor[(1, 16, 4, 4), float32], %w: Tensor[(32, 16, 1, 1), float32], %g: Tensor[(32, 8, 3, 3), float32]) {
    %x16 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c");
    %pw = layout_transform(%w, src_layout="OIHW", dst_layout="OIHW16i16o");
    %0 = nn.conv2d(%x16, %pw, data_layout="NCHW16c", kernel_layout="OIHW16i16o", out_layout="NCHW16c", implementation="conv2d.nchwc_1x1");
    %plain = layout_transform(%0, src_layout="NCHW16c", dst_layout="NCHW");
    %8 = layout_transform(%0, src_layout="NCHW16c", dst_layout="NCHW8c");
    %pg = layout_transform(%g, src_layout="OIHW", dst_layout="OIHW8i8o");
    %1 = nn.conv2d(%8, %pg, groups=4, padding=[1, 1, 1, 1], data_layout="NCHW8c", kernel_layout="OIHW8i8o", out_layout="NCHW8c", implementation="conv2d.nchwc_grouped");
    %2 = layout_transform(%1, src_layout="NCHW8c", dst_layout="NCHW");
    (%plain, %2)
  })");
}

// Arithmetic on two blocked operands of different blocks computes in the larger one's block: a
// squeeze-and-excitation scale [1, C, 1, 1] in blocks of 16 times a feature map in blocks of 8
// reshapes the scale, not the map.
TEST(AlterOpLayout, MixedBlocksComputeInTheLargerOperandsBlock) {
  ExpectAltered(R"(fn (%x: Tensor[(1, 32, 4, 4), float32], %g: Tensor[(32, 8, 3, 3), float32], %s: Tensor[(1, 16, 1, 1), float32], %e: Tensor[(32, 16, 1, 1), float32]) {
    %0 = nn.conv2d(%x, %g, groups=4, padding=[1, 1, 1, 1]);
    %1 = nn.conv2d(%s, %e);
    %2 = sigmoid(%1);
    %3 = multiply(%2, %0);
    %3
  })",
                R"(fn (%x: Tensor[(1, 32, 4, 4), float32], %g: Tensor[(32, 8, 3, 3), float32], %s: Tensor[(1, 16, 1, 1), float32], %e: Tensor[(32, 16, 1, 1), float32]) {
    %x8 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW8c");
    %pg = layout_transform(%g, src_layout="OIHW", dst_layout="OIHW8i8o");
    %0 = nn.conv2d(%x8, %pg, groups=4, padding=[1, 1, 1, 1], data_layout="NCHW8c", kernel_layout="OIHW8i8o", out_layout="NCHW8c", implementation="conv2d.nchwc_grouped");
    %s5 = reshape(%s, newshape=[1, 1, 1, 1, 16]);
    %pe = layout_transform(%e, src_layout="OIHW", dst_layout="OIHW16i16o");
    %1 = nn.conv2d(%s5, %pe, data_layout="NCHW16c", kernel_layout="OIHW16i16o", out_layout="NCHW16c", implementation="conv2d.nchwc_1x1");
    %2 = sigmoid(%1);
    %28 = reshape(%2, newshape=[1, 4, 1, 1, 8]);
    %3 = multiply(%28, %0);
    %4 = layout_transform(%3, src_layout="NCHW8c", dst_layout="NCHW");
    %4
  })");
}

// The other operand of broadcasting arithmetic: a scalar stays, a spatial map is reshaped to
// [N, 1, H, W, 1], a per-channel [C, 1, 1] is transformed, and a plain activation is transformed
// at the border (once, shared with the convolution that reads it). A blocked value read by a plain op (softmax) is transformed back once, shared.
TEST(AlterOpLayout, BroadcastOperandsAndSharedBorderTransforms) {
  ExpectAltered(R"(fn (%x: Tensor[(1, 16, 2, 2), float32], %w: Tensor[(16, 16, 1, 1), float32], %s: Tensor[(1, 1, 2, 2), float32], %c: Tensor[(16, 1, 1), float32]) {
    %k = const(Tensor[(), float32], [2]);
    %0 = nn.conv2d(%x, %w);
    %1 = multiply(%0, %k);
    %2 = add(%1, %s);
    %3 = subtract(%c, %2);
    %4 = maximum(%3, %x);
    %5 = nn.softmax(%4, axis=1);
    %6 = nn.softmax(%4, axis=2);
    (%5, %6)
  })",
                R"(fn (%x: Tensor[(1, 16, 2, 2), float32], %w: Tensor[(16, 16, 1, 1), float32], %s: Tensor[(1, 1, 2, 2), float32], %c: Tensor[(16, 1, 1), float32]) {
    %k = const(Tensor[(), float32], [2]);
    %x5 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c");
    %pw = layout_transform(%w, src_layout="OIHW", dst_layout="OIHW16i16o");
    %0 = nn.conv2d(%x5, %pw, data_layout="NCHW16c", kernel_layout="OIHW16i16o", out_layout="NCHW16c", implementation="conv2d.nchwc_1x1");
    %1 = multiply(%0, %k);
    %s5 = reshape(%s, newshape=[1, 1, 2, 2, 1]);
    %2 = add(%1, %s5);
    %c4 = reshape(%c, newshape=[1, 16, 1, 1]);
    %c5 = reshape(%c4, newshape=[1, 1, 1, 1, 16]);
    %3 = subtract(%c5, %2);
    %4 = maximum(%3, %x5);
    %plain = layout_transform(%4, src_layout="NCHW16c", dst_layout="NCHW");
    %5 = nn.softmax(%plain, axis=1);
    %6 = nn.softmax(%plain, axis=2);
    (%5, %6)
  })");
}

// Channel concatenation stays blocked when every input's channels divide by the block.
TEST(AlterOpLayout, ConcatenateOnChannels) {
  ExpectAltered(R"(fn (%x: Tensor[(1, 8, 3, 3), float32], %w: Tensor[(16, 8, 1, 1), float32], %v: Tensor[(16, 8, 3, 3), float32]) {
    %0 = nn.conv2d(%x, %w);
    %1 = nn.conv2d(%x, %v, padding=[1, 1, 1, 1]);
    %2 = concatenate(%0, %1, axis=-3);
    %2
  })",
                R"(fn (%x: Tensor[(1, 8, 3, 3), float32], %w: Tensor[(16, 8, 1, 1), float32], %v: Tensor[(16, 8, 3, 3), float32]) {
    %pw = layout_transform(%w, src_layout="OIHW", dst_layout="OIHW1i16o");
    %0 = nn.conv2d(%x, %pw, kernel_layout="OIHW1i16o", out_layout="NCHW16c", implementation="conv2d.nchwc_1x1");
    %pv = layout_transform(%v, src_layout="OIHW", dst_layout="OIHW1i16o");
    %1 = nn.conv2d(%x, %pv, padding=[1, 1, 1, 1], kernel_layout="OIHW1i16o", out_layout="NCHW16c", implementation="conv2d.nchwc_direct");
    %2 = concatenate(%0, %1, axis=1);
    %3 = layout_transform(%2, src_layout="NCHW16c", dst_layout="NCHW");
    %3
  })");
}

// Transforms already in the IR compose with those the pass makes; a pair that meets its
// inverse cancels.
TEST(AlterOpLayout, TransformPairsCancelAndCompose) {
  ExpectAltered(R"(fn (%x: Tensor[(1, 16, 2, 2), float32]) {
    %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c");
    %1 = layout_transform(%0, src_layout="NCHW16c", dst_layout="NCHW");
    %2 = nn.relu(%1);
    %3 = layout_transform(%2, src_layout="NCHW", dst_layout="NCHW16c");
    %4 = layout_transform(%3, src_layout="NCHW16c", dst_layout="NCHW8c");
    %4
  })",
                R"(fn (%x: Tensor[(1, 16, 2, 2), float32]) {
    %0 = nn.relu(%x);
    %1 = layout_transform(%0, src_layout="NCHW", dst_layout="NCHW8c");
    %1
  })");
}

TEST(AlterOpLayout, GroupsOfTwoOrFourChannelsRunInsideBlocks) {
  // ResNeXt 32x4d's grouped layers: each group's channels inside one block of the data, and the
  // weight [O / 16, 2, KH, KW, 1, 16].
  ExpectAltered(R"(fn (%x: Tensor[(1, 32, 4, 4), float32], %w: Tensor[(32, 2, 3, 3), float32]) {
    %0 = nn.conv2d(%x, %w, groups=16); %0
  })",
                R"(fn (%x: Tensor[(1, 32, 4, 4), float32], %w: Tensor[(32, 2, 3, 3), float32]) {
    %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c");
    %1 = layout_transform(%w, src_layout="OIHW", dst_layout="OIHW1i16o");
    %2 = nn.conv2d(%0, %1, groups=16, data_layout="NCHW16c", kernel_layout="OIHW1i16o", out_layout="NCHW16c",
                   implementation="conv2d.nchwc_small_groups");
    %3 = layout_transform(%2, src_layout="NCHW16c", dst_layout="NCHW"); %3
  })");
}

TEST(AlterOpLayout, DoesNotFireWhereItShouldNot) {
  // Output channels that fit no block (12 with blocks 16 and 8), and so their consumers neither:
  // the NCHW implementation is chosen.
  const char* unblocked = R"(fn (%x: Tensor[(1, 16, 4, 4), float32], %w: Tensor[(12, 16, 3, 3), float32]) {
    %0 = nn.conv2d(%x, %w%s); %1 = nn.relu(%0); %2 = nn.max_pool2d(%1, pool_size=[2, 2]); %2
  })";
  ExpectAltered(With(unblocked, ""), With(unblocked, ", implementation=\"conv2d.nchw_im2col_gemm\""));
  // A grouped convolution whose groups have 3 channels: no block fits them, nor do they lie
  // inside one.
  const char* grouped = R"(fn (%x: Tensor[(1, 24, 4, 4), float32], %w: Tensor[(24, 3, 3, 3), float32]) {
    %0 = nn.conv2d(%x, %w, groups=8%s); %0
  })";
  ExpectAltered(With(grouped, ""), With(grouped, ", implementation=\"conv2d.nchw_im2col_gemm\""));
  // A dense layer whose weight is not a constant, and a constant weight whose N (8) is not a
  // multiple of the panel (16): not packed.
  const char* dense = R"(fn (%x: Tensor[(2, 16), float32], %w: Tensor[(32, 16), float32]) {
    %0 = nn.dense(%x, %w%s); %1 = nn.relu(%0); %1
  })";
  ExpectAltered(With(dense, ""), With(dense, ", implementation=\"dense.gemm\""));
  const char* narrow = R"(fn (%x: Tensor[(2, 1), float32]) {
    %w = const(Tensor[(8, 1), float32], [0, 1, 2, 3, 4, 5, 6, 7]);
    %0 = nn.dense(%x, %w%s); %0
  })";
  ExpectAltered(With(narrow, ""), With(narrow, ", implementation=\"dense.gemm\""));
  // No convolutions.
  ExpectUnchanged(R"(fn (%x: Tensor[(1, 16, 4, 4), float32]) {
    %0 = nn.max_pool2d(%x, pool_size=[2, 2]); %1 = add(%0, %0); %1
  })");
  // Not float32.
  ExpectUnchanged(R"(fn (%x: Tensor[(1, 16, 4, 4), float64], %w: Tensor[(16, 16, 1, 1), float64]) {
    %0 = nn.conv2d(%x, %w); %0
  })");
  // Block 0: off.
  ExpectUnchanged(R"(fn (%x: Tensor[(1, 16, 4, 4), float32], %w: Tensor[(16, 16, 1, 1), float32]) {
    %0 = nn.conv2d(%x, %w); %0
  })",
                  0);
}

TEST(AlterOpLayout, RunsAtOptLevelThreeOnly) {
  const char* model = R"(fn (%x: Tensor[(1, 3, 8, 8), float32]) {
    %w = const(Tensor[(16, 3, 1, 1), float32], [0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
    %0 = nn.conv2d(%x, %w);
    %1 = nn.relu(%0);
    %1
  })";
  const target::Target avx2 = target::TargetFor("x86-64-v3", target::Isa::kAvx2);
  for (int level : {2, 3}) {
    PassContext context;
    context.opt_level = level;
    context.print_ir_after = {"AlterOpLayout"};
    std::ostringstream log;
    RunPipeline(ir::ParseFunction(model), PassEnvironment{context, avx2}, log);
    if (level == 3) {
      EXPECT_THAT(log.str(), HasSubstr("out_layout=\"NCHW16c\""));
      EXPECT_THAT(log.str(), HasSubstr("layout_transform("));
    } else {
      EXPECT_EQ(log.str(), "");
    }
  }
  PassContext off;
  off.SetConfig("kiln.AlterOpLayout.block", "0");
  off.print_ir_after = {"AlterOpLayout"};
  std::ostringstream log;
  RunPipeline(ir::ParseFunction(model), PassEnvironment{off}, log);
  EXPECT_THAT(log.str(), Not(HasSubstr("layout_transform(")));
}

// The block is the target's choice unless the config names one.
TEST(AlterOpLayout, TheTargetChoosesTheBlock) {
  const char* model = R"(fn (%x: Tensor[(1, 3, 8, 8), float32]) {
    %w = const(Tensor[(16, 3, 1, 1), float32], [0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
    %0 = nn.conv2d(%x, %w);
    %0
  })";
  auto layout_for = [&](const target::Target& t, const char* block) {
    PassContext context;
    if (block != nullptr) context.SetConfig("kiln.AlterOpLayout.block", block);
    return ir::PrintFunction(AlterOpLayout(ir::ParseFunction(model), PassEnvironment{context, t}));
  };
  const target::Target baseline = target::TargetFor("x86-64", target::Isa::kBaseline);
  const target::Target avx512 = target::TargetFor("x86-64-v4", target::Isa::kAvx512);
  EXPECT_THAT(layout_for(baseline, nullptr), HasSubstr("out_layout=\"NCHW8c\""));
  EXPECT_THAT(layout_for(avx512, nullptr), HasSubstr("out_layout=\"NCHW16c\""));
  EXPECT_THAT(layout_for(baseline, "16"), HasSubstr("out_layout=\"NCHW16c\""));
  EXPECT_THAT(layout_for(avx512, "8"), HasSubstr("out_layout=\"NCHW8c\""));
}

TEST(AlterOpLayout, BlocksOtherThanEightAndSixteenAreErrors) {
  PassContext context;
  context.SetConfig("kiln.AlterOpLayout.block", "4");
  try {
    AlterOpLayout(ir::ParseFunction("fn (%x: Tensor[(4), float32]) { %0 = nn.relu(%x); %0 }"), PassEnvironment{context});
    FAIL() << "no error";
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("the channel block must be 8 or 16 (0 disables the pass), got 4"));
  }
}

// An external function takes its arguments as they were (NCHW) and its body is not rewritten.
TEST(AlterOpLayout, ExternalFunctionsGetPlainTensors) {
  ExpectAltered(R"(fn (%x: Tensor[(1, 3, 4, 4), float32], %w: Tensor[(16, 3, 1, 1), float32]) {
    %0 = nn.conv2d(%x, %w);
    %e = fn [Compiler="dnnl", global_symbol="ext0", Primitive=1] (%a: Tensor[(1, 16, 4, 4), float32], %b: Tensor[(16, 3, 1, 1), float32]) {
      %0 = nn.relu(%a);
      %0
    };
    %1 = nn.relu(%0);
    %2 = %e(%1, %w);
    %2
  })",
                R"(fn (%x: Tensor[(1, 3, 4, 4), float32], %w: Tensor[(16, 3, 1, 1), float32]) {
    %0 = layout_transform(%w, src_layout="OIHW", dst_layout="OIHW1i16o");
    %1 = nn.conv2d(%x, %0, data_layout="NCHW", kernel_layout="OIHW1i16o", out_layout="NCHW16c", implementation="conv2d.nchwc_1x1");
    %2 = nn.relu(%1);
    %3 = layout_transform(%2, src_layout="NCHW16c", dst_layout="NCHW");
    %e = fn [Compiler="dnnl", global_symbol="ext0", Primitive=1] (%a: Tensor[(1, 16, 4, 4), float32], %b: Tensor[(16, 3, 1, 1), float32]) {
      %0 = nn.relu(%a);
      %0
    };
    %4 = %e(%3, %w);
    %4
  })");
}

}  // namespace
}  // namespace kiln::transform
