// The table of op emitters and helpers shared by them.
#include <cmath>
#include <cstdio>
#include <map>

#include "backend/codegen/emitter.h"
#include "runtime/error.h"

namespace kiln::backend {

OpEmitter FindEmitter(const std::string& op_name) {
  static const std::map<std::string, OpEmitter> kEmitters = [] {
    std::map<std::string, OpEmitter> table;
    for (const char* op : {"add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "equal", "less",
                           "greater", "less_equal", "greater_equal", "where", "nn.relu", "negative", "abs", "sigmoid",
                           "tanh", "exp", "log", "sqrt", "rsqrt", "erf", "floor", "ceil", "round", "nn.leaky_relu",
                           "clip", "cast", "nn.bias_add", "nn.batch_norm", "broadcast_to"}) {
      table[op] = EmitElementwise;
    }
    for (const char* op : {"copy", "nn.dropout", "reshape", "squeeze", "expand_dims"}) table[op] = EmitCopy;
    for (const char* op : {"sum", "mean", "max", "min", "prod"}) table[op] = EmitReduce;
    table["nn.conv2d"] = EmitConv2D;
    table["nn.dense"] = EmitDense;
    table["nn.batch_matmul"] = EmitBatchMatmul;
    table["nn.max_pool2d"] = EmitPool2D;
    table["nn.avg_pool2d"] = EmitPool2D;
    table["nn.global_avg_pool2d"] = EmitGlobalAvgPool2D;
    table["nn.softmax"] = EmitSoftmax;
    table["nn.layer_norm"] = EmitLayerNorm;
    table["transpose"] = EmitTranspose;
    table["concatenate"] = EmitConcatenate;
    table["strided_slice"] = EmitStridedSlice;
    table["take"] = EmitTake;
    table["split"] = EmitSplit;
    table["nn.pad"] = EmitPad;
    table["layout_transform"] = EmitLayoutTransform;
    return table;
  }();
  auto it = kEmitters.find(op_name);
  return it == kEmitters.end() ? nullptr : it->second;
}

std::string CType(DLDataType dtype) {
  if (dtype.lanes == 1) {
    if (dtype.code == kDLFloat && dtype.bits == 32) return "float";
    if (dtype.code == kDLFloat && dtype.bits == 64) return "double";
    if (dtype.code == kDLInt && dtype.bits == 64) return "int64_t";
    if (dtype.code == kDLInt && dtype.bits == 32) return "int32_t";
    if (dtype.code == kDLInt && dtype.bits == 16) return "int16_t";
    if (dtype.code == kDLInt && dtype.bits == 8) return "int8_t";
    if (dtype.code == kDLUInt && dtype.bits == 8) return "uint8_t";
    if (dtype.code == kDLUInt && dtype.bits == 1) return "uint8_t";
  }
  runtime::Fail("dtype ", runtime::DTypeToString(dtype), " is not supported by the host code generator");
}

std::vector<int64_t> Strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

std::string IntList(const std::vector<int64_t>& values) {
  std::string text = "{";
  for (size_t i = 0; i < values.size(); ++i) text += (i > 0 ? ", " : "") + std::to_string(values[i]) + "LL";
  return text + "}";
}

std::string FloatLiteral(double value) {
  if (std::isinf(value)) return value > 0 ? "INFINITY" : "-INFINITY";
  if (std::isnan(value)) return "NAN";
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  std::string text = buffer;
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

}  // namespace kiln::backend
