// The ops that keep a batch's samples apart, and where each value holds them.
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

const OpRef kReshape("reshape"), kSqueeze("squeeze"), kExpandDims("expand_dims");
const OpRef kTranspose("transpose"), kLayoutTransform("layout_transform"), kStridedSlice("strided_slice");
const OpRef kPad("nn.pad"), kTile("tile"), kTake("take"), kBatchMatmul("nn.batch_matmul");
const OpRef kConv2D("nn.conv2d"), kConv2DWinograd("nn.conv2d_winograd"), kConv2DTranspose("nn.conv2d_transpose");
const OpRef kConv3DTranspose("nn.conv3d_transpose"), kDense("nn.dense"), kBiasAdd("nn.bias_add");
const OpRef kBatchNorm("nn.batch_norm"), kLayerNorm("nn.layer_norm"), kMaxPool("nn.max_pool2d");
const OpRef kMaxPoolIndices("nn.max_pool2d_with_indices"), kAvgPool("nn.avg_pool2d");
const OpRef kGlobalAvgPool("nn.global_avg_pool2d"), kSoftmax("nn.softmax"), kDropout("nn.dropout");
const OpRef kCumsum("cumsum"), kTopK("topk"), kConcatenate("concatenate"), kSplit("split"), kGather("gather");
const OpRef kResize("image.resize"), kTrilu("trilu"), kWhere("where"), kBroadcastTo("broadcast_to");

constexpr int64_t kWholeAxis = int64_t{1} << 31;  // a slice end at least this takes the rest of the axis

const TensorType& TensorOf(const Expr& e) { return e->type().tensor(); }
uint64_t Bit(int axis) { return uint64_t{1} << axis; }
bool Has(BatchAxes axes, int axis) { return (axes & Bit(axis)) != 0; }

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

// Where the samples go through a reshape: to the result's axes of extent 1 that start at their
// axis's place (the product of the extents before it), all of them when there are several (an
// axis of the samples alone, split off again when they were merged with another: [12, S, S] ->
// [1, 12, S, S] is [n * 12, S, S] -> [n, 12, S, S] at n); when there is none, to the axis holding
// that place (merged with it: [1, S, D] -> [S, D]).
BatchAxes ReshapedAxes(const std::vector<int64_t>& in, BatchAxes axes, const std::vector<int64_t>& out) {
  BatchAxes result = 0;
  for (int k = 0; k < static_cast<int>(in.size()); ++k) {
    if (!Has(axes, k)) continue;
    int64_t place = 1;
    for (int i = 0; i < k; ++i) place *= in[i];
    BatchAxes ones = 0, holding = 0;
    int64_t before = 1;
    for (int j = 0; j < static_cast<int>(out.size()); ++j) {
      if (out[j] == 1 && before == place) ones |= Bit(j);
      if (before <= place && place < before * out[j]) holding |= Bit(j);
      before *= out[j];
    }
    result |= ones != 0 ? ones : holding;
  }
  return result;
}

