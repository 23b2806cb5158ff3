// Layouts (ir/layout.h): parsing and its errors, primal and blocked shapes, moving data between
// layouts; the type inference of layout_transform and of the blocked forms of conv2d and
// pooling; the IR text round trip of a blocked function.
#include "ir/layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "ir/expr.h"
#include "ir/text.h"
#include "runtime/error.h"

namespace kiln::ir {
namespace {

using ::testing::HasSubstr;
using Ints = std::vector<int64_t>;

std::string ParseError(const std::string& text) {
  try {
    Layout::Parse(text);
  } catch (const runtime::Error& e) {
    return e.what();
  }
  return "(no error)";
}

Expr In(Ints shape) { return Var("x", Type::Tensor(std::move(shape), runtime::kFloat32)); }

Attrs A(std::initializer_list<std::pair<const char*, AttrValue>> items) {
  Attrs attrs;
  for (const auto& [k, v] : items) attrs.Set(k, v);
  return attrs;
}

std::string TypeOf(const std::string& op, std::vector<Expr> args, Attrs attrs) {
  return Call(op, std::move(args), std::move(attrs))->type().ToString();
}

std::string ErrorOf(const std::string& op, std::vector<Expr> args, Attrs attrs) {
  try {
    Call(op, std::move(args), std::move(attrs));
  } catch (const runtime::Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Layout, ParsesPrimalAndBlockAxes) {
  Layout l = Layout::Parse("OIHW16i8o");
  EXPECT_EQ(l.ndim(), 6);
  EXPECT_EQ(l.primal(), "OIHW");
  EXPECT_EQ(l.BlockOf('I'), 16);
  EXPECT_EQ(l.BlockOf('O'), 8);
  EXPECT_EQ(l.BlockOf('H'), 0);
  EXPECT_EQ(l.FromPrimal({64, 32, 3, 3}), (Ints{8, 2, 3, 3, 16, 8}));
  EXPECT_EQ(l.ToPrimal({8, 2, 3, 3, 16, 8}), (Ints{64, 32, 3, 3}));
  EXPECT_EQ(Layout::Parse("NCHW").FromPrimal({1, 3, 4, 5}), (Ints{1, 3, 4, 5}));
  EXPECT_EQ(BlockedDataLayout(16), "NCHW16c");
  EXPECT_EQ(BlockedDataLayout(0), "NCHW");
  EXPECT_EQ(ChannelBlock("NCHW8c"), 8);
  EXPECT_EQ(ChannelBlock("NCHW"), 0);
}

TEST(Layout, ErrorsSayWhatIsWrong) {
  EXPECT_THAT(ParseError("NCHW16"), HasSubstr("layout 'NCHW16' ends with a number"));
  EXPECT_THAT(ParseError("NCHWc"), HasSubstr("block axis 'c' needs a size, as in 16c"));
  EXPECT_THAT(ParseError("N4CHW"), HasSubstr("primal axis 'C' cannot have a block size"));
  EXPECT_THAT(ParseError("NCHW16c8c"), HasSubstr("repeats axis 'c'"));
  EXPECT_THAT(ParseError("NCH16w"), HasSubstr("block axis 'w' has no primal axis 'W'"));
  EXPECT_THAT(ParseError("NC-HW"), HasSubstr("unexpected character '-'"));
  EXPECT_THAT(ParseError("NCHW0c"), HasSubstr("block size of 'c' must be positive"));
  EXPECT_THAT(ParseError(""), HasSubstr("empty layout"));
  try {
    Layout::Parse("NCHW16c").FromPrimal({1, 24, 2, 2});
    FAIL();
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("axis C of size 24 is not divisible by the block 16 of layout NCHW16c"));
  }
  try {
    Layout::Parse("NCHW16c").ToPrimal({1, 2, 2, 2, 8});
    FAIL();
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("dimension 4 of (1, 2, 2, 2, 8) must be 16 in layout NCHW16c"));
  }
}

// Element [n, c, h, w] of NCHW lands at [n, c / b, h, w, c % b]; NHWC works too (any order of
// the same primal axes), and a round trip gives the data back.
TEST(Layout, TransformMovesEveryElementWhereItsIndexSays) {
  runtime::NDArray x = runtime::NDArray::Empty({2, 32, 3, 5}, runtime::kFloat32);
  auto* data = static_cast<float*>(x.data());
  for (int i = 0; i < 2 * 32 * 3 * 5; ++i) data[i] = static_cast<float>(i);
  runtime::NDArray blocked = *TransformLayout(x, Layout::Parse("NCHW"), Layout::Parse("NCHW16c"));
  ASSERT_EQ(blocked.shape(), (Ints{2, 2, 3, 5, 16}));
  const auto* b = static_cast<const float*>(blocked.data());
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 32; ++c)
      for (int p = 0; p < 15; ++p) EXPECT_EQ(b[((n * 2 + c / 16) * 15 + p) * 16 + c % 16], data[(n * 32 + c) * 15 + p]);
  runtime::NDArray nhwc = *TransformLayout(blocked, Layout::Parse("NCHW16c"), Layout::Parse("NHWC"));
  ASSERT_EQ(nhwc.shape(), (Ints{2, 3, 5, 32}));
  EXPECT_EQ(static_cast<const float*>(nhwc.data())[(1 * 15 + 7) * 32 + 21], data[(1 * 32 + 21) * 15 + 7]);
  runtime::NDArray back = *TransformLayout(nhwc, Layout::Parse("NHWC"), Layout::Parse("NCHW"));
  EXPECT_EQ(std::memcmp(back.data(), x.data(), x.NumBytes()), 0);
}

