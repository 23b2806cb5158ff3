// The ops that keep a batch's samples apart, and where they do.
#include "backend/batch_samples.h"

#include <map>
#include <string>

#include "ir/op.h"
#include "ir/ops/infer_util.h"
#include "ir/provenance.h"
#include "runtime/error.h"

namespace kiln::backend {

using namespace ir;

namespace {

// Ops that only reinterpret their argument's elements in row-major order: a sample's elements
// stay one run, whatever the shapes.
const OpRef kReshape("reshape"), kSqueeze("squeeze"), kExpandDims("expand_dims");
const OpRef kTranspose("transpose"), kLayoutTransform("layout_transform"), kStridedSlice("strided_slice");
const OpRef kPad("nn.pad"), kTile("tile"), kTake("take"), kBatchMatmul("nn.batch_matmul");
// Ops computed per sample that take their batched argument first and their weights after it.
const OpRef kConv2D("nn.conv2d"), kConv2DWinograd("nn.conv2d_winograd"), kConv2DTranspose("nn.conv2d_transpose");
const OpRef kConv3DTranspose("nn.conv3d_transpose"), kDense("nn.dense"), kBiasAdd("nn.bias_add");
const OpRef kBatchNorm("nn.batch_norm"), kLayerNorm("nn.layer_norm"), kMaxPool("nn.max_pool2d");
const OpRef kMaxPoolIndices("nn.max_pool2d_with_indices"), kAvgPool("nn.avg_pool2d");
const OpRef kGlobalAvgPool("nn.global_avg_pool2d"), kSoftmax("nn.softmax"), kDropout("nn.dropout");
const OpRef kCumsum("cumsum"), kTopK("topk"), kConcatenate("concatenate"), kSplit("split"), kGather("gather");
const OpRef kResize("image.resize"), kTrilu("trilu"), kWhere("where"), kBroadcastTo("broadcast_to");

constexpr int64_t kWholeAxis = int64_t{1} << 31;  // a slice end at least this takes the rest of the axis

const TensorType& TensorOf(const Expr& e) { return e->type().tensor(); }

// The op's axes from its "axis" attribute (int or ints, normalized for `ndim`); `all` set when an
// empty list means every axis.
std::vector<int> AxesOf(const CallNode& call, int ndim, bool& all) {
  std::vector<int> axes;
  all = false;
  if (!call.attrs.Has("axis")) return axes;
  const AttrValue& value = call.attrs.values().at("axis");
  if (const auto* one = std::get_if<int64_t>(&value)) {
    axes.push_back(NormalizeAxis(*one, ndim));
  } else if (const auto* many = std::get_if<std::vector<int64_t>>(&value)) {
    for (int64_t a : *many) axes.push_back(NormalizeAxis(a, ndim));
    all = many->empty();
  }
  return axes;
}

// Why the call does not keep the samples apart, or empty when it does. `batched` per argument.
std::string SampleMixing(const CallNode& call, const std::vector<bool>& batched) {
  const OpDef* op = call.op;
  if (!call.type().is_tensor()) {
    if (!IsAnyOf(op, {&kSplit, &kTopK, &kMaxPoolIndices, &kBatchNorm})) return "it returns a tuple kiln has no rule for";
  }
  auto first_batched_only = [&]() {
    for (size_t i = 1; i < batched.size(); ++i) {
      if (batched[i]) return false;
    }
    return batched[0];
  };
  const TensorType& data = TensorOf(call.args[0]);
  if (IsAnyOf(op, {&kReshape, &kSqueeze, &kExpandDims})) {
    return call.type().tensor().ndim() == 0 ? "its result is a scalar" : "";
  }
  // Elementwise ops, with or without broadcasting: no batched operand is broadcast along axis 0.
  if (op->pattern == OpPattern::kElemWise || op->pattern == OpPattern::kBroadcast || IsAnyOf(op, {&kWhere})) {
    const TensorType& out = call.type().tensor();
    for (size_t i = 0; i < call.args.size(); ++i) {
      const TensorType& arg = TensorOf(call.args[i]);
      if (batched[i] && (arg.ndim() != out.ndim() || out.ndim() == 0 || arg.shape[0] != out.shape[0])) {
        return "a batched operand would be broadcast along axis 0";
      }
    }
    return "";
  }
  if (kBatchMatmul.Is(op)) return "";  // a product per matrix of axis 0, either operand batched
  if (kTake.Is(op)) {
    bool all;
    int axis = AxesOf(call, data.ndim(), all).at(0);
    if (batched[0] && batched[1]) return "both the data and the indices are batched";
    if (batched[0]) return axis == 0 ? "it gathers along axis 0" : "";
    return axis == 0 ? "" : "its batched indices would not be axis 0 of the result";
  }
  if (kConcatenate.Is(op)) {  // per sample, the pieces joined along another axis
    bool all;
    if (AxesOf(call, data.ndim(), all).at(0) == 0) return "it joins along axis 0";
    const TensorType& out = call.type().tensor();
    for (size_t i = 0; i < call.args.size(); ++i) {
      if (batched[i] && TensorOf(call.args[i]).shape[0] != out.shape[0]) return "a batched piece has another axis 0";
    }
    return "";
  }
  if (!first_batched_only()) return "an argument after its first (a weight or an operand it combines) is batched";
  if (kTranspose.Is(op)) {
    const std::vector<int64_t>& axes = call.attrs.GetInts("axes");
    return !axes.empty() && axes[0] == 0 ? "" : "it moves axis 0";
  }
  if (kLayoutTransform.Is(op)) {
    const std::string &from = call.attrs.GetString("src_layout"), &to = call.attrs.GetString("dst_layout");
    return !from.empty() && !to.empty() && from[0] == to[0] ? "" : "it moves axis 0";
  }
  if (kStridedSlice.Is(op)) {
    // Axis 0 is one sample here: only a slice written as "all of it" keeps every sample.
    const std::vector<int64_t>& axes = call.attrs.GetInts("axes");
    const std::vector<int64_t>& begin = call.attrs.GetInts("begin");
    const std::vector<int64_t>& end = call.attrs.GetInts("end");
    const std::vector<int64_t>& strides = call.attrs.GetInts("strides");
    for (size_t i = 0; i < begin.size(); ++i) {
      int axis = axes.empty() ? static_cast<int>(i) : NormalizeAxis(axes[i], data.ndim());
      if (axis != 0) continue;
      int64_t stride = i < strides.size() ? strides[i] : 1;
      if (begin[i] != 0 || stride != 1 || i >= end.size() || end[i] < kWholeAxis) return "it slices axis 0";
    }
    return "";
  }
  if (kPad.Is(op)) {
    const std::vector<int64_t>& pad = call.attrs.GetInts("pad_width");
    return pad.size() >= 2 && pad[0] == 0 && pad[1] == 0 ? "" : "it pads axis 0";
  }
  if (kTile.Is(op)) {
    const std::vector<int64_t>& reps = call.attrs.GetInts("reps");
    return !reps.empty() && reps[0] == 1 ? "" : "it repeats axis 0";
  }
  if (kBroadcastTo.Is(op)) {
    const TensorType& out = call.type().tensor();
    return out.ndim() == data.ndim() && data.ndim() > 0 && out.shape[0] == data.shape[0] ? "" : "it broadcasts axis 0";
  }
  if (kTrilu.Is(op)) return data.ndim() >= 3 ? "" : "its matrix holds axis 0";
  if (kResize.Is(op)) {
    return call.type().tensor().ndim() > 0 && call.type().tensor().shape[0] == data.shape[0] ? "" : "it resizes axis 0";
  }
  // Ops along an axis (softmax, reductions, concatenation, cumulative sums, normalization, top-k):
  // any axis but 0.
  bool along_axis = IsAnyOf(op, {&kSoftmax, &kLayerNorm, &kBatchNorm, &kBiasAdd, &kSplit, &kCumsum,
                                 &kTopK, &kGather}) ||
                    op->pattern == OpPattern::kCommReduce;
  if (along_axis) {
    bool all;
    std::vector<int> axes = AxesOf(call, data.ndim(), all);
    if (all || data.ndim() == 0) return "it reduces every axis";
    for (int a : axes) {
      if (a == 0) return "it works along axis 0";
    }
    return "";
  }
  if (IsAnyOf(op, {&kConv2D, &kConv2DWinograd, &kConv2DTranspose, &kConv3DTranspose, &kDense, &kMaxPool,
                   &kMaxPoolIndices, &kAvgPool, &kGlobalAvgPool, &kDropout})) {
    return "";
  }
  return "kiln has no rule yet for how it treats axis 0";
}

}  // namespace

std::vector<bool> BatchedOutputs(const FunctionNode& function, const std::vector<bool>& batched_params) {
  std::map<const ExprNode*, bool> batched;  // per value of the body (tuples: whether any field is)
  for (size_t i = 0; i < function.params.size(); ++i) batched[function.params[i].get()] = batched_params.at(i);
  for (const Expr& e : PostOrder(function.body)) {
    bool any = false;
    for (const Expr& input : Inputs(e)) any = any || batched[input.get()];
    if (e->kind() == ExprKind::kVar) continue;
    batched[e.get()] = any;
    const auto* call = e->As<CallNode>();
    if (call == nullptr || !any) continue;
    runtime::Check(call->op != nullptr, "a batch dimension does not reach into functions of external codegens ",
                   "yet: compile without --byoc, or with a fixed batch");
    std::vector<bool> args;
    for (const Expr& arg : call->args) args.push_back(batched[arg.get()]);
    std::string why = SampleMixing(*call, args);
    runtime::Check(why.empty(), "the batch dimension cannot be decided at run time: ", DescribeCall(e), " does not ",
                   "keep the samples apart (", why, "); compile with a fixed batch instead");
  }
  // An output that does not hold samples is computed from the weights alone: the same at every
  // sample.
  std::vector<bool> outputs;
  if (const auto* tuple = function.body->As<TupleNode>()) {
    for (const Expr& field : tuple->fields) outputs.push_back(batched[field.get()]);
  } else if (function.body->type().is_tuple()) {
    for (size_t i = 0; i < function.body->type().fields().size(); ++i) outputs.push_back(batched[function.body.get()]);
  } else {
    outputs.push_back(batched[function.body.get()]);
  }
  return outputs;
}

}  // namespace kiln::backend
