// Where a model imported for one and for two samples holds them, and whether its ops keep them apart.
#include "frontend/batch_samples.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/op.h"
#include "ir/ops/infer_util.h"
#include "ir/provenance.h"
#include "runtime/error.h"

namespace kiln::frontend {

using namespace ir;

namespace {

constexpr int kNone = -1;  // a value that holds no samples

const OpRef kReshape("reshape"), kSqueeze("squeeze"), kExpandDims("expand_dims");
const OpRef kTranspose("transpose"), kLayoutTransform("layout_transform"), kStridedSlice("strided_slice");
const OpRef kPad("nn.pad"), kTile("tile"), kTake("take"), kBatchMatmul("nn.batch_matmul");
const OpRef kConv2D("nn.conv2d"), kConv2DWinograd("nn.conv2d_winograd"), kConv2DTranspose("nn.conv2d_transpose");
const OpRef kConv3DTranspose("nn.conv3d_transpose"), kDense("nn.dense"), kBiasAdd("nn.bias_add");
const OpRef kBatchNorm("nn.batch_norm"), kLayerNorm("nn.layer_norm"), kMaxPool("nn.max_pool2d");
const OpRef kAvgPool("nn.avg_pool2d"), kGlobalAvgPool("nn.global_avg_pool2d"), kSoftmax("nn.softmax");
const OpRef kDropout("nn.dropout"), kCumsum("cumsum"), kTopK("topk"), kConcatenate("concatenate"), kSplit("split");
const OpRef kGather("gather"), kResize("image.resize"), kTrilu("trilu"), kBroadcastTo("broadcast_to");

const std::string kFixedBatch = "; compile with a fixed batch instead";

int64_t Product(const std::vector<int64_t>& shape, int end) {
  int64_t p = 1;
  for (int i = 0; i < end; ++i) p *= shape[i];
  return p;
}

// The axis of a tensor that holds the samples, from its extents for one sample and for two: the
// one that doubles; kNone when none changes. Throws when an extent changes otherwise, or two double.
int SampleAxis(const TensorType& one, const TensorType& two, const std::string& what) {
  runtime::Check(one.ndim() == two.ndim() && one.dtype == two.dtype, what, " has another type at a batch of 2 (",
                 ShapeText(two.shape), ") than at 1 (", ShapeText(one.shape), ")", kFixedBatch);
  int axis = kNone;
  for (int a = 0; a < one.ndim(); ++a) {
    if (one.shape[a] == two.shape[a]) continue;
    runtime::Check(two.shape[a] == 2 * one.shape[a] && axis == kNone, what, " has the shape ", ShapeText(one.shape),
                   " at a batch of 1 and ", ShapeText(two.shape), " at 2: ",
                   axis == kNone ? "an extent that is not the batch times one sample's"
                                 : "two axes that grow with the batch (samples combined with each other)",
                   kFixedBatch);
    axis = a;
  }
  return axis;
}

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

// Why `call` (for one sample) does not keep the samples apart, or empty when it does: `args` and
// `result` are the axes that hold them (kNone: none; `result` of a tuple: its fields').
std::string Mixing(const CallNode& call, const std::vector<int>& args, int result) {
  const OpDef* op = call.op;
  if (op == nullptr) return "kiln has no rule yet for how a function treats the samples";
  auto type_of = [&](size_t i) -> const TensorType& { return call.args[i]->type().tensor(); };
  const TensorType& data = type_of(0);
  const int rank = data.ndim();
  const TensorType* out = call.type().is_tensor() ? &call.type().tensor() : nullptr;
  bool only_first = std::all_of(args.begin() + 1, args.end(), [](int a) { return a == kNone; });

  if (IsAnyOf(op, {&kReshape, &kSqueeze, &kExpandDims})) return "";  // where they go: ReshapedOuter
  if (op->pattern == OpPattern::kElemWise || op->pattern == OpPattern::kBroadcast) {
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i] == kNone) continue;
      int aligned = args[i] + out->ndim() - type_of(i).ndim();
      if (aligned != result || type_of(i).shape[args[i]] != out->shape[result]) {
        return "an operand holding the samples would be broadcast, or combined with one holding them elsewhere";
      }
    }
    return "";
  }
  if (kConcatenate.Is(op)) {
    bool all;
    if (AxesOf(call, rank, all).at(0) == result) return "it joins along the samples' axis";
    for (int a : args) {
      if (a != kNone && a != result) return "its pieces hold the samples along different axes";
    }
    return "";
  }
  if (kBatchMatmul.Is(op)) {  // [B, M, K] x [B, K, N]: samples along B (both), M (a) or N (b), never K
    bool ta = call.attrs.GetInt("transpose_a") != 0, tb = call.attrs.GetInt("transpose_b") != 0;
    int a_rows = ta ? 2 : 1, b_columns = tb ? 1 : 2;
    if (args[0] != kNone && args[1] != kNone) {
      return args[0] == 0 && args[1] == 0 && result == 0 ? "" : "its operands hold the samples along different axes";
    }
    if (args[0] != kNone) return args[0] == 0 || args[0] == a_rows ? "" : "its product sums over the samples' axis";
    return args[1] == 0 || args[1] == b_columns ? "" : "its product sums over the samples' axis";
  }
  if (kTake.Is(op)) {
    bool all;
    int axis = AxesOf(call, rank, all).at(0);
    if (args[0] != kNone && args[1] != kNone) return "both its data and its indices hold samples";
    return args[0] == axis ? "it gathers along the samples' axis" : "";
  }
  if (!only_first) return "an argument after its first (a weight or an operand it combines) holds samples";
  const int axis = args[0];
  if (kTranspose.Is(op)) return "";  // the result's axis follows (from the extents)
  if (IsAnyOf(op, {&kConv2D, &kConv2DWinograd, &kConv2DTranspose, &kConv3DTranspose, &kMaxPool, &kAvgPool,
                   &kGlobalAvgPool, &kLayoutTransform})) {
    return axis == 0 && result == 0 ? "" : "it takes images along axis 0, and the samples lie along another";
  }
  if (kDense.Is(op)) return axis == rank - 1 ? "its product sums over the samples' axis" : "";
  // Ops that keep the shape's axes: the samples' axis whole (not sliced, padded, repeated, resized).
  if (IsAnyOf(op, {&kStridedSlice, &kPad, &kTile, &kBroadcastTo, &kResize, &kDropout, &kTrilu})) {
    if (out == nullptr || out->ndim() != rank || out->shape[axis] != data.shape[axis] || result != axis) {
      return "it changes the samples' axis";
    }
    if (kTrilu.Is(op) && axis >= rank - 2) return "its matrices hold the samples";
    return "";
  }
  // Ops along axes: any but the samples'.
  bool along_axis = IsAnyOf(op, {&kSoftmax, &kLayerNorm, &kBatchNorm, &kBiasAdd, &kSplit, &kCumsum, &kTopK, &kGather}) ||
                    op->pattern == OpPattern::kCommReduce;
  if (along_axis) {
    bool all;
    std::vector<int> along = AxesOf(call, rank, all);
    if (all || std::find(along.begin(), along.end(), axis) != along.end()) return "it works along the samples' axis";
    return "";
  }
  return "kiln has no rule yet for how it treats the samples";
}