// Re-blocking 16c to 8c, weights packed OIHW to OIHW16i8o, and blocks that do not nest (12 and 8:
// not a strided copy, so no value).
TEST(Layout, TransformReblocksAndPacksWeights) {
  runtime::NDArray x = runtime::NDArray::Empty({1, 2, 2, 3, 16}, runtime::kFloat32);
  auto* data = static_cast<float*>(x.data());
  for (int i = 0; i < 2 * 2 * 3 * 16; ++i) data[i] = static_cast<float>(i);
  runtime::NDArray c8 = *TransformLayout(x, Layout::Parse("NCHW16c"), Layout::Parse("NCHW8c"));
  ASSERT_EQ(c8.shape(), (Ints{1, 4, 2, 3, 8}));
  for (int c = 0; c < 32; ++c)
    for (int p = 0; p < 6; ++p) {
      EXPECT_EQ(static_cast<const float*>(c8.data())[((c / 8) * 6 + p) * 8 + c % 8],
                data[((c / 16) * 6 + p) * 16 + c % 16]);
    }
  runtime::NDArray w = runtime::NDArray::Empty({16, 32, 1, 3}, runtime::kFloat32);
  auto* wd = static_cast<float*>(w.data());
  for (int i = 0; i < 16 * 32 * 3; ++i) wd[i] = static_cast<float>(i);
  runtime::NDArray packed = *TransformLayout(w, Layout::Parse("OIHW"), Layout::Parse("OIHW16i8o"));
  ASSERT_EQ(packed.shape(), (Ints{2, 2, 1, 3, 16, 8}));
  const auto* pd = static_cast<const float*>(packed.data());
  for (int o = 0; o < 16; ++o)
    for (int i = 0; i < 32; ++i)
      for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(pd[(((o / 8) * 2 + i / 16) * 3 + k) * 128 + (i % 16) * 8 + o % 8], wd[(o * 32 + i) * 3 + k]);
      }
  runtime::NDArray y = runtime::NDArray::Empty({1, 2, 1, 1, 12}, runtime::kFloat32);
  EXPECT_FALSE(TransformLayout(y, Layout::Parse("NCHW12c"), Layout::Parse("NCHW8c")).has_value());
}

