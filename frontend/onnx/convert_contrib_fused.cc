// The ops ONNX Runtime's session writes into its saved optimized model (extended level), composed
// as their unfused twins import: FusedConv and FusedGemm (Conv and Gemm, then an activation),
// MatMulIntegerToFloat and DynamicQuantizeMatMul (integer products scaled to float32).
#include "frontend/onnx/converter.h"
#include "runtime/dtype.h"
#include "runtime/error.h"

namespace kiln::frontend {

using namespace ir;
using runtime::StrCat;

namespace {

const OpRef kAdd("add");
const OpRef kCast("cast");
const OpRef kClip("clip");
const OpRef kLeakyRelu("nn.leaky_relu");
const OpRef kMultiply("multiply");
const OpRef kRelu("nn.relu");
const OpRef kReshape("reshape");
const OpRef kSigmoid("sigmoid");
const OpRef kTanh("tanh");

using Outputs = std::vector<Expr>;
using Ints = std::vector<int64_t>;

// The `activation` attribute (required, as ONNX Runtime's kernels require it) applied to x, with
// its parameters: Relu, Tanh, Sigmoid, LeakyRelu (alpha), Clip (min, max), HardSigmoid (alpha,
// beta), as ONNX Runtime's fusions write them. FusedConv gives the parameters as activation_params,
// FusedGemm as activation_alpha and activation_beta (each with ONNX's default for the op).
Expr Activate(const NodeContext& c, const Expr& x, bool gemm) {
  std::string name = c.attr_string("activation");
  std::vector<float> params;
  if (!gemm) {
    params = c.attr_floats("activation_params", std::vector<float>{});
  } else if (name == "LeakyRelu") {
    params = {c.attr_float("activation_alpha", 0.01f)};
  } else if (name == "HardSigmoid") {
    params = {c.attr_float("activation_alpha", 0.2f), c.attr_float("activation_beta", 0.5f)};
  }
  auto param = [&](size_t i, size_t count) -> double {
    if (params.size() != count) {
      c.FailAt("attribute 'activation_params'",
               StrCat(name, " takes ", count, " parameters, the node gives ", params.size()));
    }
    return params[i];
  };
  if (name == "Relu") return c.Op(kRelu, {x});
  if (name == "Tanh") return c.Op(kTanh, {x});
  if (name == "Sigmoid") return c.Op(kSigmoid, {x});
  if (name == "LeakyRelu") return c.Op(kLeakyRelu, {x}, MakeAttrs({{"alpha", param(0, 1)}}));
  if (name == "Clip") return c.Op(kClip, {x}, MakeAttrs({{"a_min", param(0, 2)}, {"a_max", param(1, 2)}}));
  if (name == "HardSigmoid") {
    Expr y = c.Op(kAdd, {c.Op(kMultiply, {x, ScalarLike(x, param(0, 2))}), ScalarLike(x, param(1, 2))});
    return c.Op(kClip, {y}, MakeAttrs({{"a_min", 0.0}, {"a_max", 1.0}}));
  }
  c.FailAt("attribute 'activation'", "'" + name + "' is not an activation ONNX Runtime fuses (Relu, Tanh, Sigmoid, "
                                                  "LeakyRelu, Clip, HardSigmoid)");
}

// The converter of ONNX's op `type`, which a fused op extends.
Converter Unfused(const std::string& type) { return Converters().at(OpKey{"", type}).convert; }

// FusedConv: Conv of X, W (+ B), plus Z when given, then the activation.
Outputs FusedConv(const NodeContext& c) {
  Expr y = Unfused("Conv")(c).at(0);
  if (c.has_input(3)) {
    if (c.input_type(3).shape != y->type().tensor().shape) {
      c.FailAt("input 3", StrCat("must have the convolution's shape ", ShapeText(y->type().tensor().shape)));
    }
    y = c.Op(kAdd, {y, c.input(3)});
  }
  return {Activate(c, y, false)};
}

// FusedGemm: Gemm, then the activation.
Outputs FusedGemm(const NodeContext& c) { return {Activate(c, Unfused("Gemm")(c).at(0), true)}; }

// A scale input of MatMulIntegerToFloat or DynamicQuantizeMatMul: one value, or one per column of
// B (b_scale), as it broadcasts against the product [..., N].
Expr ScaleAlongColumns(const NodeContext& c, size_t i, int64_t columns) {
  const TensorType& t = c.input_type(i);
  if (t.NumElements() == 1) return c.Op(kReshape, {c.input(i)}, MakeAttrs({{"newshape", Ints{}}}));
  if (t.NumElements() != columns) {
    c.FailAt(StrCat("input ", i), StrCat("must hold one value or one per column of B (", columns, "), it holds ",
                                         t.NumElements()));
  }
  return c.Op(kReshape, {c.input(i)}, MakeAttrs({{"newshape", Ints{columns}}}));
}

// The float32 result of an int32 product `sum` of A and B: sum * a_scale * b_scale (+ bias [N]).
Expr ScaledProduct(const NodeContext& c, const Expr& sum, const Expr& a_scale, size_t b_scale, size_t bias) {
  int64_t columns = sum->type().tensor().shape.back();
  Expr scale = c.Op(kMultiply, {a_scale, ScaleAlongColumns(c, b_scale, columns)});
  Expr y = c.Op(kMultiply, {c.Op(kCast, {sum}, MakeAttrs({{"dtype", std::string("float32")}})), scale});
  if (c.has_input(bias)) {
    if (c.input_type(bias).shape != Ints{columns}) {
      c.FailAt(StrCat("input ", bias), StrCat("must be a vector of ", columns, " values"));
    }
    y = c.Op(kAdd, {y, c.input(bias)});
  }
  return y;
}

// MatMulIntegerToFloat: A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias: MatMulInteger of
// A and B with their zero points, scaled by a_scale * b_scale, plus bias.
Outputs MatMulIntegerToFloat(const NodeContext& c) {
  if (c.input_type(2).NumElements() != 1) c.FailAt("input 2", "a_scale must hold one value");
  // MatMulInteger's inputs are A, B, a_zero_point, b_zero_point: a context with those.
  std::vector<Expr> integer_inputs = {c.input(0), c.input(1), c.has_input(4) ? c.input(4) : nullptr,
                                      c.has_input(5) ? c.input(5) : nullptr};
  NodeContext integer(c.node(), integer_inputs, c.opset());
  Expr sum = Unfused("MatMulInteger")(integer).at(0);
  Expr a_scale = c.Op(kReshape, {c.input(2)}, MakeAttrs({{"newshape", Ints{}}}));
  return {ScaledProduct(c, sum, a_scale, 3, 6)};
}

// DynamicQuantizeMatMul: A (float32) quantized as DynamicQuantizeLinear does, times B (8-bit, with
// b_scale and b_zero_point), scaled back to float32, plus bias.
Outputs DynamicQuantizeMatMul(const NodeContext& c) {
  NodeContext quantize(c.node(), {c.input(0)}, c.opset());
  Outputs a = Unfused("DynamicQuantizeLinear")(quantize);
  NodeContext integer(c.node(), {a[0], c.input(1), a[2], c.has_input(3) ? c.input(3) : nullptr}, c.opset());
  Expr sum = Unfused("MatMulInteger")(integer).at(0);
  return {ScaledProduct(c, sum, a[1], 2, 4)};
}

}  // namespace

void AddContribFusedConverters(ConverterTable& table) {
  RegisterMicrosoft(table, "FusedConv", FusedConv);
  RegisterMicrosoft(table, "FusedGemm", FusedGemm);
  RegisterMicrosoft(table, "MatMulIntegerToFloat", MatMulIntegerToFloat);
  RegisterMicrosoft(table, "DynamicQuantizeMatMul", DynamicQuantizeMatMul);
}

}  // namespace kiln::frontend
