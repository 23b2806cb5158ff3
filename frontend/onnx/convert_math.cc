// ONNX elementwise ops: arithmetic, comparisons, activations, Clip, Cast, Where, Softmax.
#include <cmath>

#include "frontend/onnx/converter.h"
#include "runtime/error.h"

namespace kiln::frontend {

using namespace ir;

namespace {

// The IR ops these converters make.
const OpRef kAbs("abs");
const OpRef kAdd("add");
const OpRef kCast("cast");
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
const OpRef kLess("less");
const OpRef kLessEqual("less_equal");
const OpRef kLog("log");
const OpRef kMax("maximum");
const OpRef kMin("minimum");
const OpRef kMul("multiply");
const OpRef kNeg("negative");
const OpRef kPower("power");
const OpRef kRelu("nn.relu");
const OpRef kReshape("reshape");
const OpRef kRound("round");
const OpRef kSigmoid("sigmoid");
const OpRef kSoftmax("nn.softmax");
const OpRef kSqrt("sqrt");
const OpRef kSub("subtract");
const OpRef kTanh("tanh");
const OpRef kWhere("where");

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

Expr ScalarLike(const Expr& like, double value) {
  runtime::NDArray a = runtime::NDArray::Empty({}, like->type().tensor().dtype);
  DLDataType d = a.dtype();
  if (d.code == kDLFloat && d.bits == 32) *static_cast<float*>(a.data()) = static_cast<float>(value);
  else if (d.code == kDLFloat && d.bits == 64) *static_cast<double*>(a.data()) = value;
  else if (d.code == kDLInt && d.bits == 64) *static_cast<int64_t*>(a.data()) = static_cast<int64_t>(value);
  else if (d.code == kDLInt && d.bits == 32) *static_cast<int32_t*>(a.data()) = static_cast<int32_t>(value);
  else runtime::Fail("cannot make a scalar of dtype ", runtime::DTypeToString(d));
  return Constant(a);
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
  } else {
    if (c.has_input(1)) lo = c.ConstantScalar(1);
    if (c.has_input(2)) hi = c.ConstantScalar(2);
  }
  return {c.Op(kClip, {c.input(0)}, MakeAttrs({{"a_min", lo}, {"a_max", hi}}))};
}

Outputs Cast(const NodeContext& c) {
  DLDataType to = OnnxDType(static_cast<int32_t>(c.attr_int("to")));
  if (to == c.input_type(0).dtype) return {c.input(0)};
  return {c.Op(kCast, {c.input(0)}, MakeAttrs({{"dtype", runtime::DTypeToString(to)}}))};
}

Outputs Where(const NodeContext& c) { return {c.Op(kWhere, {c.input(0), c.input(1), c.input(2)})}; }

Outputs Identity(const NodeContext& c) { return {c.input(0)}; }

Outputs Dropout(const NodeContext& c) {
  if (c.num_outputs() > 1) c.Fail("the mask output of Dropout is not supported (inference only)");
  double ratio = 0.5;
  if (c.opset() >= 12 && c.has_input(1)) ratio = c.ConstantScalar(1);
  if (c.opset() < 12) ratio = c.attr_float("ratio", 0.5f);
  return {c.Op(kDropout, {c.input(0)}, MakeAttrs({{"rate", ratio}}))};
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

}  // namespace

void AddMathConverters(ConverterTable& table) {
  Register(table, "Add", Binary<kAdd>);
  Register(table, "Sub", Binary<kSub>);
  Register(table, "Mul", Binary<kMul>);
  Register(table, "Div", Binary<kDiv>);
  Register(table, "Pow", Pow);
  Register(table, "Equal", Binary<kEqual>);
  Register(table, "Less", Binary<kLess>);
  Register(table, "Greater", Binary<kGreater>);
  Register(table, "LessOrEqual", Binary<kLessEqual>);
  Register(table, "GreaterOrEqual", Binary<kGreaterEqual>);
  Register(table, "Max", Variadic<kMax>);
  Register(table, "Min", Variadic<kMin>);
  Register(table, "Sum", Variadic<kAdd>);
  Register(table, "Mean", Mean);
  Register(table, "Relu", Unary<kRelu>);
  Register(table, "Sigmoid", Unary<kSigmoid>);
  Register(table, "Tanh", Unary<kTanh>);
  Register(table, "Exp", Unary<kExp>);
  Register(table, "Log", Unary<kLog>);
  Register(table, "Sqrt", Unary<kSqrt>);
  Register(table, "Erf", Unary<kErf>);
  Register(table, "Abs", Unary<kAbs>);
  Register(table, "Neg", Unary<kNeg>);
  Register(table, "Floor", Unary<kFloor>);
  Register(table, "Ceil", Unary<kCeil>);
  Register(table, "Round", Unary<kRound>);
  Register(table, "Reciprocal", Reciprocal);
  Register(table, "LeakyRelu", LeakyRelu);
  Register(table, "HardSigmoid", HardSigmoid);
  Register(table, "Clip", Clip);
  Register(table, "Cast", Cast);
  Register(table, "Where", Where);
  Register(table, "Identity", Identity);
  Register(table, "Dropout", Dropout);
  Register(table, "Softmax", Softmax);
}

}  // namespace kiln::frontend