TEST(LayoutOps, LayoutTransformTypes) {
  EXPECT_EQ(TypeOf("layout_transform", {In({1, 64, 56, 56})}, A({{"src_layout", std::string("NCHW")}, {"dst_layout", std::string("NCHW16c")}})),
            "Tensor[(1, 4, 56, 56, 16), float32]");
  EXPECT_EQ(TypeOf("layout_transform", {In({1, 4, 56, 56, 16})},
                   A({{"src_layout", std::string("NCHW16c")}, {"dst_layout", std::string("NCHW8c")}})),
            "Tensor[(1, 8, 56, 56, 8), float32]");
  EXPECT_EQ(TypeOf("layout_transform", {In({64, 32, 3, 3})},
                   A({{"src_layout", std::string("OIHW")}, {"dst_layout", std::string("OIHW16i16o")}})),
            "Tensor[(4, 2, 3, 3, 16, 16), float32]");
  EXPECT_THAT(ErrorOf("layout_transform", {In({1, 24, 2, 2})},
                      A({{"src_layout", std::string("NCHW")}, {"dst_layout", std::string("NCHW16c")}})),
              HasSubstr("not divisible by the block 16"));
  EXPECT_THAT(ErrorOf("layout_transform", {In({1, 16, 2, 2})},
                      A({{"src_layout", std::string("NCHW")}, {"dst_layout", std::string("OIHW")}})),
              HasSubstr("layouts NCHW and OIHW have different primal axes"));
  EXPECT_THAT(ErrorOf("layout_transform", {In({1, 16, 2, 2})}, A({{"src_layout", std::string("NCHW")}})),
              HasSubstr("attribute 'dst_layout' is required"));
}

