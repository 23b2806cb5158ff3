// ONNX Runtime's quantized ops (com.microsoft) of QOperator-format models: QGemm, and the QLinear
// ops composed as their QDQ twins import (dequantize the inputs, ONNX's float op, quantize the
// output: round half to even, saturate); and quantize_dynamic's DynamicQuantizeLSTM and
// QEmbedLayerNormalization.
#include "frontend/onnx/converter.h"
#include "runtime/error.h"

namespace kiln::frontend {

using namespace ir;
using runtime::StrCat;

namespace {

const OpRef kCast("cast");
const OpRef kLess("less");
const OpRef kMax("max");
const OpRef kMultiply("multiply");
const OpRef kReshape("reshape");
const OpRef kSubtract("subtract");
const OpRef kTranspose("transpose");
const OpRef kWhere("where");

using Outputs = std::vector<Expr>;
using Ints = std::vector<int64_t>;

// The unfused ops are ONNX's at this opset (QLinearSoftmax's at its `opset` attribute).
constexpr int64_t kUnfusedOpset = 13;

std::vector<Expr> Unfused(const std::string& type, const NodeContext& c, std::vector<Expr> inputs,
                          int64_t opset = kUnfusedOpset) {
  return Converters().at(OpKey{"", type}).convert(NodeContext(c.node(), std::move(inputs), opset));
}

// Input `scale` (and `scale` + 1, the zero point, when given) must hold one value: the QLinear ops
// quantize per tensor.
void RequirePerTensor(const NodeContext& c, size_t scale) {
  for (size_t i : {scale, scale + 1}) {
    if (c.has_input(i) && c.input_type(i).NumElements() != 1) c.FailAt(StrCat("input ", i), "must hold one value");
  }
}

// Input x, quantized with the scale and zero point that follow it, in float32.
Expr Dequantized(const NodeContext& c, size_t x) {
  RequirePerTensor(c, x + 1);
  return Unfused("DequantizeLinear", c, {c.input(x), c.input(x + 1), c.has_input(x + 2) ? c.input(x + 2) : nullptr})[0];
}

// y quantized with inputs `scale` and `scale` + 1 (uint8 when the zero point is absent).
Expr Quantized(const NodeContext& c, const Expr& y, size_t scale) {
  RequirePerTensor(c, scale);
  return Unfused("QuantizeLinear", c, {y, c.input(scale), c.has_input(scale + 1) ? c.input(scale + 1) : nullptr})[0];
}

// QLinearAdd, QLinearMul: A (with scale, zero point), B (with ...), C_scale, C_zero_point.
template <const char* kOp>
Outputs QLinearBinary(const NodeContext& c) {
  return {Quantized(c, Unfused(kOp, c, {Dequantized(c, 0), Dequantized(c, 3)})[0], 6)};
}
constexpr char kAddOp[] = "Add";
constexpr char kMulOp[] = "Mul";

// QLinearSigmoid, QLinearLeakyRelu (alpha), QLinearGlobalAveragePool, QLinearAveragePool (the
// pool's attributes): X (with scale, zero point), Y_scale, Y_zero_point.
template <const char* kOp>
Outputs QLinearUnary(const NodeContext& c) {
  if (c.attr_int("channels_last", 0) != 0) c.FailAt("attribute 'channels_last'", "channels-last data is not supported");
  return {Quantized(c, Unfused(kOp, c, {Dequantized(c, 0)})[0], 3)};
}
constexpr char kSigmoidOp[] = "Sigmoid";
constexpr char kLeakyReluOp[] = "LeakyRelu";
constexpr char kGlobalAveragePoolOp[] = "GlobalAveragePool";
constexpr char kAveragePoolOp[] = "AveragePool";

// QLinearSoftmax: Softmax as ONNX defines it at the node's `opset`.
Outputs QLinearSoftmax(const NodeContext& c) {
  int64_t opset = c.attr_int("opset");
  return {Quantized(c, Unfused("Softmax", c, {Dequantized(c, 0)}, opset)[0], 3)};
}

// QLinearConcat: Y_scale, Y_zero_point, then each input with its scale and zero point.
Outputs QLinearConcat(const NodeContext& c) {
  if (c.num_inputs() < 5 || (c.num_inputs() - 2) % 3 != 0) {
    c.Fail(StrCat("takes Y_scale, Y_zero_point and then (X, scale, zero point) per input; it has ", c.num_inputs(),
                  " inputs"));
  }
  std::vector<Expr> parts;
  for (size_t i = 2; i < c.num_inputs(); i += 3) parts.push_back(Dequantized(c, i));
  return {Quantized(c, Unfused("Concat", c, parts)[0], 0)};
}

// QLinearWhere: condition, X (with scale, zero point), Y (with ...), Z_scale, Z_zero_point.
Outputs QLinearWhere(const NodeContext& c) {
  return {Quantized(c, Unfused("Where", c, {c.input(0), Dequantized(c, 1), Dequantized(c, 4)})[0], 7)};
}

// QGemm with a quantized output (with y_scale); ONNX Runtime's float-output form has none.
Outputs QuantizedGemm(const NodeContext& c) {
  if (!c.has_input(7)) c.FailAt("input 7", "QGemm without y_scale (a float32 output) is not supported");
  return QGemm(c);
}

// A DynamicQuantizeLSTM weight (input `weight`: [directions, rows, 4 * hidden], 8-bit) in float32
// as ONNX's LSTM takes it, [directions, 4 * hidden, rows]: (weight - zero point) * scale, the scale
// and zero point one per direction ([directions]) or per column ([directions, 4 * hidden]).
Expr DequantizedLstmWeight(const NodeContext& c, size_t weight, size_t scale, size_t zero_point) {
  const ir::TensorType& w = c.input_type(weight);
  if (w.ndim() != 3) c.FailAt(StrCat("input ", weight), "must be [directions, rows, 4 * hidden]");
  // Input i as it broadcasts against the weight, in float32.
  auto along_columns = [&](size_t i) {
    const ir::TensorType& t = c.input_type(i);
    bool per_direction = t.shape == Ints{w.shape[0]};
    if (!per_direction && t.shape != Ints{w.shape[0], w.shape[2]}) {
      c.FailAt(StrCat("input ", i), StrCat("must be [", w.shape[0], "] or [", w.shape[0], ", ", w.shape[2], "]"));
    }
    Expr v = c.Op(kReshape, {c.input(i)}, MakeAttrs({{"newshape", Ints{w.shape[0], 1, per_direction ? 1 : w.shape[2]}}}));
    return c.Op(kCast, {v}, MakeAttrs({{"dtype", std::string("float32")}}));
  };
  Expr real = c.Op(kCast, {c.input(weight)}, MakeAttrs({{"dtype", std::string("float32")}}));
  if (c.has_input(zero_point)) real = c.Op(kSubtract, {real, along_columns(zero_point)});
  real = c.Op(kMultiply, {real, along_columns(scale)});
  return c.Op(kTranspose, {real}, MakeAttrs({{"axes", Ints{0, 2, 1}}}));
}

// x after ONNX Runtime's dynamic quantization and back: (levels - zero point) * scale.
Expr DynamicallyQuantized(const NodeContext& c, const Expr& x) {
  DynamicQuantization q = DynamicQuantizationOf(c, x);
  return c.Op(kMultiply, {c.Op(kSubtract, {q.levels, q.zero_point}), q.scale});
}

// DynamicQuantizeLSTM's X as ONNX Runtime quantizes it, once over the steps up to the longest
// sequence (steps past it are zero here: they change neither the range, which holds 0, nor any
// output, which is past every sequence's end there).
Expr QuantizedLstmInput(const NodeContext& c) {
  Expr x = c.input(0);
  if (c.has_input(4)) {
    const ir::TensorType& t = c.input_type(0);
    if (t.ndim() != 3) c.FailAt("input 0", StrCat("must have rank 3, got ", t.ndim()));
    int64_t time_axis = c.attr_int("layout", 0) == 0 ? 0 : 1;
    DLDataType int64{kDLInt, 64, 1};
    runtime::NDArray steps = runtime::NDArray::Empty(time_axis == 0 ? Ints{t.shape[0], 1, 1} : Ints{1, t.shape[1], 1},
                                                     int64);
    for (int64_t i = 0; i < t.shape[time_axis]; ++i) static_cast<int64_t*>(steps.data())[i] = i;
    Expr longest = c.Op(kMax, {CastTo(c, c.input(4), int64)}, MakeAttrs({{"axis", Ints{}}, {"keepdims", int64_t{0}}}));
    x = c.Op(kWhere, {c.Op(kLess, {Constant(steps), longest}), x, ScalarLike(x, 0.0)});
  }
  return DynamicallyQuantized(c, x);
}

// DynamicQuantizeLSTM (quantize_dynamic's LSTM): ONNX's LSTM with the weights W (input 1, with
// W_scale 8 and W_zero_point 9) and R (2, with 10 and 11) dequantized, and its matrix products'
// other operands quantized as ONNX Runtime's kernel quantizes them as it runs: X once, each step's
// hidden state before its recurrent product (over the whole batch: ONNX Runtime does that at one
// thread; with more threads it may quantize a batch's rows in parts). The products then run in
// float32 on those levels, which gives the integer products' sums up to float rounding. Where
// sequence_lens differ within the batch, the rows quantized together differ from ONNX Runtime's
// (it quantizes a finished row's state as zeros when Y is wanted, and runs the reverse direction
// over each row's own reversed steps; kiln holds the state, by original step), so the outputs may
// differ there by quantization steps.
Outputs DynamicQuantizeLSTM(const NodeContext& c) {
  std::vector<Expr> inputs = {QuantizedLstmInput(c), DequantizedLstmWeight(c, 1, 8, 9), DequantizedLstmWeight(c, 2, 10, 11)};
  for (size_t i = 3; i < 8; ++i) inputs.push_back(c.has_input(i) ? c.input(i) : nullptr);
  return LstmOf(NodeContext(c.node(), inputs, 14), [&c](const Expr& h) { return DynamicallyQuantized(c, h); });
}

// QEmbedLayerNormalization (quantize_dynamic's EmbedLayerNormalization): input_ids, segment_ids,
// the word, position and segment embeddings, gamma and beta (inputs 2 to 6, 8-bit), mask; then
// their scales (8 to 12) and zero points (13 to 17). EmbedLayerNormalization of them dequantized.
Outputs QEmbedLayerNormalization(const NodeContext& c) {
  std::vector<Expr> inputs = {c.input(0), c.has_input(1) ? c.input(1) : nullptr};
  for (size_t i = 2; i <= 6; ++i) {
    if (!c.has_input(i)) {
      inputs.push_back(nullptr);
      continue;
    }
    RequirePerTensor(c, i + 6);
    if (c.has_input(i + 11) && c.input_type(i + 11).NumElements() != 1) {
      c.FailAt(StrCat("input ", i + 11), "must hold one value");
    }
    Expr zero_point = c.has_input(i + 11) ? c.input(i + 11) : nullptr;
    inputs.push_back(Unfused("DequantizeLinear", c, {c.input(i), c.input(i + 6), zero_point})[0]);
  }
  inputs.push_back(c.has_input(7) ? c.input(7) : nullptr);
  Converter embed = Converters().at(OpKey{kMicrosoftDomain, "EmbedLayerNormalization"}).convert;
  return embed(NodeContext(c.node(), inputs, c.opset()));
}

}  // namespace

void AddContribQuantizeConverters(ConverterTable& table) {
  RegisterMicrosoft(table, "QEmbedLayerNormalization", QEmbedLayerNormalization);
  RegisterMicrosoft(table, "DynamicQuantizeLSTM", DynamicQuantizeLSTM);
  RegisterMicrosoft(table, "QGemm", QuantizedGemm);
  RegisterMicrosoft(table, "QLinearAdd", QLinearBinary<kAddOp>);
  RegisterMicrosoft(table, "QLinearMul", QLinearBinary<kMulOp>);
  RegisterMicrosoft(table, "QLinearSigmoid", QLinearUnary<kSigmoidOp>);
  RegisterMicrosoft(table, "QLinearLeakyRelu", QLinearUnary<kLeakyReluOp>);
  RegisterMicrosoft(table, "QLinearGlobalAveragePool", QLinearUnary<kGlobalAveragePoolOp>);
  RegisterMicrosoft(table, "QLinearAveragePool", QLinearUnary<kAveragePoolOp>);
  RegisterMicrosoft(table, "QLinearSoftmax", QLinearSoftmax);
  RegisterMicrosoft(table, "QLinearConcat", QLinearConcat);
  RegisterMicrosoft(table, "QLinearWhere", QLinearWhere);
}

}  // namespace kiln::frontend
