// Type inference of every op: output shapes checked against hand-computed values (PyTorch/ONNX
// shape formulas), and the errors of ill-typed calls.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/expr.h"
#include "ir/text.h"
#include "runtime/error.h"

namespace kiln::ir {
namespace {

using ::testing::HasSubstr;

Expr In(std::vector<int64_t> shape, const char* dtype = "float32") {
  return Var("x", Type::Tensor(std::move(shape), ParseDType(dtype)));
}

std::string TypeOf(const std::string& op, std::vector<Expr> args, Attrs attrs = {}) {
  return Call(op, std::move(args), std::move(attrs))->type().ToString();
}

std::string ErrorOf(const std::string& op, std::vector<Expr> args, Attrs attrs = {}) {
  try {
    Call(op, std::move(args), std::move(attrs));
  } catch (const runtime::Error& e) {
    return e.what();
  }
  return "(no error)";
}

Attrs A(std::initializer_list<std::pair<const char*, AttrValue>> items) {
  Attrs attrs;
  for (const auto& [k, v] : items) attrs.Set(k, v);
  return attrs;
}
using Ints = std::vector<int64_t>;

// Every tensor type can be allocated: an element count that overflows, or a tensor larger than
// runtime::MaxTensorBytes(), is refused where the type arises, an op's result included.
TEST(OpType, TensorTypesThatCannotBeAllocatedAreErrors) {
  auto type_error = [](std::vector<int64_t> shape) {
    try {
      Type::Tensor(std::move(shape), runtime::kFloat32);
    } catch (const runtime::Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_THAT(type_error({int64_t{1} << 62, 4}), HasSubstr("has more elements than a 64-bit count holds"));
  EXPECT_THAT(type_error({int64_t{1} << 61}), HasSubstr("has more bytes than a 64-bit count holds"));
  EXPECT_THAT(type_error({int64_t{1} << 22, int64_t{1} << 22}),
              HasSubstr("a tensor of shape [4194304, 4194304] needs 70368744177664 bytes, more than the limit of"));
  EXPECT_THAT(ErrorOf("broadcast_to", {In({1})}, A({{"shape", Ints{int64_t{1} << 22, int64_t{1} << 22}}})),
              HasSubstr("needs 70368744177664 bytes"));
  EXPECT_EQ(type_error({1 << 10, 1 << 10}), "(no error)");
  // Empty, but with dims whose product (an empty one counted as 1) would overflow converters' arithmetic.
  EXPECT_THAT(type_error({0, int64_t{1} << 30, int64_t{1} << 30}), HasSubstr("multiply past 2^48"));
  EXPECT_EQ(type_error({0, int64_t{1} << 40}), "(no error)");
}

TEST(OpType, Conv2D) {
  // out = floor((in + pads - dilation * (k - 1) - 1) / stride) + 1
  EXPECT_EQ(TypeOf("nn.conv2d", {In({1, 3, 224, 224}), In({64, 3, 7, 7})},
                   A({{"strides", Ints{2, 2}}, {"padding", Ints{3, 3, 3, 3}}})),
            "Tensor[(1, 64, 112, 112), float32]");
  EXPECT_EQ(TypeOf("nn.conv2d", {In({2, 32, 17, 13}), In({32, 1, 3, 3})},
                   A({{"groups", int64_t{32}}, {"dilation", Ints{2, 2}}, {"padding", Ints{0, 1, 2, 3}}})),
            "Tensor[(2, 32, 15, 13), float32]");
  EXPECT_THAT(ErrorOf("nn.conv2d", {In({1, 3, 8, 8}), In({4, 2, 3, 3})}),
              HasSubstr("weight has 2 input channels per group but the data has 3 channels in 1 groups"));
  EXPECT_THAT(ErrorOf("nn.conv2d", {In({1, 3, 2, 2}), In({4, 3, 3, 3})}), HasSubstr("larger than the padded input"));
  EXPECT_THAT(ErrorOf("nn.conv2d", {In({1, 3, 8, 8}), In({4, 3, 3, 3})}, A({{"strides", Ints{0, 1}}})),
              HasSubstr("strides must be positive"));
  EXPECT_THAT(ErrorOf("nn.conv2d", {In({1, 3, 8, 8}), In({4, 3, 3, 3}, "float16")}), HasSubstr("argument 1 is float16"));
  EXPECT_THAT(ErrorOf("nn.conv2d", {In({1, 3, 8, 8}), In({4, 3, 3, 3})}, A({{"groups", int64_t{2}}})),
              HasSubstr("groups 2 must divide"));
}

TEST(OpType, Conv2DTranspose) {
  // out = (in - 1) * stride - pads + dilation * (k - 1) + 1 + output_padding; the weight is
  // [C_in, C_out / groups, kh, kw].
  EXPECT_EQ(TypeOf("nn.conv2d_transpose", {In({1, 32, 20, 20}), In({32, 16, 4, 4})},
                   A({{"strides", Ints{2, 2}}, {"padding", Ints{1, 1, 1, 1}}})),
            "Tensor[(1, 16, 40, 40), float32]");
  EXPECT_EQ(TypeOf("nn.conv2d_transpose", {In({2, 4, 5, 6}), In({4, 2, 3, 3})},
                   A({{"strides", Ints{3, 2}}, {"output_padding", Ints{1, 1}}, {"groups", int64_t{2}},
                      {"dilation", Ints{2, 1}}, {"padding", Ints{0, 1, 2, 0}}})),
            "Tensor[(2, 4, 16, 13), float32]");
  EXPECT_THAT(ErrorOf("nn.conv2d_transpose", {In({1, 3, 8, 8}), In({4, 2, 3, 3})}),
              HasSubstr("weight has 4 input channels but the data has 3"));
  EXPECT_THAT(ErrorOf("nn.conv2d_transpose", {In({1, 4, 1, 1}), In({4, 2, 2, 2})}, A({{"padding", Ints{1, 0, 1, 0}}})),
              HasSubstr("leaves an empty output"));
  EXPECT_THAT(ErrorOf("nn.conv2d_transpose", {In({1, 4, 8, 8}), In({4, 2, 3, 3})}, A({{"padding", Ints{-1, 0, 0, 0}}})),
              HasSubstr("padding must not be negative"));
  EXPECT_THAT(ErrorOf("nn.conv2d_transpose", {In({1, 4, 8, 8}), In({4, 2, 3, 3})}, A({{"output_padding", Ints{-1, 0}}})),
              HasSubstr("output_padding must not be negative, got [-1, 0]"));
  EXPECT_THAT(ErrorOf("nn.conv2d_transpose", {In({1, 4, 8, 8}), In({4, 2, 3, 3})}, A({{"output_padding", Ints{1}}})),
              HasSubstr("output_padding needs 2 values, got [1]"));
  EXPECT_THAT(ErrorOf("nn.conv2d_transpose", {In({1, 4, 8, 8}), In({4, 2, 3, 3})}, A({{"groups", int64_t{3}}})),
              HasSubstr("groups 3 must divide the input channels 4"));
  EXPECT_THAT(ErrorOf("nn.conv2d_transpose", {In({1, 4, 8, 8}), In({4, 2, 3, 3})}, A({{"kernel_layout", std::string("OIHW")}})),
              HasSubstr("takes NCHW data and an IOHW weight only"));
  EXPECT_THAT(ErrorOf("nn.conv2d_transpose", {In({1, 4, 3, 8}), In({4, 2, 3, 3})},
                      A({{"strides", Ints{int64_t{1} << 62, 1}}})),
              HasSubstr("overflows"));
}

// 3-D: the same sizes per axis (depth, height, width), pads all begins then all ends.
TEST(OpType, Conv3DTranspose) {
  EXPECT_EQ(TypeOf("nn.conv3d_transpose", {In({2, 4, 3, 5, 6}), In({4, 3, 2, 3, 3})},
                   A({{"strides", Ints{2, 3, 2}}, {"output_padding", Ints{1, 0, 1}}, {"groups", int64_t{2}},
                      {"dilation", Ints{1, 1, 2}}, {"padding", Ints{0, 1, 2, 1, 0, 0}}})),
            "Tensor[(2, 6, 6, 14, 14), float32]");
  EXPECT_THAT(ErrorOf("nn.conv3d_transpose", {In({1, 4, 8, 8}), In({4, 2, 3, 3})}),
              HasSubstr("expects 5-D data and weight"));
  EXPECT_THAT(ErrorOf("nn.conv3d_transpose", {In({1, 4, 2, 8, 8}), In({4, 2, 1, 3, 3})}, A({{"padding", Ints{0, 0, 0, 0}}})),
              HasSubstr("padding needs 6 values (all begins, then all ends)"));
  EXPECT_THAT(ErrorOf("nn.conv3d_transpose", {In({1, 4, 2, 8, 8}), In({4, 2, 1, 3, 3})},
                      A({{"data_layout", std::string("NCHW")}})),
              HasSubstr("takes NCDHW data and an IODHW weight only"));
}

TEST(OpType, Pooling) {
  EXPECT_EQ(TypeOf("nn.max_pool2d", {In({1, 64, 112, 112})},
                   A({{"pool_size", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"padding", Ints{1, 1, 1, 1}}})),
            "Tensor[(1, 64, 56, 56), float32]");
  // ceil_mode: torch.nn.MaxPool2d(3, 2, ceil_mode=True) on 6x6 gives 3x3; on 5x5 gives 2x2.
  EXPECT_EQ(TypeOf("nn.max_pool2d", {In({1, 1, 6, 6})},
                   A({{"pool_size", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}})),
            "Tensor[(1, 1, 3, 3), float32]");
  EXPECT_EQ(TypeOf("nn.max_pool2d", {In({1, 1, 5, 5})},
                   A({{"pool_size", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}})),
            "Tensor[(1, 1, 2, 2), float32]");
  EXPECT_EQ(TypeOf("nn.avg_pool2d", {In({1, 8, 7, 7})}, A({{"pool_size", Ints{7, 7}}})), "Tensor[(1, 8, 1, 1), float32]");
  EXPECT_EQ(TypeOf("nn.global_avg_pool2d", {In({2, 8, 7, 5})}), "Tensor[(2, 8, 1, 1), float32]");
  EXPECT_THAT(ErrorOf("nn.max_pool2d", {In({1, 1, 4, 4})}), HasSubstr("attribute 'pool_size' is required"));
  EXPECT_THAT(ErrorOf("nn.max_pool2d", {In({1, 1, 4, 4})}, A({{"pool_size", Ints{2, 2}}, {"padding", Ints{2, 0, 0, 0}}})),
              HasSubstr("padding must be smaller than the window"));
}

TEST(OpType, DenseAndMatmul) {
  EXPECT_EQ(TypeOf("nn.dense", {In({4, 512}), In({1000, 512})}), "Tensor[(4, 1000), float32]");
  EXPECT_EQ(TypeOf("nn.dense", {In({2, 128, 768}), In({3072, 768})}), "Tensor[(2, 128, 3072), float32]");
  EXPECT_THAT(ErrorOf("nn.dense", {In({4, 512}), In({1000, 511})}), HasSubstr("data has K = 512 but weight has K = 511"));
  // A weight packed in panels of 16 output columns: [N / 16, K, 16].
  EXPECT_EQ(TypeOf("nn.dense", {In({2, 128, 768}), In({192, 768, 16})}, A({{"weight_layout", std::string("NK16n")}})),
            "Tensor[(2, 128, 3072), float32]");
  EXPECT_THAT(ErrorOf("nn.dense", {In({4, 512}), In({64, 511, 16})}, A({{"weight_layout", std::string("NK16n")}})),
              HasSubstr("data has K = 512 but weight has K = 511"));
  EXPECT_THAT(ErrorOf("nn.dense", {In({4, 512}), In({512, 1000})}, A({{"weight_layout", std::string("KN")}})),
              HasSubstr("weight layout KN must have the primal axes NK"));
  EXPECT_THAT(ErrorOf("nn.dense", {In({4, 512}), In({1000, 512})}, A({{"weight_layout", std::string("NK16n")}})),
              HasSubstr("NK16n"));
  EXPECT_EQ(TypeOf("nn.batch_matmul", {In({12, 128, 64}), In({12, 64, 128})}), "Tensor[(12, 128, 128), float32]");
  EXPECT_EQ(TypeOf("nn.batch_matmul", {In({12, 128, 64}), In({1, 128, 64})}, A({{"transpose_b", int64_t{1}}})),
            "Tensor[(12, 128, 128), float32]");
  EXPECT_THAT(ErrorOf("nn.batch_matmul", {In({2, 3, 4}), In({3, 4, 5})}), HasSubstr("batch sizes 2 and 3"));
  EXPECT_THAT(ErrorOf("nn.batch_matmul", {In({2, 3, 4}), In({2, 5, 4})}), HasSubstr("inner dimensions differ"));
}

TEST(OpType, Broadcasting) {
  EXPECT_EQ(TypeOf("add", {In({8, 1, 6, 1}), In({7, 1, 5})}), "Tensor[(8, 7, 6, 5), float32]");
  EXPECT_EQ(TypeOf("multiply", {In({}), In({3, 2})}), "Tensor[(3, 2), float32]");
  EXPECT_EQ(TypeOf("less", {In({3}), In({1})}), "Tensor[(3), bool]");
  EXPECT_EQ(TypeOf("where", {In({3, 1}, "bool"), In({4}), In({1, 4})}), "Tensor[(3, 4), float32]");
  EXPECT_THAT(ErrorOf("add", {In({3}), In({4})}), HasSubstr("shapes (3) and (4) do not broadcast"));
  EXPECT_THAT(ErrorOf("add", {In({3}), In({3}, "int32")}), HasSubstr("argument 1 is int32 but argument 0 is float32"));
  EXPECT_THAT(ErrorOf("where", {In({3}), In({3}), In({3})}), HasSubstr("the condition must be bool"));
  // if_then_else selects whole values: no broadcasting, a bool scalar condition.
  EXPECT_EQ(TypeOf("if_then_else", {In({}, "bool"), In({2, 3}), In({2, 3})}), "Tensor[(2, 3), float32]");
  EXPECT_THAT(ErrorOf("if_then_else", {In({1}, "bool"), In({3}), In({3})}),
              HasSubstr("the condition must be a bool scalar, got bool of shape (1)"));
  EXPECT_THAT(ErrorOf("if_then_else", {In({}), In({3}), In({3})}), HasSubstr("must be a bool scalar, got float32 of shape ()"));
  EXPECT_THAT(ErrorOf("if_then_else", {In({}, "bool"), In({3}), In({1, 3})}),
              HasSubstr("the then side is Tensor[(3), float32] and the else side Tensor[(1, 3), float32]"));
  EXPECT_EQ(TypeOf("nn.bias_add", {In({1, 4, 2, 2}), In({4})}), "Tensor[(1, 4, 2, 2), float32]");
  EXPECT_THAT(ErrorOf("nn.bias_add", {In({1, 4, 2, 2}), In({3})}), HasSubstr("does not match axis 1"));
}

TEST(OpType, Unary) {
  EXPECT_EQ(TypeOf("cast", {In({2, 3})}, A({{"dtype", std::string("int64")}})), "Tensor[(2, 3), int64]");
  EXPECT_EQ(TypeOf("clip", {In({2})}, A({{"a_min", int64_t{0}}, {"a_max", 6.0}})), "Tensor[(2), float32]");
  EXPECT_THAT(ErrorOf("sigmoid", {In({2}, "int32")}), HasSubstr("expects a float tensor"));
  EXPECT_THAT(ErrorOf("cast", {In({2})}, A({{"dtype", std::string("float7")}})), HasSubstr("is not a dtype"));
  EXPECT_THAT(ErrorOf("clip", {In({2})}, A({{"a_min", std::string("x")}, {"a_max", 1.0}})),
              HasSubstr("attribute 'a_min' must be a float, got \"x\""));
}

TEST(OpType, Normalization) {
  EXPECT_EQ(TypeOf("nn.batch_norm", {In({1, 4, 3, 3}), In({4}), In({4}), In({4}), In({4})}),
            "Tensor[(1, 4, 3, 3), float32]");
  EXPECT_THAT(ErrorOf("nn.batch_norm", {In({1, 4, 3, 3}), In({4}), In({4}), In({5}), In({4})}),
              HasSubstr("argument 3 (5) does not match channel axis 1"));
  EXPECT_EQ(TypeOf("nn.layer_norm", {In({1, 128, 768}), In({768}), In({768})}), "Tensor[(1, 128, 768), float32]");
  EXPECT_EQ(TypeOf("nn.softmax", {In({1, 12, 128, 128})}), "Tensor[(1, 12, 128, 128), float32]");
  EXPECT_THAT(ErrorOf("nn.softmax", {In({2, 3})}, A({{"axis", int64_t{2}}})), HasSubstr("axis 2 is out of range"));
}

// nn.attention (CombineAttention's): q, k, v of a packed QKV projection [S, 3 * N * H] read in
// place, the result [S, N * Hv]; each view must stay inside its tensor, the result's view cover it.
TEST(OpType, Attention) {
  auto attrs = [](Ints q_view, Ints out_shape, Ints out_view) {
    return A({{"sizes", Ints{1, 2, 5, 5, 4, 4}}, {"scale", 0.5}, {"q_view", q_view}, {"k_view", Ints{8, 0, 4, 24, 1}},
              {"v_view", Ints{16, 0, 4, 24, 1}}, {"out_shape", out_shape}, {"out_view", out_view}});
  };
  const Ints q = {0, 0, 4, 24, 1}, out = {5, 8}, out_view = {0, 0, 4, 8, 1};
  EXPECT_EQ(TypeOf("nn.attention", {In({5, 24}), In({5, 24}), In({5, 24})}, attrs(q, out, out_view)),
            "Tensor[(5, 8), float32]");
  EXPECT_THAT(ErrorOf("nn.attention", {In({5, 24}), In({5, 24}), In({5, 24})}, attrs({17, 0, 4, 24, 1}, out, out_view)),
              HasSubstr("q_view [17, 0, 4, 24, 1] reaches past the 120 elements of its tensor"));
  EXPECT_THAT(ErrorOf("nn.attention", {In({5, 24}), In({5, 24}), In({5, 24})},
                      attrs({0, 0, int64_t{1} << 62, int64_t{1} << 62, 1}, out, out_view)),
              HasSubstr("reaches past the 120 elements"));
  EXPECT_THAT(ErrorOf("nn.attention", {In({5, 24}), In({5, 24}), In({5, 24})}, attrs(q, {5, 9}, out_view)),
              HasSubstr("out_shape (5, 9) holds 45 elements, not batch x heads x queries x value size"));
  EXPECT_THAT(ErrorOf("nn.attention", {In({5, 24}), In({5, 24}), In({5, 24})}, attrs(q, out, {0, 0, 1, 8, 2})),
              HasSubstr("out_view [0, 0, 1, 8, 2] must write each row's values contiguously"));
  EXPECT_THAT(ErrorOf("nn.attention", {In({5, 24}, "float64"), In({5, 24}), In({5, 24})}, attrs(q, out, out_view)),
              HasSubstr("argument 0 is float64, not float32"));
  EXPECT_THAT(ErrorOf("nn.attention", {In({5, 24}), In({5, 24}), In({5, 24}), In({5, 5})}, attrs(q, out, out_view)),
              HasSubstr("bias_view must be [offset, batch, head, row and column strides], it is []"));
}

TEST(OpType, Transforms) {
  EXPECT_EQ(TypeOf("reshape", {In({1, 512, 1, 1})}, A({{"newshape", Ints{1, 512}}})), "Tensor[(1, 512), float32]");
  EXPECT_THAT(ErrorOf("reshape", {In({2, 3})}, A({{"newshape", Ints{4, 2}}})), HasSubstr("cannot reshape (2, 3)"));
  EXPECT_THAT(ErrorOf("reshape", {In({2, 3})}, A({{"newshape", Ints{-1}}})), HasSubstr("must be static"));
  EXPECT_EQ(TypeOf("transpose", {In({1, 128, 12, 64})}, A({{"axes", Ints{0, 2, 1, 3}}})), "Tensor[(1, 12, 128, 64), float32]");
  EXPECT_EQ(TypeOf("transpose", {In({2, 3, 4})}), "Tensor[(4, 3, 2), float32]");
  EXPECT_THAT(ErrorOf("transpose", {In({2, 3})}, A({{"axes", Ints{0, 0}}})), HasSubstr("repeat an axis"));
  EXPECT_EQ(TypeOf("concatenate", {In({1, 1, 768}), In({1, 196, 768})}, A({{"axis", int64_t{1}}})),
            "Tensor[(1, 197, 768), float32]");
  EXPECT_THAT(ErrorOf("concatenate", {In({1, 2}), In({2, 2})}, A({{"axis", int64_t{1}}})), HasSubstr("outside axis 1"));
  EXPECT_EQ(TypeOf("squeeze", {In({1, 3, 1})}), "Tensor[(3), float32]");
  EXPECT_EQ(TypeOf("squeeze", {In({1, 3, 1})}, A({{"axis", Ints{-1}}})), "Tensor[(1, 3), float32]");
  EXPECT_THAT(ErrorOf("squeeze", {In({1, 3})}, A({{"axis", Ints{1}}})), HasSubstr("cannot squeeze axis 1 of size 3"));
  EXPECT_EQ(TypeOf("expand_dims", {In({3})}, A({{"axis", int64_t{0}}, {"num_newaxis", int64_t{2}}})), "Tensor[(1, 1, 3), float32]");
  EXPECT_EQ(TypeOf("expand_dims", {In({3})}, A({{"axis", int64_t{-1}}})), "Tensor[(3, 1), float32]");
  // numpy: x[:, 0:1], x[::-1], x[-3:], x[1:100], x[5:2]
  EXPECT_EQ(TypeOf("strided_slice", {In({1, 197, 768})}, A({{"begin", Ints{0}}, {"end", Ints{1}}, {"axes", Ints{1}}})),
            "Tensor[(1, 1, 768), float32]");
  EXPECT_EQ(TypeOf("strided_slice", {In({7})}, A({{"begin", Ints{-1}}, {"end", Ints{INT64_MIN}}, {"strides", Ints{-1}}})),
            "Tensor[(7), float32]");
  EXPECT_EQ(TypeOf("strided_slice", {In({7})}, A({{"begin", Ints{-3}}, {"end", Ints{INT64_MAX}}})), "Tensor[(3), float32]");
  EXPECT_EQ(TypeOf("strided_slice", {In({7})}, A({{"begin", Ints{1}}, {"end", Ints{100}}, {"strides", Ints{2}}})),
            "Tensor[(3), float32]");
  EXPECT_EQ(TypeOf("strided_slice", {In({7})}, A({{"begin", Ints{5}}, {"end", Ints{2}}})), "Tensor[(0), float32]");
  EXPECT_EQ(TypeOf("take", {In({30522, 768}), In({1, 128}, "int64")}), "Tensor[(1, 128, 768), float32]");
  EXPECT_EQ(TypeOf("take", {In({2, 5, 3}), In({}, "int64")}, A({{"axis", int64_t{1}}})), "Tensor[(2, 3), float32]");
  EXPECT_THAT(ErrorOf("take", {In({2, 5}), In({2})}), HasSubstr("indices must be integers"));
  EXPECT_EQ(TypeOf("split", {In({2, 6})}, A({{"sections", Ints{2, 4}}, {"axis", int64_t{1}}})),
            "(Tensor[(2, 2), float32], Tensor[(2, 4), float32])");
  EXPECT_THAT(ErrorOf("split", {In({2, 6})}, A({{"sections", Ints{2, 3}}, {"axis", int64_t{1}}})),
              HasSubstr("do not add up to 6"));
  EXPECT_EQ(TypeOf("broadcast_to", {In({3, 1})}, A({{"shape", Ints{2, 3, 4}}})), "Tensor[(2, 3, 4), float32]");
  EXPECT_EQ(TypeOf("nn.pad", {In({1, 3, 4, 4})}, A({{"pad_width", Ints{0, 0, 0, 0, 1, 2, 3, 4}}})),
            "Tensor[(1, 3, 7, 11), float32]");
}

TEST(OpType, Reductions) {
  EXPECT_EQ(TypeOf("mean", {In({1, 128, 768})}, A({{"axis", Ints{-1}}, {"keepdims", int64_t{1}}})),
            "Tensor[(1, 128, 1), float32]");
  EXPECT_EQ(TypeOf("sum", {In({2, 3, 4})}, A({{"axis", Ints{0, 2}}})), "Tensor[(3), float32]");
  EXPECT_EQ(TypeOf("max", {In({2, 3})}), "Tensor[(), float32]");
  EXPECT_THAT(ErrorOf("sum", {In({2, 3})}, A({{"axis", Ints{1, -1}}})), HasSubstr("axis -1 is listed twice"));
}

TEST(OpType, EveryOpHasInferenceAndDocs) {
  for (const auto& [name, op] : AllOps()) {
    EXPECT_NE(op.infer, nullptr) << name;
    EXPECT_FALSE(op.doc.empty()) << name;
    EXPECT_LE(op.min_args, op.max_args) << name;
    for (const AttrSchema& attr : op.attrs) EXPECT_FALSE(attr.doc.empty()) << name << "." << attr.name;
  }
  EXPECT_EQ(FindOp("nn.conv2d")->pattern, OpPattern::kOutEWiseFusable);
  EXPECT_EQ(FindOp("add")->pattern, OpPattern::kBroadcast);
  EXPECT_EQ(FindOp("no.such.op"), nullptr);
}

}  // namespace
}  // namespace kiln::ir
