// ONNX elementwise ops: arithmetic, comparisons, activations, trigonometric and hyperbolic functions, Clip,
// Cast, Where, Softmax.
#include <cmath>
#include <limits>
#include <optional>
#include <cstring>

#include "frontend/onnx/converter.h"
#include "runtime/error.h"

namespace kiln::frontend {

using namespace ir;

namespace {

// The IR ops these converters make.
const OpRef kAbs("abs");
const OpRef kAdd("add");
const OpRef kBitwiseAnd("bitwise_and");
const OpRef kBitwiseNot("bitwise_not");
const OpRef kBitwiseOr("bitwise_or");
const OpRef kBitwiseXor("bitwise_xor");
const OpRef kBroadcastTo("broadcast_to");
const OpRef kCast("cast");
const OpRef kDet("det");
const OpRef kCeil("ceil");
const OpRef kClip("clip");
const OpRef kDiv("divide");
const OpRef kDropout("nn.dropout");
const OpRef kEqual("equal");
const OpRef kErf("erf");
const OpRef kExp("exp");
const OpRef kFloor("floor");
const OpRef kGreater("greater");
const OpRef kGreaterEqual("greater_equal");
const OpRef kLeakyRelu("nn.leaky_relu");
const OpRef kLeftShift("left_shift");
const OpRef kLess("less");
const OpRef kLessEqual("less_equal");
const OpRef kLog("log");
const OpRef kMax("maximum");
const OpRef kMin("minimum");
const OpRef kMul("multiply");
const OpRef kNeg("negative");
const OpRef kPower("power");
const OpRef kRelu("nn.relu");
const OpRef kRightShift("right_shift");
const OpRef kReshape("reshape");
const OpRef kRound("round");
const OpRef kSigmoid("sigmoid");
const OpRef kSoftmax("nn.softmax");
const OpRef kSqrt("sqrt");
const OpRef kSub("subtract");
const OpRef kTanh("tanh");
const OpRef kWhere("where");
const OpRef kSin("sin");
const OpRef kCos("cos");
const OpRef kTan("tan");
const OpRef kAsin("asin");
const OpRef kAcos("acos");
const OpRef kAtan("atan");
const OpRef kSinh("sinh");
const OpRef kCosh("cosh");
const OpRef kAsinh("asinh");
const OpRef kAcosh("acosh");
const OpRef kAtanh("atanh");
const OpRef kSoftplus("nn.softplus");
const OpRef kSoftsign("nn.softsign");
const OpRef kHardSwish("nn.hard_swish");
const OpRef kElu("nn.elu");
const OpRef kSelu("nn.selu");
const OpRef kCelu("nn.celu");
const OpRef kThresholdedRelu("nn.thresholded_relu");
const OpRef kAnd("logical_and");
const OpRef kFloorMod("floor_mod");
const OpRef kTruncMod("trunc_mod");
const OpRef kOr("logical_or");
const OpRef kXor("logical_xor");
const OpRef kNot("logical_not");
const OpRef kReduceMax("max");
const OpRef kReduceSum("sum");

using Outputs = std::vector<Expr>;

template <const OpRef& kOp>
Outputs Binary(const NodeContext& c) {
  return {c.Op(kOp, {c.input(0), c.input(1)})};
}

template <const OpRef& kOp>
Outputs Unary(const NodeContext& c) {
  return {c.Op(kOp, {c.input(0)})};
}

// Max, Min, Sum, Mean: variadic with broadcasting.
template <const OpRef& kOp>
Outputs Variadic(const NodeContext& c) {
  Expr result = c.input(0);
  for (size_t i = 1; i < c.num_inputs(); ++i) result = c.Op(kOp, {result, c.input(i)});
  return {result};
}


Outputs Pow(const NodeContext& c) {
  Expr exponent = c.input(1);
  if (exponent->type().tensor().dtype != c.input_type(0).dtype) {
    exponent = c.Op(kCast, {exponent}, MakeAttrs({{"dtype", runtime::DTypeToString(c.input_type(0).dtype)}}));
  }
  return {c.Op(kPower, {c.input(0), exponent})};
}

Outputs Mean(const NodeContext& c) {
  Expr sum = Variadic<kAdd>(c)[0];
  return {c.Op(kDiv, {sum, ScalarLike(sum, static_cast<double>(c.num_inputs()))})};
}

Outputs Reciprocal(const NodeContext& c) { return {c.Op(kDiv, {ScalarLike(c.input(0), 1.0), c.input(0)})}; }

Outputs LeakyRelu(const NodeContext& c) {
  return {c.Op(kLeakyRelu, {c.input(0)}, MakeAttrs({{"alpha", double{c.attr_float("alpha", 0.01f)}}}))};
}

// An activation whose float attributes carry over under their ONNX names, with ONNX's defaults.
template <const OpRef& kOp>
Outputs WithFloatAttrs(const NodeContext& c, std::initializer_list<std::pair<const char*, float>> defaults) {
  Attrs attrs;
  for (const auto& [name, default_value] : defaults) attrs.Set(name, double{c.attr_float(name, default_value)});
  return {c.Op(kOp, {c.input(0)}, attrs)};
}

Outputs Elu(const NodeContext& c) { return WithFloatAttrs<kElu>(c, {{"alpha", 1.0f}}); }
Outputs Celu(const NodeContext& c) { return WithFloatAttrs<kCelu>(c, {{"alpha", 1.0f}}); }
Outputs ThresholdedRelu(const NodeContext& c) { return WithFloatAttrs<kThresholdedRelu>(c, {{"alpha", 1.0f}}); }
Outputs Selu(const NodeContext& c) {
  return WithFloatAttrs<kSelu>(c, {{"alpha", 1.67326319217681884765625f}, {"gamma", 1.05070102214813232421875f}});
}

Outputs HardSigmoid(const NodeContext& c) {
  Expr x = c.input(0);
  Expr scaled = c.Op(kAdd, {c.Op(kMul, {x, ScalarLike(x, c.attr_float("alpha", 0.2f))}),
                             ScalarLike(x, c.attr_float("beta", 0.5f))});
  return {c.Op(kClip, {scaled}, MakeAttrs({{"a_min", 0.0}, {"a_max", 1.0}}))};
}

Outputs Clip(const NodeContext& c) {
  double lo = -INFINITY, hi = INFINITY;
  if (c.opset() < 11) {
    lo = c.attr_float("min", -INFINITY);
    hi = c.attr_float("max", INFINITY);
  } else if (!(c.has_input(1) && !c.IsConstant(1)) && !(c.has_input(2) && !c.IsConstant(2))) {
    if (c.has_input(1)) lo = c.ConstantScalar(1);
    if (c.has_input(2)) hi = c.ConstantScalar(2);
  } else {
    // Bounds known only at run time: max(x, min), then min(., max).
    Expr y = c.input(0);
    for (size_t i : {size_t{1}, size_t{2}}) {
      if (!c.has_input(i)) continue;
      if (c.input_type(i).NumElements() != 1) c.FailAt(runtime::StrCat("input ", i), "must hold one value");
      Expr bound = c.Op(kReshape, {c.input(i)}, MakeAttrs({{"newshape", std::vector<int64_t>{}}}));
      y = c.Op(i == 1 ? kMax : kMin, {y, bound});
    }
    return {y};
  }
  return {c.Op(kClip, {c.input(0)}, MakeAttrs({{"a_min", lo}, {"a_max", hi}}))};
}

// Input 0 as `to` (itself when it has that type already).
Outputs CastInputTo(const NodeContext& c, DLDataType to) {
  if (to == c.input_type(0).dtype) return {c.input(0)};
  return {c.Op(kCast, {c.input(0)}, MakeAttrs({{"dtype", runtime::DTypeToString(to)}, {"saturate", c.attr_int("saturate", 1)}}))};
}

Outputs Cast(const NodeContext& c) { return CastInputTo(c, OnnxDType(static_cast<int32_t>(c.attr_int("to")))); }

Outputs Det(const NodeContext& c) { return {c.Op(kDet, {c.input(0)})}; }

// CastLike: Cast to the type of input 1.
Outputs CastLike(const NodeContext& c) { return CastInputTo(c, c.input_type(1).dtype); }

Outputs Where(const NodeContext& c) { return {c.Op(kWhere, {c.input(0), c.input(1), c.input(2)})}; }

Outputs Identity(const NodeContext& c) { return {c.input(0)}; }

// Dropout at inference: the input, and a mask of all true. From opset 12 a training_mode that is
// not a constant false makes it random, unless the ratio is a constant 0 (torchvision's Swin
// exports its dropouts so): ONNX's definition is then the identity too.
Outputs Dropout(const NodeContext& c) {
  std::optional<double> ratio = 0.5;  // none: computed at run time
  if (c.opset() < 12) ratio = c.attr_float("ratio", 0.5f);
  if (c.opset() >= 12 && c.has_input(1)) ratio = c.IsConstant(1) ? std::optional(c.ConstantScalar(1)) : std::nullopt;
  bool training = c.opset() >= 12 && c.has_input(2) && (!c.IsConstant(2) || c.ConstantScalar(2) != 0);
  if (training && ratio != 0.0) {
    std::string which = ratio ? runtime::StrCat("ratio ", *ratio) : "a ratio computed at run time";
    c.FailAt("input 2", "training mode with " + which +
                            " drops values at random (kiln runs inference: export the model in eval mode)");
  }
  Outputs outputs = {c.Op(kDropout, {c.input(0)}, MakeAttrs({{"rate", ratio.value_or(0.5)}}))};
  if (c.num_outputs() > 1) {
    runtime::NDArray all = runtime::NDArray::Empty({}, DLDataType{kDLUInt, 1, 1});
    *static_cast<uint8_t*>(all.data()) = 1;
    outputs.push_back(c.Op(kBroadcastTo, {Constant(all)}, MakeAttrs({{"shape", c.input_type(0).shape}})));
  }
  return outputs;
}

// Mod: fmod = 1 takes the sign of the dividend (C), 0 that of the divisor (Python; integers only).
Outputs Mod(const NodeContext& c) {
  bool fmod = c.attr_int("fmod", 0) != 0;
  if (!fmod && c.input_type(0).dtype.code == kDLFloat) c.Fail("fmod must be 1 for floating-point inputs");
  return {c.Op(fmod ? kTruncMod : kFloorMod, {c.input(0), c.input(1)})};
}

// IsNaN: x != x.
Outputs IsNaN(const NodeContext& c) { return {c.Op(kNot, {c.Op(kEqual, {c.input(0), c.input(0)})})}; }

// IsInf: |x| == inf, narrowed to one sign by detect_negative / detect_positive (neither: false).
Outputs IsInf(const NodeContext& c) {
  Expr x = c.input(0);
  bool negative = c.attr_int("detect_negative", 1) != 0, positive = c.attr_int("detect_positive", 1) != 0;
  if (negative && positive) return {c.Op(kEqual, {c.Op(kAbs, {x}), ScalarLike(x, INFINITY)})};
  if (negative || positive) return {c.Op(kEqual, {x, ScalarLike(x, positive ? INFINITY : -INFINITY)})};
  runtime::NDArray none = runtime::NDArray::Empty(c.input_type(0).shape, DLDataType{kDLUInt, 1, 1});
  std::memset(none.data(), 0, none.NumBytes());
  return {Constant(none)};
}

// Sign: (x > 0) - (x < 0) in x's dtype.
Outputs Sign(const NodeContext& c) {
  Expr x = c.input(0), zero = ScalarLike(c.input(0), 0.0);
  Attrs as_x = MakeAttrs({{"dtype", runtime::DTypeToString(c.input_type(0).dtype)}});
  return {c.Op(kSub, {c.Op(kCast, {c.Op(kGreater, {x, zero})}, as_x), c.Op(kCast, {c.Op(kLess, {x, zero})}, as_x)})};
}

Outputs BitShift(const NodeContext& c) {
  std::string direction = c.attr_string("direction");
  if (direction != "LEFT" && direction != "RIGHT") {
    c.FailAt("attribute 'direction'", "'" + direction + "' is not LEFT or RIGHT");
  }
  return {c.Op(direction == "LEFT" ? kLeftShift : kRightShift, {c.input(0), c.input(1)})};
}

// PRelu: x where x >= 0, x * slope elsewhere (slope broadcasts to x).
Outputs PRelu(const NodeContext& c) {
  Expr x = c.input(0);
  return {c.Op(kWhere, {c.Op(kLess, {x, ScalarLike(x, 0.0)}), c.Op(kMul, {x, c.input(1)}), x})};
}

// Mish: x * tanh(softplus(x)).
Outputs Mish(const NodeContext& c) {
  Expr x = c.input(0);
  return {c.Op(kMul, {x, c.Op(kTanh, {c.Op(kSoftplus, {x})})})};
}

// Gelu: with approximate = "none" its erf form, with "tanh" its tanh form (GeluOf).
Outputs Gelu(const NodeContext& c) {
  std::string approximate = c.attr_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh") {
    c.FailAt("attribute 'approximate'", "'" + approximate + "' is not none or tanh");
  }
  return {GeluOf(c, c.input(0), approximate == "tanh")};
}

// Shrink: x + bias below -lambd, x - bias above lambd, 0 between.
Outputs Shrink(const NodeContext& c) {
  Expr x = c.input(0);
  double lambd = c.attr_float("lambd", 0.5f), bias = c.attr_float("bias", 0.0f);
  Expr low = c.Op(kLess, {x, ScalarLike(x, -lambd)}), high = c.Op(kGreater, {x, ScalarLike(x, lambd)});
  Expr zero = ScalarLike(x, 0.0);
  return {c.Op(kWhere, {low, c.Op(kAdd, {x, ScalarLike(x, bias)}),
                        c.Op(kWhere, {high, c.Op(kSub, {x, ScalarLike(x, bias)}), zero})})};
}

// LogSoftmax: x - max - log(sum(exp(x - max))) along the axis, with Softmax's axis rules (before
// opset 13, over the dimensions from the axis on: the input flattened to 2-D there).
Outputs LogSoftmax(const NodeContext& c) {
  const TensorType& t = c.input_type(0);
  int64_t axis = NormalizeAxis(c.attr_int("axis", c.opset() >= 13 ? -1 : 1), t.ndim(), c);
  std::vector<int64_t> axes = {axis};
  for (int64_t d = axis + 1; c.opset() < 13 && d < t.ndim(); ++d) axes.push_back(d);
  return {LogSoftmaxOf(c, c.input(0), axes)};
}

Outputs Softmax(const NodeContext& c) {
  const TensorType& t = c.input_type(0);
  int64_t axis = NormalizeAxis(c.attr_int("axis", c.opset() >= 13 ? -1 : 1), t.ndim(), c);
  if (c.opset() >= 13 || axis == t.ndim() - 1) {
    return {c.Op(kSoftmax, {c.input(0)}, MakeAttrs({{"axis", axis}}))};
  }
  // Before opset 13 Softmax works on the input flattened to 2-D at `axis`.
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < t.ndim(); ++d) (d < axis ? rows : cols) *= t.shape[d];
  Expr flat = c.Op(kReshape, {c.input(0)}, MakeAttrs({{"newshape", std::vector<int64_t>{rows, cols}}}));
  Expr soft = c.Op(kSoftmax, {flat}, MakeAttrs({{"axis", int64_t{1}}}));
  return {c.Op(kReshape, {soft}, MakeAttrs({{"newshape", t.shape}}))};
}

