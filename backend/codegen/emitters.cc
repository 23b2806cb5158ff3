// The table of op lowerings, one entry per op, and helpers the emitters share.
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "backend/codegen/emitter.h"
#include "runtime/error.h"

namespace kiln::backend {

namespace {

using Elements = std::vector<std::string>;

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
    {"add", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return v[0] + " + " + v[1]; }, "kAdd")},
    {"subtract", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return v[0] + " - " + v[1]; }, "kSubtract")},
    {"multiply", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return v[0] + " * " + v[1]; }, "kMultiply")},
    {"divide", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return v[0] + " / " + v[1]; })},
    {"power", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return "std::pow(" + v[0] + ", " + v[1] + ")"; })},
    {"maximum", Elementwise([](const ir::CallNode&, const Elements& v, const std::string& t) { return "std::max<" + t + ">(" + v[0] + ", " + v[1] + ")"; }, "kMaximum")},
    {"minimum", Elementwise([](const ir::CallNode&, const Elements& v, const std::string& t) { return "std::min<" + t + ">(" + v[0] + ", " + v[1] + ")"; }, "kMinimum")},
    {"equal", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return v[0] + " == " + v[1]; })},
    {"less", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return v[0] + " < " + v[1]; })},
    {"greater", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return v[0] + " > " + v[1]; })},
    {"less_equal", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return v[0] + " <= " + v[1]; })},
    {"greater_equal", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return v[0] + " >= " + v[1]; })},
    {"where", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return v[0] + " ? " + v[1] + " : " + v[2]; })},
    {"nn.relu", Elementwise([](const ir::CallNode&, const Elements& v, const std::string& t) { return v[0] + " > 0 ? " + v[0] + " : " + t + "(0)"; }, "kRelu")},
    {"negative", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return "-" + v[0]; })},
    {"abs", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return Unary("std::abs", v[0]); })},
    {"sigmoid", Elementwise([](const ir::CallNode&, const Elements& v, const std::string& t) { return t + "(1) / (" + t + "(1) + std::exp(-" + v[0] + "))"; })},
    {"tanh", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return Unary("std::tanh", v[0]); })},
    {"exp", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return Unary("std::exp", v[0]); })},
    {"log", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return Unary("std::log", v[0]); })},
    {"sqrt", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return Unary("std::sqrt", v[0]); })},
    {"rsqrt", Elementwise([](const ir::CallNode&, const Elements& v, const std::string& t) { return t + "(1) / std::sqrt(" + v[0] + ")"; })},
    // kiln::kernels::Erf vectorizes; std::erf does not.
    {"erf", Elementwise([](const ir::CallNode&, const Elements& v, const std::string& t) { return Unary(t == "float" ? "kiln::kernels::Erf" : "std::erf", v[0]); })},
    {"floor", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return Unary("std::floor", v[0]); })},
    {"ceil", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return Unary("std::ceil", v[0]); })},
    {"round", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return Unary("std::nearbyint", v[0]); })},
    {"nn.leaky_relu", Elementwise([](const ir::CallNode& call, const Elements& v, const std::string& t) {
       return v[0] + " > 0 ? " + v[0] + " : " + v[0] + " * " + t + "(" + FloatLiteral(call.attrs.GetFloat("alpha")) + ")";
     })},
    {"clip", Elementwise([](const ir::CallNode& call, const Elements& v, const std::string& t) {
       return "std::min<" + t + ">(std::max<" + t + ">(" + v[0] + ", " + t + "(" + FloatLiteral(call.attrs.GetFloat("a_min")) +
              ")), " + t + "(" + FloatLiteral(call.attrs.GetFloat("a_max")) + "))";
     }, "kClip")},
    {"cast", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return v[0]; })},
    {"broadcast_to", Elementwise([](const ir::CallNode&, const Elements& v, const std::string&) { return v[0]; })},
    {"nn.bias_add", {EmitElementwise, [](const ir::CallNode&, const Elements& v, const std::string&) { return v[0] + " + " + v[1]; }, true}},
    // (x - mean) / sqrt(var + eps) * gamma + beta
    {"nn.batch_norm", {EmitElementwise, [](const ir::CallNode& call, const Elements& v, const std::string& t) {
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