// Where the samples are in the result(s) of `call`, given where they are in its arguments (0:
// an argument that does not hold them); or why the call mixes or moves them in a way that
// computing each sample alone would not give.
std::string ResultAxes(const CallNode& call, const std::vector<BatchAxes>& args, BatchAxes& result) {
  const OpDef* op = call.op;
  const TensorType& data = TensorOf(call.args[0]);
  const int rank = data.ndim();
  const Type& type = call.type();
  const TensorType* out = type.is_tensor() ? &type.tensor() : nullptr;
  auto only_first = [&] {
    for (size_t i = 1; i < args.size(); ++i) {
      if (args[i] != 0) return false;
    }
    return true;
  };
  result = 0;
  if (IsAnyOf(op, {&kReshape, &kSqueeze, &kExpandDims})) {
    result = ReshapedAxes(data.shape, args[0], out->shape);
    return result != 0 ? "" : "its result has no axis to hold them";
  }
  // Elementwise ops (aligned from the last axis): no argument holding samples is broadcast along
  // their axis.
  if (op->pattern == OpPattern::kElemWise || op->pattern == OpPattern::kBroadcast || kWhere.Is(op)) {
    for (size_t i = 0; i < call.args.size(); ++i) {
      const TensorType& arg = TensorOf(call.args[i]);
      int shift = out->ndim() - arg.ndim();
      for (int a = 0; a < arg.ndim(); ++a) {
        if (!Has(args[i], a)) continue;
        if (arg.shape[a] != out->shape[a + shift]) return "an operand holding them would be broadcast along their axis";
        result |= Bit(a + shift);
      }
    }
    return "";
  }
  if (kConcatenate.Is(op)) {  // the same axes in every piece, joined along another
    bool all;
    int axis = AxesOf(call, rank, all).at(0);
    for (BatchAxes a : args) {
      if (a == 0) continue;
      if (result != 0 && a != result) return "its pieces hold them along different axes";
      result = a;
    }
    return Has(result, axis) ? "it joins along their axis" : "";
  }
  if (kBatchMatmul.Is(op)) {  // [B, M, K] x [B, K, N]: along B (both), M (a) or N (b), never K
    const TensorType &a = data, &b = TensorOf(call.args[1]);
    bool ta = call.attrs.GetInt("transpose_a") != 0, tb = call.attrs.GetInt("transpose_b") != 0;
    int a_rows = ta ? 2 : 1, b_columns = tb ? 1 : 2;
    if ((args[0] & ~(Bit(0) | Bit(a_rows))) != 0 || (args[1] & ~(Bit(0) | Bit(b_columns))) != 0) {
      return "its product sums over their axis";
    }
    if ((Has(args[0], 0) && a.shape[0] != out->shape[0]) || (Has(args[1], 0) && b.shape[0] != out->shape[0])) {
      return "an operand holding them would be broadcast along their axis";
    }
    if (Has(args[0], 0) != Has(args[1], 0) && args[0] != 0 && args[1] != 0) return "its operands hold them apart";
    result = ((args[0] | args[1]) & Bit(0)) | (Has(args[0], a_rows) ? Bit(1) : 0) | (Has(args[1], b_columns) ? Bit(2) : 0);
    return "";
  }
  if (kTake.Is(op)) {
    bool all;
    int axis = AxesOf(call, rank, all).at(0);
    const int indices_rank = TensorOf(call.args[1]).ndim();
    if (args[0] != 0 && args[1] != 0) return "both the data and the indices hold them";
    if (args[1] != 0) {
      result = args[1] << axis;
      return "";
    }
    if (Has(args[0], axis)) return "it gathers along their axis";
    for (int a = 0; a < rank; ++a) {
      if (Has(args[0], a)) result |= Bit(a < axis ? a : a + indices_rank - 1);
    }
    return "";
  }
  if (!only_first()) return "an argument after its first (a weight or an operand it combines) holds them";
  const BatchAxes axes = args[0];
  if (kTranspose.Is(op)) {
    const std::vector<int64_t>& perm = call.attrs.GetInts("axes");
    for (int j = 0; j < rank; ++j) {
      int from = perm.empty() ? rank - 1 - j : static_cast<int>(NormalizeAxis(perm[j], rank));
      if (Has(axes, from)) result |= Bit(j);
    }
    return "";
  }
  // Convolutions, pooling and layout changes of images: the samples are the images.
  if (IsAnyOf(op, {&kConv2D, &kConv2DWinograd, &kConv2DTranspose, &kConv3DTranspose, &kMaxPool, &kMaxPoolIndices,
                   &kAvgPool, &kGlobalAvgPool, &kLayoutTransform})) {
    if (axes != Bit(0)) return "it holds images along axis 0, and the samples lie along another";
    if (kLayoutTransform.Is(op)) {
      const std::string &from = call.attrs.GetString("src_layout"), &to = call.attrs.GetString("dst_layout");
      if (from.empty() || to.empty() || from[0] != to[0]) return "it moves axis 0";
    }
    result = Bit(0);
    return "";
  }
  if (kDense.Is(op)) {  // data [..., K]: any axis but K
    if (Has(axes, rank - 1)) return "its product sums over their axis";
    result = axes;
    return "";
  }
  if (kStridedSlice.Is(op)) {  // their axes whole (a slice written as "all of it")
    const std::vector<int64_t>& sliced = call.attrs.GetInts("axes");
    const std::vector<int64_t>& begin = call.attrs.GetInts("begin");
    const std::vector<int64_t>& end = call.attrs.GetInts("end");
    const std::vector<int64_t>& strides = call.attrs.GetInts("strides");
    for (size_t i = 0; i < begin.size(); ++i) {
      int axis = sliced.empty() ? static_cast<int>(i) : NormalizeAxis(sliced[i], rank);
      if (!Has(axes, axis)) continue;
      int64_t stride = i < strides.size() ? strides[i] : 1;
      if (begin[i] != 0 || stride != 1 || i >= end.size() || end[i] < kWholeAxis) return "it slices their axis";
    }
    result = axes;
    return "";
  }
  // Ops that keep the shape's axes: their axes must keep their extent (no padding, repeating,
  // broadcasting or resizing of them).
  if (IsAnyOf(op, {&kPad, &kTile, &kBroadcastTo, &kResize, &kDropout, &kTrilu})) {
    if (out == nullptr || out->ndim() != rank) return "it changes the axes";
    for (int a = 0; a < rank; ++a) {
      if (Has(axes, a) && out->shape[a] != data.shape[a]) return "it changes the extent of their axis";
    }
    if (kTrilu.Is(op) && (Has(axes, rank - 1) || Has(axes, rank - 2))) return "its matrices hold them";
    result = axes;
    return "";
  }
  // Ops along axes (softmax, normalization, reductions, splits, cumulative sums, top-k): any axes
  // but theirs; reductions that drop axes move the ones after them.
  bool along_axis = IsAnyOf(op, {&kSoftmax, &kLayerNorm, &kBatchNorm, &kBiasAdd, &kSplit, &kCumsum, &kTopK, &kGather}) ||
                    op->pattern == OpPattern::kCommReduce;
  if (along_axis) {
    bool all;
    std::vector<int> along = AxesOf(call, rank, all);
    if (all) return "it reduces every axis";
    for (int a : along) {
      if (Has(axes, a)) return "it works along their axis";
    }
    bool drops = op->pattern == OpPattern::kCommReduce && call.attrs.Has("keepdims") && call.attrs.GetInt("keepdims") == 0;
    for (int a = 0, kept = 0; a < rank; ++a) {
      bool dropped = drops && std::find(along.begin(), along.end(), a) != along.end();
      if (!dropped && Has(axes, a)) result |= Bit(kept);
      if (!dropped) ++kept;
    }
    return "";
  }
  return "kiln has no rule yet for how it treats them";
}

}  // namespace

