// ONNX elementwise ops: arithmetic, comparisons, activations, Clip, Cast, Where, Softmax.
#include <cmath>

#include "frontend/onnx/converter.h"
#include "runtime/error.h"

namespace kiln::frontend {

using namespace ir;

namespace {

using Outputs = std::vector<Expr>;

template <const char* kOp>
Outputs Binary(const NodeContext& c) {
  return {c.Op(kOp, {c.input(0), c.input(1)})};
}

template <const char* kOp>
Outputs Unary(const NodeContext& c) {
  return {c.Op(kOp, {c.input(0)})};
}

// Max, Min, Sum, Mean: variadic with broadcasting.
template <const char* kOp>
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

constexpr char kAdd[] = "add", kSub[] = "subtract", kMul[] = "multiply", kDiv[] = "divide", kMax[] = "maximum",
               kMin[] = "minimum", kEqual[] = "equal", kLess[] = "less", kGreater[] = "greater",
               kLessEqual[] = "less_equal", kGreaterEqual[] = "greater_equal", kRelu[] = "nn.relu",
               kSigmoid[] = "sigmoid", kTanh[] = "tanh", kExp[] = "exp", kLog[] = "log", kSqrt[] = "sqrt",
               kErf[] = "erf", kAbs[] = "abs", kNeg[] = "negative", kFloor[] = "floor", kCeil[] = "ceil",
               kRound[] = "round";

Outputs Pow(const NodeContext& c) {
  Expr exponent = c.input(1);
  if (exponent->type().tensor().dtype != c.input_type(0).dtype) {
    exponent = c.Op("cast", {exponent}, MakeAttrs({{"dtype", runtime::DTypeToString(c.input_type(0).dtype)}}));
  }
  return {c.Op("power", {c.input(0), exponent})};
}

Outputs Mean(const NodeContext& c) {
  Expr sum = Variadic<kAdd>(c)[0];
  return {c.Op("divide", {sum, ScalarLike(sum, static_cast<double>(c.num_inputs()))})};
}

Outputs Reciprocal(const NodeContext& c) { return {c.Op("divide", {ScalarLike(c.input(0), 1.0), c.input(0)})}; }

Outputs LeakyRelu(const NodeContext& c) {
  return {c.Op("nn.leaky_relu", {c.input(0)}, MakeAttrs({{"alpha", double{c.attr_float("alpha", 0.01f)}}}))};
}

Outputs HardSigmoid(const NodeContext& c) {
  Expr x = c.input(0);
  Expr scaled = c.Op("add", {c.Op("multiply", {x, ScalarLike(x, c.attr_float("alpha", 0.2f))}),
                             ScalarLike(x, c.attr_float("beta", 0.5f))});
  return {c.Op("clip", {scaled}, MakeAttrs({{"a_min", 0.0}, {"a_max", 1.0}}))};
}

Outputs Clip(const NodeContext& c) {
  double lo = -INFINITY, hi = INFINITY;
  if (c.opset() < 11) {
    lo = c.attr_float("min", -INFINITY);
    hi = c.attr_float("max", INFINITY);
  } else {
    if (c.has_input(1)) lo = c.ConstantFloats(1).at(0);
    if (c.has_input(2)) hi = c.ConstantFloats(2).at(0);
  }
  return {c.Op("clip", {c.input(0)}, MakeAttrs({{"a_min", lo}, {"a_max", hi}}))};
}

Outputs Cast(const NodeContext& c) {
  DLDataType to = OnnxDType(static_cast<int32_t>(c.attr_int("to")));
  if (to == c.input_type(0).dtype) return {c.input(0)};
  return {c.Op("cast", {c.input(0)}, MakeAttrs({{"dtype", runtime::DTypeToString(to)}}))};
}

Outputs Where(const NodeContext& c) { return {c.Op("where", {c.input(0), c.input(1), c.input(2)})}; }

Outputs Identity(const NodeContext& c) { return {c.input(0)}; }

Outputs Dropout(const NodeContext& c) {
  if (c.num_outputs() > 1) c.Fail("the mask output of Dropout is not supported (inference only)");
  double ratio = 0.5;
  if (c.opset() >= 12 && c.has_input(1)) ratio = c.ConstantFloats(1).at(0);
  if (c.opset() < 12) ratio = c.attr_float("ratio", 0.5f);
  return {c.Op("nn.dropout", {c.input(0)}, MakeAttrs({{"rate", ratio}}))};
}

Outputs Softmax(const NodeContext& c) {
  const TensorType& t = c.input_type(0);
  int64_t axis = NormalizeAxis(c.attr_int("axis", c.opset() >= 13 ? -1 : 1), t.ndim(), c);
  if (c.opset() >= 13 || axis == t.ndim() - 1) {
    return {c.Op("nn.softmax", {c.input(0)}, MakeAttrs({{"axis", axis}}))};
  }
  // Before opset 13 Softmax works on the input flattened to 2-D at `axis`.
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < t.ndim(); ++d) (d < axis ? rows : cols) *= t.shape[d];
  Expr flat = c.Op("reshape", {c.input(0)}, MakeAttrs({{"newshape", std::vector<int64_t>{rows, cols}}}));
  Expr soft = c.Op("nn.softmax", {flat}, MakeAttrs({{"axis", int64_t{1}}}));
  return {c.Op("reshape", {soft}, MakeAttrs({{"newshape", t.shape}}))};
}

}  // namespace

void AddMathConverters(std::map<std::string, Converter>& table) {
  table["Add"] = Binary<kAdd>;
  table["Sub"] = Binary<kSub>;
  table["Mul"] = Binary<kMul>;
  table["Div"] = Binary<kDiv>;
  table["Pow"] = Pow;
  table["Equal"] = Binary<kEqual>;
  table["Less"] = Binary<kLess>;
  table["Greater"] = Binary<kGreater>;
  table["LessOrEqual"] = Binary<kLessEqual>;
  table["GreaterOrEqual"] = Binary<kGreaterEqual>;
  table["Max"] = Variadic<kMax>;
  table["Min"] = Variadic<kMin>;
  table["Sum"] = Variadic<kAdd>;
  table["Mean"] = Mean;
  table["Relu"] = Unary<kRelu>;
  table["Sigmoid"] = Unary<kSigmoid>;
  table["Tanh"] = Unary<kTanh>;
  table["Exp"] = Unary<kExp>;
  table["Log"] = Unary<kLog>;
  table["Sqrt"] = Unary<kSqrt>;
  table["Erf"] = Unary<kErf>;
  table["Abs"] = Unary<kAbs>;
  table["Neg"] = Unary<kNeg>;
  table["Floor"] = Unary<kFloor>;
  table["Ceil"] = Unary<kCeil>;
  table["Round"] = Unary<kRound>;
  table["Reciprocal"] = Reciprocal;
  table["LeakyRelu"] = LeakyRelu;
  table["HardSigmoid"] = HardSigmoid;
  table["Clip"] = Clip;
  table["Cast"] = Cast;
  table["Where"] = Where;
  table["Identity"] = Identity;
  table["Dropout"] = Dropout;
  table["Softmax"] = Softmax;
}

}  // namespace kiln::frontend