TEST(LayoutOps, BlockedConvolutionAndPoolingTypes) {
  // The first convolution of a ResNet: plain input, blocked output.
  EXPECT_EQ(TypeOf("nn.conv2d", {In({1, 3, 224, 224}), In({4, 3, 7, 7, 1, 16})},
                   A({{"strides", Ints{2, 2}}, {"padding", Ints{3, 3, 3, 3}}, {"kernel_layout", std::string("OIHW1i16o")},
                      {"out_layout", std::string("NCHW16c")}})),
            "Tensor[(1, 4, 112, 112, 16), float32]");
  // Blocked on both sides, different blocks; depthwise.
  EXPECT_EQ(TypeOf("nn.conv2d", {In({1, 2, 56, 56, 16}), In({3, 2, 1, 1, 16, 8})},
                   A({{"data_layout", std::string("NCHW16c")}, {"kernel_layout", std::string("OIHW16i8o")},
                      {"out_layout", std::string("NCHW8c")}})),
            "Tensor[(1, 3, 56, 56, 8), float32]");
  EXPECT_EQ(TypeOf("nn.conv2d", {In({1, 2, 9, 9, 16}), In({2, 1, 3, 3, 1, 16})},
                   A({{"groups", int64_t{32}}, {"strides", Ints{2, 2}}, {"data_layout", std::string("NCHW16c")},
                      {"kernel_layout", std::string("OIHW1i16o")}})),
            "Tensor[(1, 2, 4, 4, 16), float32]");
  EXPECT_THAT(ErrorOf("nn.conv2d", {In({1, 2, 8, 8, 16}), In({2, 2, 3, 3, 16, 16})},
                      A({{"data_layout", std::string("NCHW8c")}})),
              HasSubstr("dimension 4 of (1, 2, 8, 8, 16) must be 8 in layout NCHW8c"));
  EXPECT_THAT(ErrorOf("nn.conv2d", {In({1, 2, 8, 8, 16}), In({2, 1, 3, 3, 16, 16})},
                      A({{"data_layout", std::string("NCHW16c")}, {"kernel_layout", std::string("OIHW16i16o")}})),
              HasSubstr("weight has 16 input channels per group but the data has 32 channels"));
  EXPECT_THAT(ErrorOf("nn.conv2d", {In({1, 3, 8, 8}), In({4, 3, 3, 3})}, A({{"data_layout", std::string("NHWC")}})),
              HasSubstr("data layout NHWC must have the primal axes NCHW"));
  // Winograd's: the weight [36, O / ob, C / ib, ib, ob] of a 3x3 window at stride 1.
  EXPECT_EQ(TypeOf("nn.conv2d_winograd", {In({1, 2, 14, 14, 16}), In({36, 3, 2, 16, 8})},
                   A({{"padding", Ints{1, 1, 1, 1}}, {"out_layout", std::string("NCHW8c")}})),
            "Tensor[(1, 3, 14, 14, 8), float32]");
  EXPECT_THAT(ErrorOf("nn.conv2d_winograd", {In({1, 2, 14, 14, 16}), In({36, 3, 2, 8, 8})},
                      A({{"out_layout", std::string("NCHW8c")}})),
              HasSubstr("the weight must be [36, O / 8, 2, 16, 8] (a 3x3 weight in Winograd's domain), got (36, 3, 2, 8, 8)"));
  EXPECT_THAT(ErrorOf("nn.conv2d_winograd", {In({1, 32, 14, 14}), In({36, 3, 2, 16, 8})},
                      A({{"data_layout", std::string("NCHW")}})),
              HasSubstr("data and output layouts must be NCHW8c or NCHW16c, got NCHW and NCHW16c"));
  // Blocks the kernel does not take, blocks not innermost, no output channels.
  EXPECT_THAT(ErrorOf("nn.conv2d_winograd", {In({1, 8, 14, 14, 4}), In({36, 1, 8, 4, 16})},
                      A({{"data_layout", std::string("NCHW4c")}})),
              HasSubstr("must be NCHW8c or NCHW16c, got NCHW4c"));
  EXPECT_THAT(ErrorOf("nn.conv2d_winograd", {In({1, 4, 8, 12, 16}), In({36, 1, 4, 8, 16})},
                      A({{"data_layout", std::string("NC8cHW")}})),
              HasSubstr("must be NCHW8c or NCHW16c, got NC8cHW"));
  EXPECT_THAT(ErrorOf("nn.conv2d_winograd", {In({1, 2, 14, 14, 16}), In({36, 0, 2, 16, 16})}, A({})),
              HasSubstr("the weight must be"));
  EXPECT_EQ(TypeOf("nn.max_pool2d", {In({1, 4, 112, 112, 16})},
                   A({{"pool_size", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"padding", Ints{1, 1, 1, 1}},
                      {"layout", std::string("NCHW16c")}})),
            "Tensor[(1, 4, 56, 56, 16), float32]");
  EXPECT_EQ(TypeOf("nn.global_avg_pool2d", {In({2, 32, 7, 7, 16})}, A({{"layout", std::string("NCHW16c")}})),
            "Tensor[(2, 32, 1, 1, 16), float32]");
  EXPECT_THAT(ErrorOf("nn.global_avg_pool2d", {In({2, 32, 7, 7})}, A({{"layout", std::string("NCHW16c")}})),
              HasSubstr("must be 5-D"));
}

TEST(LayoutOps, BlockedFunctionRoundTripsThroughText) {
  Expr f = ParseFunction(R"(fn (%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(1, 3, 3, 3, 1, 16), float32]) {
    %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], kernel_layout="OIHW1i16o", out_layout="NCHW16c");
    %1 = nn.max_pool2d(%0, pool_size=[2, 2], strides=[2, 2], layout="NCHW16c");
    %2 = layout_transform(%1, src_layout="NCHW16c", dst_layout="NCHW");
    %2
  })");
  std::string printed = PrintFunction(f);
  EXPECT_THAT(printed, HasSubstr("layout_transform(%1, dst_layout=\"NCHW\", src_layout=\"NCHW16c\")"));
  EXPECT_THAT(printed, HasSubstr("out_layout=\"NCHW16c\""));
  Expr again = ParseFunction(printed);
  EXPECT_EQ(PrintFunction(again), printed);
  EXPECT_TRUE(StructurallyEqual(f, again));
  EXPECT_EQ(f->As<FunctionNode>()->body->type().ToString(), "Tensor[(1, 16, 4, 4), float32]");
}

}  // namespace
}  // namespace kiln::ir