std::vector<BatchAxes> BatchedOutputs(const FunctionNode& function, const std::vector<BatchAxes>& param_axes) {
  std::map<const ExprNode*, std::vector<BatchAxes>> where;  // per value: per tensor of it (tuple fields)
  for (size_t i = 0; i < function.params.size(); ++i) where[function.params[i].get()] = {param_axes.at(i)};
  auto fields = [](const Expr& e) { return e->type().is_tuple() ? e->type().fields().size() : size_t{1}; };
  for (const Expr& e : PostOrder(function.body)) {
    if (e->kind() == ExprKind::kVar) continue;
    std::vector<BatchAxes>& axes = where[e.get()];
    axes.assign(fields(e), 0);
    if (const auto* tuple = e->As<TupleNode>()) {
      for (size_t i = 0; i < tuple->fields.size(); ++i) axes[i] = where[tuple->fields[i].get()].at(0);
      continue;
    }
    if (const auto* item = e->As<TupleGetItemNode>()) {
      axes[0] = where[item->tuple.get()].at(static_cast<size_t>(item->index));
      continue;
    }
    const auto* call = e->As<CallNode>();
    if (call == nullptr) continue;
    std::vector<BatchAxes> args;
    bool any = false;
    for (const Expr& arg : call->args) {
      args.push_back(where[arg.get()].at(0));
      any = any || args.back() != 0;
    }
    if (!any) continue;
    runtime::Check(call->op != nullptr, "a batch dimension does not reach into functions of external codegens ",
                   "yet: compile without --byoc, or with a fixed batch");
    BatchAxes result = 0;
    std::string why = ResultAxes(*call, args, result);
    runtime::Check(why.empty(), "the batch dimension cannot be decided at run time: ", DescribeCall(e), " does not ",
                   "keep the samples apart (", why, "); compile with a fixed batch instead");
    axes.assign(axes.size(), result);
  }
  // An output that does not hold samples is computed from the weights alone: the same at every
  // sample.
  std::vector<BatchAxes> outputs;
  const std::vector<BatchAxes>& body = where[function.body.get()];
  outputs.insert(outputs.end(), body.begin(), body.end());
  return outputs;
}

}  // namespace kiln::backend