template <typename T>
T SaturateTo(double value) {
  if (std::isnan(value)) return T(0);
  if (value <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (value >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(value);
}

}  // namespace

Expr LogSoftmaxOf(const NodeContext& c, const Expr& x, const std::vector<int64_t>& axes) {
  Attrs keep = MakeAttrs({{"axis", axes}, {"keepdims", int64_t{1}}});
  Expr shifted = c.Op(kSub, {x, c.Op(kReduceMax, {x}, keep)});
  return c.Op(kSub, {shifted, c.Op(kLog, {c.Op(kReduceSum, {c.Op(kExp, {shifted})}, keep)})});
}

Expr ScalarOf(DLDataType d, double value) {
  if (d == DLDataType{kDLFloat, 16, 1}) {  // float16 constants are float32 ones cast (folding has no float16)
    return Call(kCast, {ScalarOf(runtime::kFloat32, value)}, MakeAttrs({{"dtype", std::string("float16")}}));
  }
  runtime::NDArray a = runtime::NDArray::Empty({}, d);
  if (d.code == kDLFloat && d.bits == 32) *static_cast<float*>(a.data()) = static_cast<float>(value);
  else if (d.code == kDLFloat && d.bits == 64) *static_cast<double*>(a.data()) = value;
  // Integers saturate (an infinite bound becomes the type's limit; NaN, 0).
  else if (d.code == kDLInt && d.bits == 64) *static_cast<int64_t*>(a.data()) = SaturateTo<int64_t>(value);
  else if (d.code == kDLInt && d.bits == 32) *static_cast<int32_t*>(a.data()) = SaturateTo<int32_t>(value);
  else if (d == DLDataType{kDLUInt, 1, 1}) *static_cast<uint8_t*>(a.data()) = value != 0;
  else runtime::Fail("cannot make a scalar of dtype ", runtime::DTypeToString(d));
  return Constant(a);
}

Expr ScalarLike(const Expr& like, double value) { return ScalarOf(like->type().tensor().dtype, value); }

Expr GeluOf(const NodeContext& c, const Expr& x, bool tanh_form) {
  Expr inner;
  if (!tanh_form) {
    inner = c.Op(kErf, {c.Op(kMul, {x, ScalarLike(x, M_SQRT1_2)})});
  } else {
    Expr cube = c.Op(kMul, {c.Op(kMul, {x, x}), x});
    Expr sum = c.Op(kAdd, {x, c.Op(kMul, {cube, ScalarLike(x, 0.044715)})});
    inner = c.Op(kTanh, {c.Op(kMul, {sum, ScalarLike(x, std::sqrt(2.0 / M_PI))})});
  }
  Expr half = c.Op(kMul, {x, ScalarLike(x, 0.5)});
  return c.Op(kMul, {half, c.Op(kAdd, {inner, ScalarLike(x, 1.0)})});
}

// The oldest opsets: binary ops broadcast both ways since 7 (before, a broadcast attribute);
// Max/Min/Sum/Mean since 8; unary ops lost consumed_inputs at 6; Clip before 11, Dropout before
// 12 and Softmax before 13 are converted in their older forms.
void AddMathConverters(ConverterTable& table) {
  Register(table, "Add", Binary<kAdd>, 7);
  Register(table, "Sub", Binary<kSub>, 7);
  Register(table, "Mul", Binary<kMul>, 7);
  Register(table, "Div", Binary<kDiv>, 7);
  Register(table, "Pow", Pow, 7);
  Register(table, "Equal", Binary<kEqual>, 7);
  Register(table, "Less", Binary<kLess>, 7);
  Register(table, "Greater", Binary<kGreater>, 7);
  Register(table, "LessOrEqual", Binary<kLessEqual>, 12);
  Register(table, "GreaterOrEqual", Binary<kGreaterEqual>, 12);
  Register(table, "Max", Variadic<kMax>, 8);
  Register(table, "Min", Variadic<kMin>, 8);
  Register(table, "Sum", Variadic<kAdd>, 8);
  Register(table, "Mean", Mean, 8);
  Register(table, "Relu", Unary<kRelu>, 6);
  Register(table, "Sigmoid", Unary<kSigmoid>, 6);
  Register(table, "Tanh", Unary<kTanh>, 6);
  Register(table, "Exp", Unary<kExp>, 6);
  Register(table, "Log", Unary<kLog>, 6);
  Register(table, "Sqrt", Unary<kSqrt>, 6);
  Register(table, "Erf", Unary<kErf>, 9);
  Register(table, "Abs", Unary<kAbs>, 6);
  Register(table, "Neg", Unary<kNeg>, 6);
  Register(table, "Floor", Unary<kFloor>, 6);
  Register(table, "Ceil", Unary<kCeil>, 6);
  Register(table, "Round", Unary<kRound>, 11);
  Register(table, "Reciprocal", Reciprocal, 6);
  Register(table, "Sin", Unary<kSin>, 7);
  Register(table, "Cos", Unary<kCos>, 7);
  Register(table, "Tan", Unary<kTan>, 7);
  Register(table, "Asin", Unary<kAsin>, 7);
  Register(table, "Acos", Unary<kAcos>, 7);
  Register(table, "Atan", Unary<kAtan>, 7);
  Register(table, "Sinh", Unary<kSinh>, 9);
  Register(table, "Cosh", Unary<kCosh>, 9);
  Register(table, "Asinh", Unary<kAsinh>, 9);
  Register(table, "Acosh", Unary<kAcosh>, 9);
  Register(table, "Atanh", Unary<kAtanh>, 9);
  Register(table, "Softplus", Unary<kSoftplus>, 1);
  Register(table, "Softsign", Unary<kSoftsign>, 1);
  Register(table, "HardSwish", Unary<kHardSwish>, 14);
  Register(table, "Elu", Elu, 6);
  Register(table, "Selu", Selu, 6);
  Register(table, "Celu", Celu, 12);
  Register(table, "ThresholdedRelu", ThresholdedRelu, 10);
  Register(table, "LeakyRelu", LeakyRelu, 6);
  Register(table, "HardSigmoid", HardSigmoid, 6);
  Register(table, "Clip", Clip, 6);
  Register(table, "Cast", Cast, 6);
  Register(table, "CastLike", CastLike, 15);
  Register(table, "Det", Det, 11);
  Register(table, "Where", Where, 9);
  Register(table, "Identity", Identity, 1);
  Register(table, "Dropout", Dropout, 7);
  Register(table, "Softmax", Softmax, 1);
  Register(table, "LogSoftmax", LogSoftmax, 1);
  Register(table, "And", Binary<kAnd>, 7);
  Register(table, "Or", Binary<kOr>, 7);
  Register(table, "Xor", Binary<kXor>, 7);
  Register(table, "Not", Unary<kNot>, 1);
  Register(table, "IsNaN", IsNaN, 9);
  Register(table, "IsInf", IsInf, 10);
  Register(table, "Sign", Sign, 9);
  Register(table, "Mod", Mod, 10);
  Register(table, "PRelu", PRelu, 7);
  Register(table, "Mish", Mish, 18);
  Register(table, "Gelu", Gelu, 20);
  Register(table, "Shrink", Shrink, 9);
  Register(table, "BitShift", BitShift, 11);
  Register(table, "BitwiseAnd", Binary<kBitwiseAnd>, 18);
  Register(table, "BitwiseOr", Binary<kBitwiseOr>, 18);
  Register(table, "BitwiseXor", Binary<kBitwiseXor>, 18);
  Register(table, "BitwiseNot", Unary<kBitwiseNot>, 18);
}

}  // namespace kiln::frontend
