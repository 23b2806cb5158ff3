// ONNX's linear quantization, composed of elementwise ops: QuantizeLinear, DequantizeLinear (per
// tensor and per axis; uint8, int8, and from opset 21 uint16 and int16) and DynamicQuantizeLinear. In a QDQ model the ops between
// them then run in float32 on the dequantized values, which gives the integer results of ONNX
// Runtime's fused integer kernels or differs from them by one step of the scale.
#include "frontend/onnx/converter.h"
#include "runtime/error.h"

namespace kiln::frontend {

using namespace ir;
using runtime::StrCat;

namespace {

const OpRef kAdd("add");
const OpRef kCast("cast");
const OpRef kClip("clip");
const OpRef kDivide("divide");
const OpRef kMax("max");
const OpRef kMaximum("maximum");
const OpRef kMin("min");
const OpRef kMinimum("minimum");
const OpRef kMultiply("multiply");
const OpRef kReshape("reshape");
const OpRef kRound("round");
const OpRef kSubtract("subtract");

using Outputs = std::vector<Expr>;
using Ints = std::vector<int64_t>;

Expr CastTo(const NodeContext& c, const Expr& x, DLDataType dtype) {
  if (x->type().tensor().dtype == dtype) return x;
  return c.Op(kCast, {x}, MakeAttrs({{"dtype", runtime::DTypeToString(dtype)}}));
}

// A scale or zero point as it broadcasts against x: a scalar (per tensor) as it is, a vector (per
// axis: one value per channel of the `axis` attribute) reshaped to lie along that axis.
Expr AlongAxis(const NodeContext& c, const Expr& v, size_t input) {
  const TensorType& t = v->type().tensor();
  if (t.NumElements() == 1 && t.ndim() <= 1) return t.ndim() == 0 ? v : c.Op(kReshape, {v}, MakeAttrs({{"newshape", Ints{}}}));
  const TensorType& x = c.input_type(0);
  if (c.opset() >= 21 && c.attr_int("block_size", 0) != 0) c.FailAt("attribute 'block_size'", "blocks are not supported");
  int64_t axis = NormalizeAxis(c.attr_int("axis", 1), x.ndim(), c);
  if (t.ndim() != 1 || t.shape[0] != x.shape[axis]) {
    c.FailAt(StrCat("input ", input), StrCat("must hold one value or one per channel of axis ", axis, " (",
                                             x.shape[axis], "), got ", ShapeText(t.shape)));
  }
  Ints shape(x.ndim(), 1);
  shape[axis] = x.shape[axis];
  return c.Op(kReshape, {v}, MakeAttrs({{"newshape", shape}}));
}

// The integer range of a quantized dtype (8 or 16 bits; 16 from opset 21).
std::pair<double, double> Range(const NodeContext& c, DLDataType dtype, size_t input) {
  if (dtype == DLDataType{kDLUInt, 8, 1}) return {0.0, 255.0};
  if (dtype == DLDataType{kDLInt, 8, 1}) return {-128.0, 127.0};
  if (dtype == DLDataType{kDLUInt, 16, 1}) return {0.0, 65535.0};
  if (dtype == DLDataType{kDLInt, 16, 1}) return {-32768.0, 32767.0};
  c.FailAt(StrCat("input ", input), "quantized values must be 8- or 16-bit integers, got " + runtime::DTypeToString(dtype));
}

// y = saturate(round(x / scale) + zero_point), halves to even.
Outputs QuantizeLinear(const NodeContext& c) {
  const TensorType& x = c.input_type(0);
  DLDataType out = c.has_input(2) ? c.input_type(2).dtype : DLDataType{kDLUInt, 8, 1};
  auto [lo, hi] = Range(c, out, 2);
  Expr scale = AlongAxis(c, CastTo(c, c.input(1), x.dtype), 1);
  Expr y = c.Op(kRound, {c.Op(kDivide, {c.input(0), scale})});
  if (c.has_input(2)) y = c.Op(kAdd, {y, AlongAxis(c, CastTo(c, c.input(2), x.dtype), 2)});
  return {CastTo(c, c.Op(kClip, {y}, MakeAttrs({{"a_min", lo}, {"a_max", hi}})), out)};
}

// y = (x - zero_point) * scale.
Outputs DequantizeLinear(const NodeContext& c) {
  const TensorType& x = c.input_type(0);
  DLDataType real = c.input_type(1).dtype;
  if (x.dtype != DLDataType{kDLInt, 32, 1}) Range(c, x.dtype, 0);
  Expr y = CastTo(c, c.input(0), real);
  if (c.has_input(2)) y = c.Op(kSubtract, {y, AlongAxis(c, CastTo(c, c.input(2), real), 2)});
  return {c.Op(kMultiply, {y, AlongAxis(c, c.input(1), 1)})};
}

// uint8 y, scale = (max(0, max x) - min(0, min x)) / 255, zero_point = saturate(round(-min / scale)).
Outputs DynamicQuantizeLinear(const NodeContext& c) {
  Expr x = c.input(0);
  Attrs all = MakeAttrs({{"axis", Ints{}}, {"keepdims", int64_t{0}}});
  Expr zero = ScalarLike(x, 0.0);
  Expr high = c.Op(kMaximum, {c.Op(kMax, {x}, all), zero}), low = c.Op(kMinimum, {c.Op(kMin, {x}, all), zero});
  Expr scale = c.Op(kDivide, {c.Op(kSubtract, {high, low}), ScalarLike(x, 255.0)});
  Attrs to_uint8 = MakeAttrs({{"a_min", 0.0}, {"a_max", 255.0}});
  Expr zero_point_real = c.Op(kClip, {c.Op(kRound, {c.Op(kSubtract, {zero, c.Op(kDivide, {low, scale})})})}, to_uint8);
  Expr y = c.Op(kAdd, {c.Op(kRound, {c.Op(kDivide, {x, scale})}), zero_point_real});
  DLDataType uint8{kDLUInt, 8, 1};
  return {CastTo(c, c.Op(kClip, {y}, to_uint8), uint8), scale, CastTo(c, zero_point_real, uint8)};
}

}  // namespace

void AddQuantizeConverters(ConverterTable& table) {
  Register(table, "QuantizeLinear", QuantizeLinear, 10);
  Register(table, "DequantizeLinear", DequantizeLinear, 10);
  Register(table, "DynamicQuantizeLinear", DynamicQuantizeLinear, 11);
}

}  // namespace kiln::frontend
