// What the ONNX op converters share: the conversion context of one node (its inputs as IR
// expressions, typed attribute access, the opset) and the converter table.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ir/expr.h"

namespace kiln::frontend {

// Imports a graph a node holds, its inputs bound to the given values, in the node's scope (its
// nodes see the values of the graphs around it); returns the graph's outputs.
using SubgraphImporter = std::function<std::vector<ir::Expr>(const onnx::GraphProto&, const std::vector<ir::Expr>&)>;

class NodeContext {
 public:
  NodeContext(const onnx::NodeProto& node, std::vector<ir::Expr> inputs, int64_t opset,
              SubgraphImporter subgraphs = nullptr)
      : node_(node), inputs_(std::move(inputs)), opset_(opset), subgraphs_(std::move(subgraphs)) {}

  const onnx::NodeProto& node() const { return node_; }
  int64_t opset() const { return opset_; }
  size_t num_inputs() const { return inputs_.size(); }
  // Input i; throws Error when it is missing. Optional inputs left empty ("") are null.
  const ir::Expr& input(size_t i) const;
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const ir::TensorType& input_type(size_t i) const { return input(i)->type().tensor(); }
  size_t num_outputs() const { return static_cast<size_t>(node_.output_size()); }

  bool has_attr(const std::string& name) const { return Attr(name) != nullptr; }
  int64_t attr_int(const std::string& name, std::optional<int64_t> fallback = std::nullopt) const;
  float attr_float(const std::string& name, std::optional<float> fallback = std::nullopt) const;
  std::string attr_string(const std::string& name, std::optional<std::string> fallback = std::nullopt) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::optional<std::vector<int64_t>> fallback = std::nullopt) const;
  std::vector<float> attr_floats(const std::string& name, std::optional<std::vector<float>> fallback = std::nullopt) const;
  std::vector<std::string> attr_strings(const std::string& name,
                                        std::optional<std::vector<std::string>> fallback = std::nullopt) const;
  const onnx::TensorProto& attr_tensor(const std::string& name) const;
  // Graph attribute `name` (If's branches, Loop's body) imported with its inputs bound to `inputs`.
  std::vector<ir::Expr> ImportGraph(const std::string& name, const std::vector<ir::Expr>& inputs) const;

  // The values of input i, which must be a constant (after folding): for shape-like inputs.
  std::vector<int64_t> ConstantInts(size_t i) const;
  std::vector<double> ConstantFloats(size_t i) const;
  // The one value of constant input i (Clip's bounds, Pad's value); Error when it holds another count.
  double ConstantScalar(size_t i) const;
  bool IsConstant(size_t i) const { return has_input(i) && input(i)->As<ir::ConstantNode>() != nullptr; }

  // Makes an IR call and folds it when its arguments are constants.
  ir::Expr Op(const ir::OpRef& op, std::vector<ir::Expr> args, ir::Attrs attrs = {}) const;

  // Throw Error; the importer adds the node to its location, FailAt also the argument
  // ("input 1", "attribute 'axes'").
  [[noreturn]] void Fail(const std::string& message) const;
  [[noreturn]] void FailAt(const std::string& argument, const std::string& message) const;

 private:
  const onnx::AttributeProto* Attr(const std::string& name) const;
  const onnx::AttributeProto* TypedAttr(const std::string& name, int type) const;
  template <typename T>
  T Fallback(const std::string& name, const std::optional<T>& fallback) const;
  const onnx::NodeProto& node_;
  std::vector<ir::Expr> inputs_;
  int64_t opset_;
  SubgraphImporter subgraphs_;
};

// A converter returns one expression per node output (fewer when trailing outputs are unused
// and not produced).
using Converter = std::vector<ir::Expr> (*)(const NodeContext& context);

// ONNX tensors as NDArrays (raw_data or typed fields; external data is an error).
runtime::NDArray TensorToNDArray(const onnx::TensorProto& tensor);
DLDataType OnnxDType(int32_t onnx_type);

// A converter and the oldest opset whose form of its op it handles: an op whose inputs or
// attributes changed at some opset is converted from there on (older models get an error saying
// so); an op unchanged since it was introduced, from then.
struct ConverterEntry {
  Converter convert;
  int64_t oldest_opset;
};
constexpr int64_t kDefaultOldestOpset = 11;  // for converters that do not say

// An op as a node names it: its domain ("" for ONNX's own, which "ai.onnx" also names) and type.
struct OpKey {
  std::string domain;
  std::string type;
  bool operator<(const OpKey& other) const { return std::tie(domain, type) < std::tie(other.domain, other.type); }
  bool operator==(const OpKey& other) const { return domain == other.domain && type == other.type; }
};
// ONNX Runtime's contrib ops (docs/ContribOperators.md in microsoft/onnxruntime).
inline const std::string kMicrosoftDomain = "com.microsoft";
// The key of a node's op, its domain's aliases resolved.
OpKey KeyOf(const onnx::NodeProto& node);

// The converters by (domain, op type); the opset a converter is given and checked against is its
// domain's, from the model's opset_import. Each file adds its own with Register (ONNX's domain) or
// RegisterMicrosoft; an op registered twice is kiln's bug, and Converters() then throws
// InternalError naming it.
using ConverterTable = std::map<OpKey, ConverterEntry>;
void Register(ConverterTable& table, const std::string& op_type, Converter converter,
              int64_t oldest_opset = kDefaultOldestOpset);
