// The table of op lowerings, one entry per op, and helpers the emitters share.
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "backend/codegen/emitter.h"
#include "runtime/error.h"

namespace kiln::backend {

namespace {

// The parameters of an ElementExpr, short so that each entry fits on a line.
using Call = const ir::CallNode&;
using Elements = const std::vector<std::string>&;
using CType_ = const std::string&;

std::string Unary(const char* function, const std::string& v) { return std::string(function) + "(" + v + ")"; }

// One entry per op: the op's name, then its lowering.
struct Entry {
  const char* op;
  Lowering lowering;
};

Lowering Elementwise(ElementExpr element, const char* epilogue_step = nullptr) {
  return {EmitElementwise, element, false, epilogue_step};
}

const Entry kLowerings[] = {
    {"add", Elementwise([](Call, Elements v, CType_) { return v[0] + " + " + v[1]; }, "kAdd")},
    {"subtract", Elementwise([](Call, Elements v, CType_) { return v[0] + " - " + v[1]; }, "kSubtract")},
    {"multiply", Elementwise([](Call, Elements v, CType_) { return v[0] + " * " + v[1]; }, "kMultiply")},
    {"divide", Elementwise([](Call, Elements v, CType_) { return v[0] + " / " + v[1]; })},
    {"power", Elementwise([](Call, Elements v, CType_) { return "std::pow(" + v[0] + ", " + v[1] + ")"; })},
    {"maximum", Elementwise([](Call, Elements v, CType_ t) { return "std::max<" + t + ">(" + v[0] + ", " + v[1] + ")"; },
                            "kMaximum")},
    {"minimum", Elementwise([](Call, Elements v, CType_ t) { return "std::min<" + t + ">(" + v[0] + ", " + v[1] + ")"; },
                            "kMinimum")},
    {"equal", Elementwise([](Call, Elements v, CType_) { return v[0] + " == " + v[1]; })},
    {"less", Elementwise([](Call, Elements v, CType_) { return v[0] + " < " + v[1]; })},
    {"greater", Elementwise([](Call, Elements v, CType_) { return v[0] + " > " + v[1]; })},
    {"less_equal", Elementwise([](Call, Elements v, CType_) { return v[0] + " <= " + v[1]; })},
    {"greater_equal", Elementwise([](Call, Elements v, CType_) { return v[0] + " >= " + v[1]; })},
    {"where", Elementwise([](Call, Elements v, CType_) { return v[0] + " ? " + v[1] + " : " + v[2]; })},
    {"nn.relu", Elementwise([](Call, Elements v, CType_ t) { return v[0] + " > 0 ? " + v[0] + " : " + t + "(0)"; },
                            "kRelu")},
    {"negative", Elementwise([](Call, Elements v, CType_) { return "-" + v[0]; })},
    {"abs", Elementwise([](Call, Elements v, CType_) { return Unary("std::abs", v[0]); })},
    {"sigmoid",
     Elementwise([](Call, Elements v, CType_ t) { return t + "(1) / (" + t + "(1) + std::exp(-" + v[0] + "))"; })},
    {"tanh", Elementwise([](Call, Elements v, CType_) { return Unary("std::tanh", v[0]); })},
    {"exp", Elementwise([](Call, Elements v, CType_) { return Unary("std::exp", v[0]); })},
    {"log", Elementwise([](Call, Elements v, CType_) { return Unary("std::log", v[0]); })},
    {"sqrt", Elementwise([](Call, Elements v, CType_) { return Unary("std::sqrt", v[0]); })},
    {"rsqrt", Elementwise([](Call, Elements v, CType_ t) { return t + "(1) / std::sqrt(" + v[0] + ")"; })},
    // kiln::kernels::Erf vectorizes; std::erf does not.
    {"erf",
     Elementwise([](Call, Elements v, CType_ t) { return Unary(t == "float" ? "kiln::kernels::Erf" : "std::erf", v[0]); })},
    {"floor", Elementwise([](Call, Elements v, CType_) { return Unary("std::floor", v[0]); })},
    {"ceil", Elementwise([](Call, Elements v, CType_) { return Unary("std::ceil", v[0]); })},
    {"round", Elementwise([](Call, Elements v, CType_) { return Unary("std::nearbyint", v[0]); })},
    {"nn.leaky_relu", Elementwise([](Call call, Elements v, CType_ t) {
       std::string alpha = t + "(" + FloatLiteral(call.attrs.GetFloat("alpha")) + ")";
       return v[0] + " > 0 ? " + v[0] + " : " + v[0] + " * " + alpha;
     })},
    {"clip", Elementwise([](Call call, Elements v, CType_ t) {
       std::string lo = t + "(" + FloatLiteral(call.attrs.GetFloat("a_min")) + ")";
       std::string hi = t + "(" + FloatLiteral(call.attrs.GetFloat("a_max")) + ")";
       return "std::min<" + t + ">(std::max<" + t + ">(" + v[0] + ", " + lo + "), " + hi + ")";
     }, "kClip")},
    {"cast", Elementwise([](Call, Elements v, CType_) { return v[0]; })},
    {"broadcast_to", Elementwise([](Call, Elements v, CType_) { return v[0]; })},
    {"nn.bias_add", {EmitElementwise, [](Call, Elements v, CType_) { return v[0] + " + " + v[1]; }, true}},
    // (x - mean) / sqrt(var + eps) * gamma + beta
    {"nn.batch_norm", {EmitElementwise, [](Call call, Elements v, CType_ t) {
       return "(" + v[0] + " - " + v[3] + ") / std::sqrt(" + v[4] + " + " + t + "(" +
              FloatLiteral(call.attrs.GetFloat("epsilon")) + ")) * " + v[1] + " + " + v[2];
     }, true}},
    {"copy", {EmitCopy}},
    {"nn.dropout", {EmitCopy}},
    {"reshape", {EmitCopy}},
    {"squeeze", {EmitCopy}},
    {"expand_dims", {EmitCopy}},
    {"sum", {EmitReduce}},
    {"mean", {EmitReduce}},
    {"max", {EmitReduce}},
    {"min", {EmitReduce}},
    {"prod", {EmitReduce}},
    {"nn.conv2d", {EmitConv2D}},
    {"nn.dense", {EmitDense}},
    {"nn.batch_matmul", {EmitBatchMatmul}},
    {"nn.max_pool2d", {EmitPool2D}},
    {"nn.avg_pool2d", {EmitPool2D}},
    {"nn.global_avg_pool2d", {EmitGlobalAvgPool2D}},
    {"nn.softmax", {EmitSoftmax}},
    {"nn.layer_norm", {EmitLayerNorm}},
    {"transpose", {EmitTranspose}},
    {"concatenate", {EmitConcatenate}},
    {"strided_slice", {EmitStridedSlice}},
    {"take", {EmitTake}},
    {"split", {EmitSplit}},
    {"nn.pad", {EmitPad}},
    {"layout_transform", {EmitLayoutTransform}},
};

}  // namespace

const Lowering* FindLowering(const ir::OpDef& op) {
  static const std::unordered_map<const ir::OpDef*, Lowering> table = [] {
    std::unordered_map<const ir::OpDef*, Lowering> t;
    for (const Entry& entry : kLowerings) {
      const ir::OpDef* def = ir::FindOp(entry.op);
      runtime::CheckInternal(def != nullptr, "the host code generator has a lowering for '", entry.op,
                             "', which is not an op");
      runtime::CheckInternal(t.emplace(def, entry.lowering).second, "the op '", entry.op, "' has two lowerings");
    }
    return t;
  }();
  auto it = table.find(&op);
  return it == table.end() ? nullptr : &it->second;
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
