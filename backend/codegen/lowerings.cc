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

// A float attribute of `call` as a literal of type `t`.
std::string AttrOf(Call call, const char* name, CType_ t) { return t + "(" + FloatLiteral(call.attrs.GetFloat(name)) + ")"; }

// One entry per op: the op's name, then its lowering.
struct Entry {
  const char* op;
  Lowering lowering;
};

using Step = kernels::EpilogueStep;

// An elementwise op computed by `function` of kernels/elementwise/scalar_ops.h on its elements
// and then its float attributes `attrs`.
Lowering Scalar(const char* function, std::vector<const char*> attrs = {},
                std::optional<Step::Op> epilogue_step = std::nullopt) {
  Lowering lowering;
  lowering.scalar = {function, std::move(attrs)};
  lowering.epilogue_step = epilogue_step;
  return lowering;
}

Lowering Scalar(const char* function, Step::Op epilogue_step) { return Scalar(function, {}, epilogue_step); }

// An elementwise op whose arguments after the first lie along its `axis`.
Lowering AlongAxis(const char* function, std::vector<const char*> attrs = {}) {
  Lowering lowering = Scalar(function, std::move(attrs));
  lowering.params_along_axis = true;
  return lowering;
}

// An elementwise op written as an expression of its own.
Lowering Element(ElementExpr element) {
  Lowering lowering;
  lowering.element = element;
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

Lowering Reduces(OpEmitter emit) {
  Lowering lowering = Loops(emit);
  lowering.reduces = true;
  return lowering;
}

Lowering Bytes() {
  Lowering lowering;
  lowering.copy = true;
  return lowering;
}

const Entry kLowerings[] = {
    {"add", Scalar("Add", Step::kAdd)},
    {"subtract", Scalar("Subtract", Step::kSubtract)},
    {"multiply", Scalar("Multiply", Step::kMultiply)},
    {"divide", Scalar("Divide")},
    {"power", Scalar("Power")},
    {"maximum", Scalar("Maximum", Step::kMaximum)},
    {"minimum", Scalar("Minimum", Step::kMinimum)},
    {"trunc_mod", Scalar("TruncMod")},
    {"floor_mod", Scalar("FloorMod")},
    {"left_shift", Scalar("LeftShift")},
    {"right_shift", Scalar("RightShift")},
    {"bitwise_and", Scalar("BitwiseAnd")},
    {"bitwise_or", Scalar("BitwiseOr")},
    {"bitwise_xor", Scalar("BitwiseXor")},
    {"bitwise_not", Scalar("BitwiseNot")},
    {"equal", Scalar("Equal")},
    {"less", Scalar("Less")},
    {"greater", Scalar("Greater")},
    {"less_equal", Scalar("LessEqual")},
    {"greater_equal", Scalar("GreaterEqual")},
    {"logical_and", Scalar("LogicalAnd")},
    {"logical_or", Scalar("LogicalOr")},
    {"logical_xor", Scalar("LogicalXor")},
    {"logical_not", Scalar("LogicalNot")},
    {"where", Scalar("Select")},
    {"if_then_else", Scalar("Select")},
    {"nn.relu", Scalar("Relu", Step::kRelu)},
    {"negative", Scalar("Negative")},
    {"abs", Scalar("Abs")},
    {"sigmoid", Scalar("Sigmoid", Step::kSigmoid)},
    {"tanh", Scalar("Tanh")},
    {"exp", Scalar("Exp")},
    {"log", Scalar("Log")},
    {"sqrt", Scalar("Sqrt")},
    {"rsqrt", Scalar("Rsqrt")},
    {"erf", Scalar("Erf")},
    {"floor", Scalar("Floor")},
    {"ceil", Scalar("Ceil")},
    {"round", Scalar("Round")},
    {"nn.leaky_relu", Scalar("LeakyRelu", {"alpha"})},
    {"sin", Scalar("Sin")},
    {"cos", Scalar("Cos")},
    {"tan", Scalar("Tan")},
    {"asin", Scalar("Asin")},
    {"acos", Scalar("Acos")},
    {"atan", Scalar("Atan")},
    {"sinh", Scalar("Sinh")},
    {"cosh", Scalar("Cosh")},
    {"asinh", Scalar("Asinh")},
    {"acosh", Scalar("Acosh")},
    {"atanh", Scalar("Atanh")},
    {"nn.softplus", Scalar("Softplus")},
    {"nn.softsign", Scalar("Softsign")},
    {"nn.hard_swish", Scalar("HardSwish", Step::kHardSwish)},
    {"nn.gelu", Scalar("Gelu", Step::kGelu)},
    {"nn.elu", Scalar("Elu", {"alpha"})},
    {"nn.selu", Scalar("Selu", {"alpha", "gamma"})},
    {"nn.celu", Scalar("Celu", {"alpha"})},
    {"nn.thresholded_relu", Scalar("ThresholdedRelu", {"alpha"})},
    {"clip", Scalar("Clip", {"a_min", "a_max"}, Step::kClip)},
    // To and from bfloat16 and float8 through float (their structs convert); to float8 saturating or not.
    {"cast", Element([](Call call, Elements v, CType_) {
       DLDataType from = call.args[0]->type().tensor().dtype, to = call.type().tensor().dtype;
       if (runtime::IsFloat8(to)) {
         return CType(to) + "(static_cast<float>(" + v[0] + "), " + (call.attrs.GetInt("saturate") != 0 ? "true" : "false") + ")";
       }
       bool narrow = runtime::IsFloat8(from) || from.code == kDLBfloat || to.code == kDLBfloat;
       return narrow ? "static_cast<float>(" + v[0] + ")" : v[0];
     })},
    {"broadcast_to", Element([](Call, Elements v, CType_) { return v[0]; })},
    {"nn.bias_add", AlongAxis("Add")},
    // (x - mean) / sqrt(var + eps) * gamma + beta
    {"nn.batch_norm", AlongAxis("BatchNorm", {"epsilon"})},  // (x, gamma, beta, mean, var)
    {"copy", Bytes()},
    {"nn.dropout", Bytes()},
    {"reshape", Bytes()},
    {"squeeze", Bytes()},
    {"expand_dims", Bytes()},
    {"sum", Reduces(EmitReduce)},
    {"mean", Reduces(EmitReduce)},
    {"max", Reduces(EmitReduce)},
    {"min", Reduces(EmitReduce)},
    {"prod", Reduces(EmitReduce)},
    {"argmax", Reduces(EmitArgReduce)},
    {"argmin", Reduces(EmitArgReduce)},
    {"nn.conv2d", Kernel(PlanConv2D, Conv2DEpilogueLength)},
    {"nn.conv2d_winograd", Kernel(PlanConv2DWinograd, Conv2DEpilogueLength)},
    {"nn.conv2d_pointwise_depthwise", Kernel(PlanConv2DPointwiseDepthwise, Conv2DEpilogueLength)},
    {"nn.conv2d_transpose", Kernel(PlanConvTranspose, ConvTransposeEpilogueLength)},
    {"nn.conv3d_transpose", Kernel(PlanConvTranspose, ConvTransposeEpilogueLength)},
    {"nn.dense", Kernel(PlanDense, DenseEpilogueLength)},
    {"nn.batch_matmul", Kernel(PlanBatchMatmul)},
    {"nn.max_pool2d", Kernel(PlanPool2D)},
    {"nn.avg_pool2d", Kernel(PlanPool2D)},
    {"nn.global_avg_pool2d", Reduces(EmitGlobalAvgPool2D)},
    {"nn.max_pool2d_with_indices", Loops(EmitMaxPool2DWithIndices)},
    {"nn.softmax", Kernel(PlanSoftmax)},
    {"nn.layer_norm", Kernel(PlanLayerNorm)},
    {"nn.attention", Kernel(PlanAttention)},
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
    {"dyn.reshape", Loops(EmitDynReshape)},
    {"dyn.squeeze", Loops(EmitDynSqueeze)},
    {"dyn.unsqueeze", Loops(EmitDynUnsqueeze)},
    {"dyn.reduce", Loops(EmitDynReduce)},
    {"dyn.strided_slice", Loops(EmitDynStridedSlice)},
    {"dyn.topk", Loops(EmitDynTopk)},
    {"dyn.split", Loops(EmitDynSplit)},
    {"dyn.cumsum", Loops(EmitDynCumsum)},
    {"dyn.expand_shape", Loops(EmitDynExpandShape)},
    {"dyn.tile_shape", Loops(EmitDynTileShape)},
    {"dyn.pad_shape", Loops(EmitDynPadShape)},
    {"dyn.values_shape", Loops(EmitDynValuesShape)},
    {"dyn.range_shape", Loops(EmitDynRangeShape)},
    {"dyn.expand", Loops(EmitDynExpand)},
    {"dyn.tile", Loops(EmitDynTile)},
    {"dyn.pad", Loops(EmitDynPad)},
    {"dyn.constant_of_shape", Loops(EmitDynConstantOfShape)},
    {"dyn.range", Loops(EmitDynRange)},
    {"dyn.resize_shape", Loops(EmitDynResizeShape)},
    {"dyn.resize", Loops(EmitDynResize)},
    {"dyn.one_hot_shape", Loops(EmitDynOneHotShape)},
    {"dyn.one_hot", Loops(EmitDynOneHot)},
    {"dyn.window_shape", Loops(EmitDynWindowShape)},
    {"dyn.window", Loops(EmitDynWindow)},
    {"dyn.center_crop_pad_shape", Loops(EmitDynCenterCropPadShape)},
    {"dyn.center_crop_pad", Loops(EmitDynCenterCropPad)},
    {"dyn.affine_grid_shape", Loops(EmitDynAffineGridShape)},
    {"dyn.affine_grid", Loops(EmitDynAffineGrid)},
    {"tfidf_vectorizer", Loops(EmitTfIdfVectorizer)},
    {"layout_transform", Loops(EmitLayoutTransform)},
    {"image.resize", Loops(EmitResize)},
    {"image.grid_sample", Kernel(PlanGridSample)},
    {"vision.roi_align", Kernel(PlanRoiAlign)},
    {"det", Kernel(PlanDet)},
};

}  // namespace

std::string ElementExpression(const Lowering& lowering, const ir::CallNode& call, const std::vector<std::string>& v,
                              const std::string& t) {
  if (lowering.scalar.function == nullptr) return lowering.element(call, v, t);
  std::string args;
  for (const std::string& value : v) args += (args.empty() ? "" : ", ") + value;
  for (const char* attr : lowering.scalar.attrs) args += ", " + AttrOf(call, attr, t);
  return std::string("kiln::kernels::scalar::") + lowering.scalar.function + "(" + args + ")";
}

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