void RegisterMicrosoft(ConverterTable& table, const std::string& op_type, Converter converter);
void AddMathConverters(ConverterTable& table);
void AddNnConverters(ConverterTable& table);
void AddTensorConverters(ConverterTable& table);
void AddIndexingConverters(ConverterTable& table);
void AddNormalizationConverters(ConverterTable& table);
void AddRecurrentConverters(ConverterTable& table);
void AddQuantizeConverters(ConverterTable& table);
void AddEinsumConverters(ConverterTable& table);
void AddImageConverters(ConverterTable& table);
void AddControlConverters(ConverterTable& table);
void AddLossConverters(ConverterTable& table);
void AddSignalConverters(ConverterTable& table);
void AddDataDependentConverters(ConverterTable& table);
void AddTextConverters(ConverterTable& table);
void AddContribTransformerConverters(ConverterTable& table);
void AddContribFusedConverters(ConverterTable& table);
void AddContribQuantizeConverters(ConverterTable& table);
const ConverterTable& Converters();
// The converter of a node's op; null when kiln has none.
const ConverterEntry* FindConverter(const onnx::NodeProto& node);

// Helpers shared by converters.
// Throws Error when a constant a converter makes at import (EyeLike's matrix, a mask, a grid) would
// hold more elements than folding makes (ir::kDefaultMaxFoldedElements).
void CheckConstantElements(const NodeContext& context, int64_t elements, const std::string& what);
ir::Attrs MakeAttrs(std::initializer_list<std::pair<const char*, ir::AttrValue>> items);
// An op whose result no input bounds, its shape-deciding input given at run time
// (ir/ops/run_time_sized.cc): `shape_op` of `shape_args` computes the result's shape, then `op` of
// `args` and that shape the data (attributes `attrs`, and `shape_attrs` for the shape op when given,
// else `attrs` too); the importer carries the shape to the model's output.
ir::Expr SizedAtRunTime(const NodeContext& context, const ir::OpRef& shape_op, const ir::OpRef& op,
                        std::vector<ir::Expr> shape_args, std::vector<ir::Expr> args, const ir::Attrs& attrs = {},
                        const std::optional<ir::Attrs>& shape_attrs = std::nullopt);
int64_t NormalizeAxis(int64_t axis, int64_t ndim, const NodeContext& context);
// numpy's matmul of a and b (ONNX MatMul): a dense layer when b is a matrix of float32, batched
// products otherwise.
ir::Expr MatMulOf(const NodeContext& context, ir::Expr a, ir::Expr b);
// ONNX Conv of 1-D, 2-D or 3-D data without its bias, the node's window attributes applied:
// nn.conv2d on float32, matrix products of gathered patches on int32 (exact); 1-D data as 2-D of
// height 1, 3-D as 2-D with the window's depth slices as channels.
ir::Expr ConvOf(const NodeContext& context, const ir::Expr& data, const ir::Expr& weight);
// log(softmax(x)) over `axes`, shifted by the maximum.
ir::Expr LogSoftmaxOf(const NodeContext& context, const ir::Expr& x, const std::vector<int64_t>& axes);
// ONNX Runtime's QGemm (com.microsoft), also as the importer makes it of a DequantizeLinear -> Gemm
// -> QuantizeLinear group.
std::vector<ir::Expr> QGemm(const NodeContext& context);
// x's dynamic 8-bit quantization as ONNX Runtime computes it (DynamicQuantizeLinear, and the operands
// its integer kernels quantize as they run), in x's float dtype: scale = (max(0, max x) - min(0,
// min x)) / 255, or 1 when x is all zeros; zero_point = saturate(round(-min / scale)); levels =
// saturate(round(x / scale) + zero_point), halves to even.
struct DynamicQuantization {
  ir::Expr levels, scale, zero_point;
};
DynamicQuantization DynamicQuantizationOf(const NodeContext& context, const ir::Expr& x);
// ONNX's LSTM of the node's inputs, each step's hidden state passed through `hidden_operand` (when
// set) before its recurrent product: DynamicQuantizeLSTM quantizes it there.
std::vector<ir::Expr> LstmOf(const NodeContext& context, const std::function<ir::Expr(const ir::Expr&)>& hidden_operand);
// Gelu of x: x * (1 + erf(x / sqrt 2)) / 2, or its tanh form
// x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) / 2.
ir::Expr GeluOf(const NodeContext& context, const ir::Expr& x, bool tanh_form);
// x normalized over the axes from `axis` on, * scale (+ bias, when not null): nn.layer_norm when
// only y is wanted of the last axis, composed otherwise, with the mean and 1 / sqrt(variance +
// epsilon) it used (the axes kept as size 1). With root_mean_square, x / sqrt(mean(x^2) +
// epsilon) * scale instead (no mean).
struct Normalized {
  ir::Expr y, mean, inverse_deviation;
};
Normalized LayerNormOf(const NodeContext& context, const ir::Expr& x, const ir::Expr& scale, const ir::Expr& bias,
                       int64_t axis, double epsilon, bool want_moments);
Normalized RootMeanSquareNormOf(const NodeContext& context, const ir::Expr& x, const ir::Expr& scale, int64_t axis,
                                double epsilon);
// x cast to `dtype` (x itself when it has that dtype).
ir::Expr CastTo(const NodeContext& context, const ir::Expr& x, DLDataType dtype);
// A scalar constant of a dtype (float32/64, int32/64, bool; float16 as a cast float32 constant),
// or of `like`'s dtype.
ir::Expr ScalarOf(DLDataType dtype, double value);
ir::Expr ScalarLike(const ir::Expr& like, double value);

}  // namespace kiln::frontend