// Where a reshape puts the samples: the one-sample shapes `in` (samples along `axis`, after
// `outer` index values of it) and `out` (along `result`, from the extents). As many elements
// precede them in both; `result_outer` gets how many index values of `result` come before them.
// Returns why not when they do not lie as one digit of `result`'s index.
std::string ReshapedOuter(const TensorType& in, int axis, int64_t outer, const TensorType& out, int result,
                          int64_t& result_outer) {
  int64_t before = Product(in.shape, axis) * outer;  // elements before a sample's first, at one sample
  int64_t rows = Product(out.shape, result);
  if (before % rows != 0 || out.shape[result] % (before / rows) != 0) return "it splits the samples' axis";
  result_outer = before / rows;
  return "";
}

// Whether constant `two` is constant `one` repeated twice along `axis` (one's samples' blocks).
bool RepeatedAlong(const runtime::NDArray& one, const runtime::NDArray& two, const TensorType& type, int axis) {
  size_t outer = static_cast<size_t>(Product(type.shape, axis));
  size_t block = one.NumBytes() / std::max<size_t>(outer, 1);
  const char *a = static_cast<const char*>(one.data()), *b = static_cast<const char*>(two.data());
  for (size_t o = 0; o < outer; ++o) {
    for (int s = 0; s < 2; ++s) {
      if (std::memcmp(b + (2 * o + s) * block, a + o * block, block) != 0) return false;
    }
  }
  return true;
}

}  // namespace

