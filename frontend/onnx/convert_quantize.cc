// ONNX's linear quantization, composed of elementwise ops: QuantizeLinear, DequantizeLinear (per
// tensor and per axis; uint8, int8, and from opset 21 uint16 and int16) and DynamicQuantizeLinear;
// and MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv, whose sums run on int32. In a QDQ model the ops between
// them then run in float32 on the dequantized values, which gives the integer results of ONNX
// Runtime's fused integer kernels or differs from them by one step of the scale.
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
const OpRef kDivide("divide");
const OpRef kEqual("equal");
const OpRef kMax("max");
const OpRef kMaximum("maximum");
const OpRef kMin("min");
const OpRef kMinimum("minimum");
const OpRef kMultiply("multiply");
const OpRef kReshape("reshape");
const OpRef kRound("round");
const OpRef kSubtract("subtract");
const OpRef kTranspose("transpose");
const OpRef kWhere("where");

using Outputs = std::vector<Expr>;
using Ints = std::vector<int64_t>;

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
  c.FailAt(StrCat("input ", input), "quantized values of dtype " + runtime::DTypeToString(dtype) +
                                        " are not supported (8- or 16-bit integers, or float8)");
}

// y = saturate(round(x / scale) + zero_point), halves to even; to float8 (whose zero point is 0),
// x / scale cast to it, saturating unless the node says otherwise.
Outputs QuantizeLinear(const NodeContext& c) {
  const TensorType& x = c.input_type(0);
  DLDataType out = c.has_input(2) ? c.input_type(2).dtype : DLDataType{kDLUInt, 8, 1};
  Expr scale = AlongAxis(c, CastTo(c, c.input(1), x.dtype), 1);
  if (runtime::IsFloat8(out)) {
    return {c.Op(kCast, {c.Op(kDivide, {c.input(0), scale})},
                 MakeAttrs({{"dtype", runtime::DTypeToString(out)}, {"saturate", c.attr_int("saturate", 1)}}))};
  }
  auto [lo, hi] = Range(c, out, 2);
  Expr y = c.Op(kRound, {c.Op(kDivide, {c.input(0), scale})});
  if (c.has_input(2)) y = c.Op(kAdd, {y, AlongAxis(c, CastTo(c, c.input(2), x.dtype), 2)});
  return {CastTo(c, c.Op(kClip, {y}, MakeAttrs({{"a_min", lo}, {"a_max", hi}})), out)};
}

// y = (x - zero_point) * scale.
Outputs DequantizeLinear(const NodeContext& c) {
  const TensorType& x = c.input_type(0);
  DLDataType real = c.input_type(1).dtype;
  if (x.dtype != DLDataType{kDLInt, 32, 1} && !runtime::IsFloat8(x.dtype)) Range(c, x.dtype, 0);
  Expr y = CastTo(c, c.input(0), real);
  if (c.has_input(2)) y = c.Op(kSubtract, {y, AlongAxis(c, CastTo(c, c.input(2), real), 2)});
  return {c.Op(kMultiply, {y, AlongAxis(c, c.input(1), 1)})};
}

}  // namespace

DynamicQuantization DynamicQuantizationOf(const NodeContext& c, const Expr& x) {
  Attrs all = MakeAttrs({{"axis", Ints{}}, {"keepdims", int64_t{0}}});
  Expr zero = ScalarLike(x, 0.0);
  Expr high = c.Op(kMaximum, {c.Op(kMax, {x}, all), zero}), low = c.Op(kMinimum, {c.Op(kMin, {x}, all), zero});
  Expr range = c.Op(kSubtract, {high, low});
  Expr scale = c.Op(kWhere, {c.Op(kEqual, {range, zero}), ScalarLike(x, 1.0), c.Op(kDivide, {range, ScalarLike(x, 255.0)})});
  Attrs to_uint8 = MakeAttrs({{"a_min", 0.0}, {"a_max", 255.0}});
  Expr zero_point = c.Op(kClip, {c.Op(kRound, {c.Op(kSubtract, {zero, c.Op(kDivide, {low, scale})})})}, to_uint8);
  Expr levels = c.Op(kAdd, {c.Op(kRound, {c.Op(kDivide, {x, scale})}), zero_point});
  return {c.Op(kClip, {levels}, to_uint8), scale, zero_point};
}

