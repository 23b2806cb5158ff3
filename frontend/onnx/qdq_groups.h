// The DequantizeLinear -> Conv / MatMul / Gemm -> QuantizeLinear groups of a QDQ model (as
// onnxruntime.quantization's quantize_static writes them), found as ONNX Runtime's QDQ transformer
// finds them, so that kiln computes each as ONNX Runtime does: one integer op over the quantized
// inputs (QLinearConv, QLinearMatMul, or ONNX Runtime's QGemm with an int32 bias), rounding once.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <vector>

#include "ir/expr.h"

namespace kiln::frontend {

// A group's integer node, named after the group's Conv, MatMul or Gemm, with its attributes and
// the Q node's output; and the axis of the weight's DequantizeLinear (its per-channel axis).
struct QdqGroup {
  onnx::NodeProto fused;
  int64_t weight_axis = 1;
};

// Per QuantizeLinear node (its index in `graph`) that ends a group, the group. A group's float op
// must feed only that QuantizeLinear, its operands come from DequantizeLinear nodes with zero
// points, and a bias from a DequantizeLinear; whether types and shapes fit is QdqGroupFits's to
// say (the importer keeps the float ops where they do not).
std::map<int, QdqGroup> FindQdqGroups(const onnx::GraphProto& graph);

// Whether the integer node computes the group (its `inputs` typed): ONNX Runtime's rules (the
// activation and the output of one 8-bit type, int8 activations with int8 weights, an int32 bias)
// and a weight scale per tensor or along the axis the integer op takes it per channel (a Conv
// weight's output channels, a MatMul or Gemm weight's columns).
bool QdqGroupFits(const QdqGroup& group, const std::vector<ir::Expr>& inputs);

}  // namespace kiln::frontend