void CheckSamplesApart(const Expr& one, const Expr& two) {
  const auto* f1 = one->As<FunctionNode>();
  const auto* f2 = two->As<FunctionNode>();
  runtime::CheckInternal(f1 != nullptr && f2 != nullptr, "CheckSamplesApart: expected two main functions");
  std::vector<Expr> a = PostOrder(f1->body), b = PostOrder(f2->body);
  // Where the graphs for one and two samples part (a branch, a loop or an op's form the batch size
  // decides; an op that is nothing at one sample).
  auto changes = [&](size_t i) {
    std::string where = i < a.size() && a[i]->As<CallNode>() != nullptr ? " at " + DescribeCall(a[i]) : "";
    return "the batch dimension cannot be decided at run time: the model's graph changes with the batch size" + where +
           kFixedBatch;
  };
  runtime::Check(f1->params.size() == f2->params.size(), changes(a.size()));
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const auto *ca = a[i]->As<CallNode>(), *cb = b[i]->As<CallNode>();
    bool same = a[i]->kind() == b[i]->kind() && (ca == nullptr || (ca->op == cb->op && ca->args.size() == cb->args.size()));
    runtime::Check(same, changes(i));
  }
  runtime::Check(a.size() == b.size(), changes(std::min(a.size(), b.size())));
  std::unordered_map<const ExprNode*, size_t> index_a, index_b;
  std::vector<std::vector<int>> axes(a.size());  // per value, per tensor of it
  std::vector<int64_t> outer(a.size(), 1);        // per value: the index digits of its axis before the samples
  std::vector<bool> from_batch_size(a.size(), false);  // constants computed from the batch size
  for (size_t i = 0; i < a.size(); ++i) {
    const Expr &ea = a[i], &eb = b[i];
    index_a[ea.get()] = index_b[eb.get()] = i;
    runtime::Check(ea->type().is_tuple() == eb->type().is_tuple(), changes(i));
    std::string what = ea->As<CallNode>() != nullptr ? DescribeCall(ea) : "a value of the model";
    if (const auto* var = ea->As<VarNode>()) what = "input '" + var->name + "'";
    if (ea->type().is_tuple()) {
      runtime::Check(ea->type().fields().size() == eb->type().fields().size(), changes(i));
      for (size_t k = 0; k < ea->type().fields().size(); ++k) {
        axes[i].push_back(SampleAxis(ea->type().fields()[k].tensor(), eb->type().fields()[k].tensor(), what));
      }
    } else {
      axes[i].push_back(SampleAxis(ea->type().tensor(), eb->type().tensor(), what));
    }
    if (const auto* c1 = ea->As<ConstantNode>()) {
      const auto* c2 = eb->As<ConstantNode>();
      const TensorType& type = ea->type().tensor();
      bool same = axes[i][0] == kNone && std::memcmp(c1->value.data(), c2->value.data(), c1->value.NumBytes()) == 0;
      bool repeated = axes[i][0] != kNone && RepeatedAlong(c1->value, c2->value, type, axes[i][0]);
      from_batch_size[i] = !same && !repeated;
      continue;
    }
    const auto* call = ea->As<CallNode>();
    if (call == nullptr) continue;
    const auto* call2 = eb->As<CallNode>();

    std::vector<int> args;
    std::vector<int64_t> outers;  // of the arguments that hold samples
    bool any = false;
    for (size_t j = 0; j < call->args.size(); ++j) {
      size_t arg = index_a.at(call->args[j].get());
      runtime::Check(arg == index_b.at(call2->args[j].get()), changes(i));
      runtime::Check(!from_batch_size[arg], DescribeCall(ea), " takes a value computed from the batch size as data (",
                     "not as a shape)", kFixedBatch);
      args.push_back(axes[arg].at(0));
      if (args.back() != kNone) outers.push_back(outer[arg]);
      any = any || args.back() != kNone;
    }
    int result = axes[i][0];
    for (int field : axes[i]) {
      runtime::Check(field == result, DescribeCall(ea), " gives results holding the samples along different axes",
                     kFixedBatch);
    }
    if (!any && result == kNone) continue;
    runtime::Check(any, DescribeCall(ea), " computes a value that grows with the batch size from no sample",
                   kFixedBatch);
    runtime::Check(result != kNone, "the batch dimension cannot be decided at run time: ", DescribeCall(ea),
                   " does not keep the samples apart (its result does not hold them)", kFixedBatch);
    std::string why = Mixing(*call, args, result);
    if (why.empty() && std::any_of(outers.begin(), outers.end(), [&](int64_t o) { return o != outers[0]; })) {
      why = "its operands hold the samples at different places of their axis";
    }
    outer[i] = outers[0];
    if (why.empty() && IsAnyOf(call->op, {&kReshape, &kSqueeze, &kExpandDims})) {
      int arg = 0;
      while (args[arg] == kNone) ++arg;
      why = ReshapedOuter(call->args[arg]->type().tensor(), args[arg], outers[0], ea->type().tensor(), result, outer[i]);
    }
    runtime::Check(why.empty(), "the batch dimension cannot be decided at run time: ", DescribeCall(ea),
                   " does not keep the samples apart (", why, ")", kFixedBatch);
  }
  // The caller's outputs hold the samples along axis 0, as the model at that batch does.
  const std::vector<int>& outputs = axes.back();
  for (size_t k = 0; k < outputs.size(); ++k) {
    runtime::Check(outputs[k] == kNone || (outputs[k] == 0 && outer.back() == 1),
                   "the batch dimension cannot be decided at run time: output ", k, " of the model holds the samples ",
                   outputs[k] == 0 ? "inside axis 0, not as its outer part" : "along axis " + std::to_string(outputs[k]),
                   kFixedBatch);
  }
}

}  // namespace kiln::frontend
