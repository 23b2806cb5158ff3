// FindQdqGroups: DequantizeLinear -> Conv / MatMul / Gemm -> QuantizeLinear groups.
#include "frontend/onnx/qdq_groups.h"

#include <string>

namespace kiln::frontend {
namespace {

bool DefaultDomain(const onnx::NodeProto& node) { return node.domain().empty() || node.domain() == "ai.onnx"; }

// How many times each value is read: by nodes (those of subgraphs included, which may read the
// graph's values) and as a graph output.
void CountUses(const onnx::GraphProto& graph, std::map<std::string, int>& uses) {
  for (const auto& node : graph.node()) {
    for (const std::string& name : node.input()) ++uses[name];
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) CountUses(attr.g(), uses);
      for (const auto& g : attr.graphs()) CountUses(g, uses);
    }
  }
  for (const auto& output : graph.output()) ++uses[output.name()];
}

int64_t IntAttr(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  for (const auto& attr : node.attribute()) {
    if (attr.name() == name) return attr.i();
  }
  return fallback;
}

float FloatAttr(const onnx::NodeProto& node, const std::string& name, float fallback) {
  for (const auto& attr : node.attribute()) {
    if (attr.name() == name) return attr.f();
  }
  return fallback;
}

}  // namespace

std::map<int, QdqGroup> FindQdqGroups(const onnx::GraphProto& graph) {
  std::map<std::string, const onnx::NodeProto*> producer;
  for (const auto& node : graph.node()) {
    for (const std::string& name : node.output()) producer[name] = &node;
  }
  std::map<std::string, int> uses;
  CountUses(graph, uses);
  // The DequantizeLinear node (with a zero point) producing input i of `op`, or null.
  auto dequantized = [&](const onnx::NodeProto& op, int i) -> const onnx::NodeProto* {
    if (i >= op.input_size() || op.input(i).empty()) return nullptr;
    auto it = producer.find(op.input(i));
    if (it == producer.end()) return nullptr;
    const onnx::NodeProto& dq = *it->second;
    bool fits = dq.op_type() == "DequantizeLinear" && DefaultDomain(dq) && dq.input_size() == 3 && !dq.input(2).empty();
    return fits ? &dq : nullptr;
  };
  std::map<int, QdqGroup> groups;
  for (int index = 0; index < graph.node_size(); ++index) {
    const onnx::NodeProto& q = graph.node(index);
    if (q.op_type() != "QuantizeLinear" || !DefaultDomain(q) || q.input_size() != 3 || q.input(2).empty()) continue;
    auto it = producer.find(q.input(0));
    if (it == producer.end() || uses[q.input(0)] != 1) continue;
    const onnx::NodeProto& op = *it->second;
    const std::string& kind = op.op_type();
    if (!DefaultDomain(op) || (kind != "Conv" && kind != "MatMul" && kind != "Gemm")) continue;
    const onnx::NodeProto *x = dequantized(op, 0), *w = dequantized(op, 1), *bias = dequantized(op, 2);
    bool has_bias = op.input_size() > 2 && !op.input(2).empty();
    if (x == nullptr || w == nullptr || (has_bias && bias == nullptr)) continue;
    if (kind == "Gemm" && (IntAttr(op, "transA", 0) != 0 || FloatAttr(op, "alpha", 1) != 1 ||
                           (has_bias && FloatAttr(op, "beta", 1) != 1))) {
      continue;
    }
    onnx::NodeProto fused;
    fused.set_op_type(kind == "Conv" ? "QLinearConv" : kind == "MatMul" ? "QLinearMatMul" : "QGemm");
    fused.set_name(op.name());
    fused.add_output(q.output(0));
    for (const auto& attr : op.attribute()) *fused.add_attribute() = attr;
    for (const onnx::NodeProto* dq : {x, w}) {
      for (int i = 0; i < 3; ++i) fused.add_input(dq->input(i));
    }
    if (kind == "Gemm") fused.add_input(has_bias ? bias->input(0) : "");
    fused.add_input(q.input(1));
    fused.add_input(q.input(2));
    if (kind == "Conv" && has_bias) fused.add_input(bias->input(0));
    groups.emplace(index, QdqGroup{std::move(fused), IntAttr(*w, "axis", 1)});
  }
  return groups;
}

bool QdqGroupFits(const QdqGroup& group, const std::vector<ir::Expr>& inputs) {
  const onnx::NodeProto& fused = group.fused;
  auto dtype = [&](size_t i) { return inputs[i]->type().tensor().dtype; };
  // The weight's scale: one value, or one per channel along the axis the integer op reads.
  const ir::TensorType& weight = inputs[3]->type().tensor();
  if (inputs[4]->type().tensor().NumElements() != 1) {
    int64_t axis = group.weight_axis < 0 ? group.weight_axis + weight.ndim() : group.weight_axis;
    int64_t per_channel = fused.op_type() == "QLinearConv" ? 0
                          : fused.op_type() == "QGemm"     ? (IntAttr(fused, "transB", 0) != 0 ? 0 : 1)
                                                           : weight.ndim() - 1;
    if (axis != per_channel) return false;
  }
  bool gemm = fused.op_type() == "QGemm";
  size_t y_zero_point = gemm ? 8 : 7, bias = gemm ? 6 : 8;
  DLDataType int8{kDLInt, 8, 1}, uint8{kDLUInt, 8, 1};
  DLDataType x = dtype(0), w = dtype(3), y = dtype(y_zero_point);
  if ((x != int8 && x != uint8) || (w != int8 && w != uint8) || x != y || (x == int8 && w != int8)) return false;
  return bias >= inputs.size() || inputs[bias] == nullptr || dtype(bias) == DLDataType{kDLInt, 32, 1};
}

}  // namespace kiln::frontend