namespace {

// DynamicQuantizeLinear: uint8 y, its scale and zero point, as DynamicQuantizationOf computes them.
Outputs DynamicQuantizeLinear(const NodeContext& c) {
  DynamicQuantization q = DynamicQuantizationOf(c, c.input(0));
  DLDataType uint8{kDLUInt, 8, 1};
  return {CastTo(c, q.levels, uint8), q.scale, CastTo(c, q.zero_point, uint8)};
}

// A matrix product's zero point or scale (input `input`, of operand `operand`) as it broadcasts
// against the operand: a scalar, or one value per row of A (its next-to-last axis) or per column
// of B (its last axis). Zero points become int32.
Expr MatMulOperandParam(const NodeContext& c, size_t input, size_t operand, bool rows) {
  const TensorType& t = c.input_type(input);
  const TensorType& x = c.input_type(operand);
  bool zero_point = t.dtype.code != kDLFloat;
  if (zero_point && t.dtype != x.dtype) {
    c.FailAt(StrCat("input ", input), StrCat("is ", runtime::DTypeToString(t.dtype), " but its operand is ",
                                             runtime::DTypeToString(x.dtype)));
  }
  Expr z = zero_point ? CastTo(c, c.input(input), DLDataType{kDLInt, 32, 1}) : c.input(input);
  if (t.NumElements() == 1) return c.Op(kReshape, {z}, MakeAttrs({{"newshape", Ints{}}}));
  int64_t count = x.ndim() < 2 ? 0 : x.shape[x.ndim() - (rows ? 2 : 1)];
  if (t.NumElements() != count) {
    c.FailAt(StrCat("input ", input), StrCat("must hold one value or one per ", rows ? "row" : "column", " (",
                                             count, "), it holds ", t.NumElements()));
  }
  return c.Op(kReshape, {z}, MakeAttrs({{"newshape", rows ? Ints{count, 1} : Ints{count}}}));
}

// MatMulInteger: (A - a_zero_point) x (B - b_zero_point), 8-bit operands, in int32 throughout.
Outputs MatMulInteger(const NodeContext& c) {
  DLDataType int32{kDLInt, 32, 1};
  Range(c, c.input_type(0).dtype, 0);
  Range(c, c.input_type(1).dtype, 1);
  Expr a = CastTo(c, c.input(0), int32), b = CastTo(c, c.input(1), int32);
  if (c.has_input(2)) a = c.Op(kSubtract, {a, MatMulOperandParam(c, 2, 0, true)});
  if (c.has_input(3)) b = c.Op(kSubtract, {b, MatMulOperandParam(c, 3, 1, false)});
  return {MatMulOf(c, a, b)};
}

// The float32 value of scalar input i (a scale or a zero point).
Expr ScalarInput(const NodeContext& c, size_t i) {
  if (c.input_type(i).NumElements() != 1) c.FailAt(StrCat("input ", i), "must hold one value");
  return CastTo(c, c.Op(kReshape, {c.input(i)}, MakeAttrs({{"newshape", Ints{}}})), DLDataType{kDLFloat, 32, 1});
}

// The QLinear ops' requantization of an int32 sum, as ONNX Runtime does it:
// saturate(round(sum * (input_scale * weight_scale / y_scale)) + y_zero_point), halves to even;
// y_scale and y_zero_point are inputs `y_scale` and `y_scale` + 1 (6 and 7 of QLinearConv and
// QLinearMatMul, 7 and 8 of QGemm).
Expr Requantize(const NodeContext& c, const Expr& sum, const Expr& input_times_weight_scale, size_t y_scale = 6) {
  DLDataType out = c.input_type(y_scale + 1).dtype;
  auto [lo, hi] = Range(c, out, y_scale + 1);
  Expr multiplier = c.Op(kDivide, {input_times_weight_scale, ScalarInput(c, y_scale)});
  Expr y = c.Op(kRound, {c.Op(kMultiply, {CastTo(c, sum, DLDataType{kDLFloat, 32, 1}), multiplier})});
  y = c.Op(kAdd, {y, ScalarInput(c, y_scale + 1)});
  return CastTo(c, c.Op(kClip, {y}, MakeAttrs({{"a_min", lo}, {"a_max", hi}})), out);
}

// QLinearMatMul: the int32 product of (a - a_zero_point) and (b - b_zero_point), requantized.
Outputs QLinearMatMul(const NodeContext& c) {
  DLDataType int32{kDLInt, 32, 1}, float32{kDLFloat, 32, 1};
  Range(c, c.input_type(0).dtype, 0);
  Range(c, c.input_type(3).dtype, 3);
  Expr a = c.Op(kSubtract, {CastTo(c, c.input(0), int32), MatMulOperandParam(c, 2, 0, true)});
  Expr b = c.Op(kSubtract, {CastTo(c, c.input(3), int32), MatMulOperandParam(c, 5, 3, false)});
  Expr scale_ab = c.Op(kMultiply, {CastTo(c, MatMulOperandParam(c, 1, 0, true), float32),
                                   CastTo(c, MatMulOperandParam(c, 4, 3, false), float32)});
  return {Requantize(c, MatMulOf(c, a, b), scale_ab)};
}

// A convolution weight's zero point or scale: one value, or one per output channel (shaped to
// broadcast against a `rank`-D weight [OC, C, k...] or output [N, OC, spatial...]: [OC, 1...]).
Expr PerOutputChannel(const NodeContext& c, size_t input, size_t weight, int64_t rank) {
  const TensorType& t = c.input_type(input);
  Expr v = t.dtype.code == kDLFloat ? c.input(input) : CastTo(c, c.input(input), DLDataType{kDLInt, 32, 1});
  if (t.NumElements() == 1) return c.Op(kReshape, {v}, MakeAttrs({{"newshape", Ints{}}}));
  if (c.input_type(weight).ndim() < 1) c.FailAt(StrCat("input ", weight), "the weight must have an output-channel axis");
  int64_t channels = c.input_type(weight).shape[0];
  if (t.NumElements() != channels) {
    c.FailAt(StrCat("input ", input), StrCat("must hold one value or one per output channel (", channels, "), it holds ",
                                             t.NumElements()));
  }
  Ints shape(static_cast<size_t>(rank), 1);
  shape[0] = channels;
  return c.Op(kReshape, {v}, MakeAttrs({{"newshape", shape}}));
}

// (x - x_zero_point) convolved with (w - w_zero_point) on int32.
Expr IntegerConv(const NodeContext& c, size_t x, size_t x_zero_point, size_t w, size_t w_zero_point) {
  DLDataType int32{kDLInt, 32, 1};
  Range(c, c.input_type(x).dtype, x);
  Range(c, c.input_type(w).dtype, w);
  Expr data = CastTo(c, c.input(x), int32), weight = CastTo(c, c.input(w), int32);
  if (c.has_input(x_zero_point)) {
    if (c.input_type(x_zero_point).NumElements() != 1) {
      c.FailAt(StrCat("input ", x_zero_point), "the input's zero point must hold one value");
    }
    data = c.Op(kSubtract, {data, c.Op(kReshape, {CastTo(c, c.input(x_zero_point), int32)},
                                        MakeAttrs({{"newshape", Ints{}}}))});
  }
  if (c.has_input(w_zero_point)) {
    weight = c.Op(kSubtract, {weight, PerOutputChannel(c, w_zero_point, w, c.input_type(w).ndim())});
  }
  return ConvOf(c, data, weight);
}

// ConvInteger: the int32 convolution of the zero-point-shifted 8-bit operands.
Outputs ConvInteger(const NodeContext& c) { return {IntegerConv(c, 0, 2, 1, 3)}; }

// QLinearConv: the int32 convolution plus the int32 bias, requantized.
Outputs QLinearConv(const NodeContext& c) {
  Expr sum = IntegerConv(c, 0, 2, 3, 5);
  int64_t spatial = sum->type().tensor().ndim() - 2;  // the output's channel values broadcast as [OC, 1...]
  if (c.has_input(8)) {
    Ints shape(static_cast<size_t>(spatial + 1), 1);
    shape[0] = c.input_type(8).NumElements();
    sum = c.Op(kAdd, {sum, c.Op(kReshape, {CastTo(c, c.input(8), DLDataType{kDLInt, 32, 1})},
                                MakeAttrs({{"newshape", shape}}))});
  }
  Expr scale = c.Op(kMultiply, {ScalarInput(c, 1), CastTo(c, PerOutputChannel(c, 4, 3, spatial + 1),
                                                          DLDataType{kDLFloat, 32, 1})});
  return {Requantize(c, sum, scale)};
}

}  // namespace

