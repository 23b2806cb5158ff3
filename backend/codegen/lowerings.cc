// The table of op lowerings, one entry per op.
#include <unordered_map>

#include "backend/codegen/lowering.h"
#include "runtime/dtype.h"
#include "runtime/error.h"

namespace kiln::backend {

namespace {

// The parameters of an ElementExpr, short so that each entry fits on a line.
using Call = const ir::CallNode&;
using Elements = const std::vector<std::string>&;
using CType_ = const std::string&;

std::string Unary(const char* function, const std::string& v) { return std::string(function) + "(" + v + ")"; }

// A float attribute of `call` as a literal of type `t`.
std::string AttrOf(Call call, const char* name, CType_ t) { return t + "(" + FloatLiteral(call.attrs.GetFloat(name)) + ")"; }

// log(1 + e^v), without overflow for large v.
std::string Softplus(const std::string& v) {
  return "(" + v + " > 0 ? " + v + " + std::log1p(std::exp(-" + v + ")) : std::log1p(std::exp(" + v + ")))";
}

// The remainder of a / b with the sign of a: std::fmod for floats, % for integers. (The minimum
// of a signed type divided by -1 overflows in %; its remainder is 0.)
std::string Remainder(const std::string& a, const std::string& b, CType_ t) {
  if (t == "float" || t == "double") return "std::fmod(" + a + ", " + b + ")";
  return "(" + b + " == " + t + "(-1) ? " + t + "(0) : " + t + "(" + a + " % " + b + "))";
}

// cond ? a : b (where, if_then_else).
std::string Select(Call, Elements v, CType_) { return v[0] + " ? " + v[1] + " : " + v[2]; }

// One entry per op: the op's name, then its lowering.
struct Entry {
  const char* op;
  Lowering lowering;
};

using Step = kernels::EpilogueStep;

Lowering Elementwise(ElementExpr element, std::optional<Step::Op> epilogue_step = std::nullopt) {
  Lowering lowering;
  lowering.element = element;
  lowering.epilogue_step = epilogue_step;
  return lowering;
}

// An elementwise op whose arguments after the first lie along its `axis`.
Lowering AlongAxis(ElementExpr element) {
  Lowering lowering = Elementwise(element);
  lowering.params_along_axis = true;
  return lowering;
}

Lowering Kernel(KernelPlanner planner, EpilogueLength epilogue_length = nullptr) {
  Lowering lowering;
  lowering.kernel = planner;
  lowering.epilogue_length = epilogue_length;
  return lowering;
}

Lowering Loops(OpEmitter emit) {
  Lowering lowering;
  lowering.emit = emit;
  return lowering;
}

Lowering Bytes() {
  Lowering lowering;
  lowering.copy = true;
  return lowering;
}

const Entry kLowerings[] = {
    {"add", Elementwise([](Call, Elements v, CType_) { return v[0] + " + " + v[1]; }, Step::kAdd)},
    {"subtract", Elementwise([](Call, Elements v, CType_) { return v[0] + " - " + v[1]; }, Step::kSubtract)},
    {"multiply", Elementwise([](Call, Elements v, CType_) { return v[0] + " * " + v[1]; }, Step::kMultiply)},
    {"divide", Elementwise([](Call, Elements v, CType_) { return v[0] + " / " + v[1]; })},
    {"power", Elementwise([](Call, Elements v, CType_) { return "std::pow(" + v[0] + ", " + v[1] + ")"; })},
    {"maximum", Elementwise([](Call, Elements v, CType_ t) { return "std::max<" + t + ">(" + v[0] + ", " + v[1] + ")"; },
                            Step::kMaximum)},
    {"minimum", Elementwise([](Call, Elements v, CType_ t) { return "std::min<" + t + ">(" + v[0] + ", " + v[1] + ")"; },
                            Step::kMinimum)},
    {"trunc_mod", Elementwise([](Call, Elements v, CType_ t) { return Remainder(v[0], v[1], t); })},
    {"floor_mod", Elementwise([](Call, Elements v, CType_ t) {
       std::string r = Remainder(v[0], v[1], t);
       return "(" + r + " != 0 && ((" + r + " < 0) != (" + v[1] + " < 0)) ? " + r + " + " + v[1] + " : " + r + ")";
     })},
    // A shift by the type's width or more gives 0, as in the reference semantics.
    {"left_shift", Elementwise([](Call, Elements v, CType_ t) {
       return "(" + v[1] + " >= sizeof(" + t + ") * 8 ? " + t + "(0) : " + t + "(" + v[0] + " << " + v[1] + "))";
     })},
    {"right_shift", Elementwise([](Call, Elements v, CType_ t) {
       return "(" + v[1] + " >= sizeof(" + t + ") * 8 ? " + t + "(0) : " + t + "(" + v[0] + " >> " + v[1] + "))";
     })},
    {"bitwise_and", Elementwise([](Call, Elements v, CType_ t) { return t + "(" + v[0] + " & " + v[1] + ")"; })},
    {"bitwise_or", Elementwise([](Call, Elements v, CType_ t) { return t + "(" + v[0] + " | " + v[1] + ")"; })},
    {"bitwise_xor", Elementwise([](Call, Elements v, CType_ t) { return t + "(" + v[0] + " ^ " + v[1] + ")"; })},
    {"bitwise_not", Elementwise([](Call, Elements v, CType_ t) { return t + "(~" + v[0] + ")"; })},
    {"equal", Elementwise([](Call, Elements v, CType_) { return v[0] + " == " + v[1]; })},
    {"less", Elementwise([](Call, Elements v, CType_) { return v[0] + " < " + v[1]; })},
    {"greater", Elementwise([](Call, Elements v, CType_) { return v[0] + " > " + v[1]; })},
    {"less_equal", Elementwise([](Call, Elements v, CType_) { return v[0] + " <= " + v[1]; })},
    {"greater_equal", Elementwise([](Call, Elements v, CType_) { return v[0] + " >= " + v[1]; })},
    {"logical_and", Elementwise([](Call, Elements v, CType_) { return v[0] + " && " + v[1]; })},
    {"logical_or", Elementwise([](Call, Elements v, CType_) { return v[0] + " || " + v[1]; })},
    {"logical_xor", Elementwise([](Call, Elements v, CType_) { return "(" + v[0] + " != 0) != (" + v[1] + " != 0)"; })},
    {"logical_not", Elementwise([](Call, Elements v, CType_) { return "!" + v[0]; })},
    {"where", Elementwise(Select)},
    {"if_then_else", Elementwise(Select)},
    {"nn.relu", Elementwise([](Call, Elements v, CType_ t) { return v[0] + " > 0 ? " + v[0] + " : " + t + "(0)"; },
                            Step::kRelu)},
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
       return v[0] + " > 0 ? " + v[0] + " : " + v[0] + " * " + AttrOf(call, "alpha", t);
     })},
    {"sin", Elementwise([](Call, Elements v, CType_) { return Unary("std::sin", v[0]); })},
    {"cos", Elementwise([](Call, Elements v, CType_) { return Unary("std::cos", v[0]); })},
    {"tan", Elementwise([](Call, Elements v, CType_) { return Unary("std::tan", v[0]); })},
    {"asin", Elementwise([](Call, Elements v, CType_) { return Unary("std::asin", v[0]); })},
    {"acos", Elementwise([](Call, Elements v, CType_) { return Unary("std::acos", v[0]); })},
    {"atan", Elementwise([](Call, Elements v, CType_) { return Unary("std::atan", v[0]); })},
    {"sinh", Elementwise([](Call, Elements v, CType_) { return Unary("std::sinh", v[0]); })},
    {"cosh", Elementwise([](Call, Elements v, CType_) { return Unary("std::cosh", v[0]); })},
    {"asinh", Elementwise([](Call, Elements v, CType_) { return Unary("std::asinh", v[0]); })},
    {"acosh", Elementwise([](Call, Elements v, CType_) { return Unary("std::acosh", v[0]); })},
    {"atanh", Elementwise([](Call, Elements v, CType_) { return Unary("std::atanh", v[0]); })},
    {"nn.softplus", Elementwise([](Call, Elements v, CType_) { return Softplus(v[0]); })},
    {"nn.softsign", Elementwise([](Call, Elements v, CType_ t) { return v[0] + " / (" + t + "(1) + std::abs(" + v[0] + "))"; })},
    {"nn.hard_swish", Elementwise([](Call, Elements v, CType_ t) {
       return v[0] + " * std::min<" + t + ">(" + t + "(1), std::max<" + t + ">(" + t + "(0), " + v[0] + " / " + t +
              "(6) + " + t + "(0.5)))";
     })},
    {"nn.elu", Elementwise([](Call call, Elements v, CType_ t) {
       return v[0] + " > 0 ? " + v[0] + " : " + AttrOf(call, "alpha", t) + " * std::expm1(" + v[0] + ")";
     })},
    {"nn.selu", Elementwise([](Call call, Elements v, CType_ t) {
       return AttrOf(call, "gamma", t) + " * (" + v[0] + " > 0 ? " + v[0] + " : " + AttrOf(call, "alpha", t) +
              " * std::expm1(" + v[0] + "))";
     })},
    {"nn.celu", Elementwise([](Call call, Elements v, CType_ t) {
       std::string alpha = AttrOf(call, "alpha", t);
       return "std::max<" + t + ">(" + t + "(0), " + v[0] + ") + std::min<" + t + ">(" + t + "(0), " + alpha +
              " * std::expm1(" + v[0] + " / " + alpha + "))";
     })},
    {"nn.thresholded_relu", Elementwise([](Call call, Elements v, CType_ t) {
       return v[0] + " > " + AttrOf(call, "alpha", t) + " ? " + v[0] + " : " + t + "(0)";
     })},
    {"clip", Elementwise([](Call call, Elements v, CType_ t) {
       std::string lo = AttrOf(call, "a_min", t), hi = AttrOf(call, "a_max", t);
       return "std::min<" + t + ">(std::max<" + t + ">(" + v[0] + ", " + lo + "), " + hi + ")";
     }, Step::kClip)},
    // To and from bfloat16 and float8 through float (their structs convert); to float8 saturating or not.
    {"cast", Elementwise([](Call call, Elements v, CType_) {
       DLDataType from = call.args[0]->type().tensor().dtype, to = call.type().tensor().dtype;
       if (runtime::IsFloat8(to)) {
         return CType(to) + "(static_cast<float>(" + v[0] + "), " + (call.attrs.GetInt("saturate") != 0 ? "true" : "false") + ")";
       }
       bool narrow = runtime::IsFloat8(from) || from.code == kDLBfloat || to.code == kDLBfloat;
       return narrow ? "static_cast<float>(" + v[0] + ")" : v[0];
     })},
    {"broadcast_to", Elementwise([](Call, Elements v, CType_) { return v[0]; })},
    {"nn.bias_add", AlongAxis([](Call, Elements v, CType_) { return v[0] + " + " + v[1]; })},
    // (x - mean) / sqrt(var + eps) * gamma + beta
    {"nn.batch_norm", AlongAxis([](Call call, Elements v, CType_ t) {
       return "(" + v[0] + " - " + v[3] + ") / std::sqrt(" + v[4] + " + " + t + "(" +
              FloatLiteral(call.attrs.GetFloat("epsilon")) + ")) * " + v[1] + " + " + v[2];
     })},
    {"copy", Bytes()},
    {"nn.dropout", Bytes()},
    {"reshape", Bytes()},
    {"squeeze", Bytes()},
    {"expand_dims", Bytes()},
    {"sum", Loops(EmitReduce)},
    {"mean", Loops(EmitReduce)},
    {"max", Loops(EmitReduce)},
    {"min", Loops(EmitReduce)},
    {"prod", Loops(EmitReduce)},
    {"argmax", Loops(EmitArgReduce)},
    {"argmin", Loops(EmitArgReduce)},
    {"nn.conv2d", Kernel(PlanConv2D, Conv2DEpilogueLength)},
    {"nn.dense", Kernel(PlanDense)},
    {"nn.batch_matmul", Kernel(PlanBatchMatmul)},
    {"nn.max_pool2d", Kernel(PlanPool2D)},
    {"nn.avg_pool2d", Kernel(PlanPool2D)},
    {"nn.global_avg_pool2d", Loops(EmitGlobalAvgPool2D)},
    {"nn.max_pool2d_with_indices", Loops(EmitMaxPool2DWithIndices)},
    {"nn.softmax", Kernel(PlanSoftmax)},
    {"nn.layer_norm", Kernel(PlanLayerNorm)},
    {"transpose", Loops(EmitTranspose)},
    {"concatenate", Loops(EmitConcatenate)},
    {"strided_slice", Loops(EmitStridedSlice)},
    {"take", Loops(EmitTake)},
    {"split", Loops(EmitSplit)},
    {"nn.pad", Loops(EmitPad)},
    {"trilu", Loops(EmitTrilu)},
    {"tile", Loops(EmitTile)},
    {"gather", Loops(EmitGather)},
    {"gather_nd", Loops(EmitGatherNd)},
    {"scatter_elements", Loops(EmitScatterElements)},
    {"scatter_nd", Loops(EmitScatterNd)},
    {"one_hot", Loops(EmitOneHot)},
    {"cumsum", Loops(EmitCumsum)},
    {"topk", Kernel(PlanTopk)},
    {"unique", Kernel(PlanUnique)},
    {"vision.non_max_suppression", Kernel(PlanNonMaxSuppression)},
    {"nonzero", Loops(EmitNonZero)},
    {"compress", Loops(EmitCompress)},
    {"tfidf_vectorizer", Loops(EmitTfIdfVectorizer)},
    {"layout_transform", Loops(EmitLayoutTransform)},
    {"image.resize", Loops(EmitResize)},
    {"image.grid_sample", Kernel(PlanGridSample)},
    {"vision.roi_align", Kernel(PlanRoiAlign)},
    {"det", Kernel(PlanDet)},
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

}  // namespace kiln::backend
