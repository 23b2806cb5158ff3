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

// Per QuantizeLinear node (its index in `graph`) that ends a group: the integer node computing the
// group, named after the group's Conv, MatMul or Gemm, with its attributes and the Q node's output.
// A group's float op must feed only that QuantizeLinear, its operands come from DequantizeLinear
// nodes with zero points, and a bias from an int32 DequantizeLinear; whether the dtypes fit is
// for the converter to say (the importer keeps the float ops where it does not).
std::map<int, onnx::NodeProto> FindQdqGroups(const onnx::GraphProto& graph);

// Whether ONNX Runtime fuses the group, by its dtypes (the fused node's `inputs`): the activation
// and the output of one type, int8 activations with int8 weights, an int32 bias.
bool QdqGroupDTypesFit(const onnx::NodeProto& fused, const std::vector<ir::Expr>& inputs);

}  // namespace kiln::frontend