Expr CastTo(const NodeContext& c, const Expr& x, DLDataType dtype) {
  if (x->type().tensor().dtype == dtype) return x;
  return c.Op(kCast, {x}, MakeAttrs({{"dtype", runtime::DTypeToString(dtype)}}));
}

// QGemm (ONNX Runtime's, which its QDQ transformer makes of DequantizeLinear -> Gemm ->
// QuantizeLinear): A, a_scale, a_zero_point, B, b_scale, b_zero_point, C (int32 bias or none),
// y_scale, y_zero_point; B [K, N], or [N, K] with transB (per-column scales and zero points).
Outputs QGemm(const NodeContext& c) {
  DLDataType int32{kDLInt, 32, 1}, float32{kDLFloat, 32, 1};
  if (c.attr_int("transA", 0) != 0 || c.attr_float("alpha", 1.0f) != 1.0f) c.Fail("needs transA = 0 and alpha = 1");
  Range(c, c.input_type(0).dtype, 0);
  Range(c, c.input_type(3).dtype, 3);
  Expr a = c.Op(kSubtract, {CastTo(c, c.input(0), int32), MatMulOperandParam(c, 2, 0, true)});
  Expr b = CastTo(c, c.input(3), int32);
  if (c.attr_int("transB", 0) != 0) b = c.Op(kTranspose, {b}, MakeAttrs({{"axes", Ints{1, 0}}}));
  // B's parameters per column of B as the product takes it ([K, N]).
  auto per_column = [&](size_t input) {
    const TensorType& t = c.input_type(input);
    int64_t columns = b->type().tensor().shape.back();
    if (t.NumElements() != 1 && t.NumElements() != columns) {
      c.FailAt(StrCat("input ", input), StrCat("must hold one value or one per column (", columns, ")"));
    }
    return c.Op(kReshape, {c.input(input)}, MakeAttrs({{"newshape", t.NumElements() == 1 ? Ints{} : Ints{columns}}}));
  };
  b = c.Op(kSubtract, {b, CastTo(c, per_column(5), int32)});
  Expr sum = MatMulOf(c, a, b);
  if (c.has_input(6)) sum = c.Op(kAdd, {sum, CastTo(c, c.input(6), int32)});
  Expr scale = c.Op(kMultiply, {ScalarInput(c, 1), CastTo(c, per_column(4), float32)});
  return {Requantize(c, sum, scale, 7)};
}

void AddQuantizeConverters(ConverterTable& table) {
  Register(table, "QuantizeLinear", QuantizeLinear, 10);
  Register(table, "DequantizeLinear", DequantizeLinear, 10);
  Register(table, "DynamicQuantizeLinear", DynamicQuantizeLinear, 11);
  Register(table, "MatMulInteger", MatMulInteger, 10);
  Register(table, "QLinearMatMul", QLinearMatMul, 10);
  Register(table, "ConvInteger", ConvInteger, 10);
  Register(table, "QLinearConv", QLinearConv, 10);
}

}  // namespace kiln::frontend
