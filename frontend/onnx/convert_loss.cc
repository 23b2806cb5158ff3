// ONNX's loss ops, composed: NegativeLogLikelihoodLoss picks -input[n, target[n, d...], d...]
// (GatherElements along the class axis), weighted by weight[target] and 0 where the target is
// ignore_index, then reduced (none, sum, or mean: the sum over the sum of weights);
// SoftmaxCrossEntropyLoss is that on log_softmax(scores) over the class axis, which it also returns.
#include "frontend/onnx/converter.h"
#include "runtime/error.h"

namespace kiln::frontend {

using namespace ir;
using runtime::StrCat;

namespace {

const OpRef kCast("cast");
const OpRef kDivide("divide");
const OpRef kEqual("equal");
const OpRef kExpandDims("expand_dims");
const OpRef kGather("gather");
const OpRef kMultiply("multiply");
const OpRef kNegative("negative");
const OpRef kNot("logical_not");
const OpRef kSqueeze("squeeze");
const OpRef kSum("sum");
const OpRef kTake("take");
const OpRef kWhere("where");

using Outputs = std::vector<Expr>;
using Ints = std::vector<int64_t>;

// A scalar of `dtype` (int64 or the input's float type) holding `value`.
Expr ScalarOf(const NodeContext& c, const Expr& like, double value, DLDataType dtype) {
  Expr s = ScalarLike(like, value);
  return s->type().tensor().dtype == dtype ? s : c.Op(kCast, {s}, MakeAttrs({{"dtype", runtime::DTypeToString(dtype)}}));
}

// The loss of `input` [N, C, d...] (log-probabilities) at `target` [N, d...], with the weights of
// input `weight_input` when the node has it.
Expr NegativeLogLikelihood(const NodeContext& c, const Expr& input, size_t target_input, size_t weight_input) {
  const TensorType& x = input->type().tensor();
  const TensorType& t = c.input_type(target_input);
  if (x.ndim() < 2) c.FailAt("input 0", StrCat("must be [N, C, ...], it has ", x.ndim(), " dimensions"));
  if (t.dtype.code != kDLInt) c.FailAt(StrCat("input ", target_input), "the targets must be integers");
  Ints expected = x.shape;
  expected.erase(expected.begin() + 1);
  if (t.shape != expected) {
    c.FailAt(StrCat("input ", target_input),
             StrCat("the targets ", ShapeText(t.shape), " must have the input's shape without its classes, ",
                    ShapeText(expected)));
  }
  std::string reduction = c.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    c.FailAt("attribute 'reduction'", StrCat("'", reduction, "' is not none, sum or mean"));
  }
  Expr target = c.Op(kCast, {c.input(target_input)}, MakeAttrs({{"dtype", std::string("int64")}}));
  DLDataType int64{kDLInt, 64, 1};
  std::optional<Expr> kept;  // where the target is not ignore_index
  if (c.has_attr("ignore_index")) {
    Expr ignored = ScalarOf(c, target, static_cast<double>(c.attr_int("ignore_index")), int64);
    kept = c.Op(kNot, {c.Op(kEqual, {target, ignored})});
    target = c.Op(kWhere, {*kept, target, ScalarOf(c, target, 0, int64)});  // a class in range
  }
  Expr picked = c.Op(kGather, {input, c.Op(kExpandDims, {target}, MakeAttrs({{"axis", int64_t{1}}}))},
                     MakeAttrs({{"axis", int64_t{1}}}));
  Expr loss = c.Op(kNegative, {c.Op(kSqueeze, {picked}, MakeAttrs({{"axis", Ints{1}}}))});
  std::optional<Expr> weight;
  if (c.has_input(weight_input)) {
    const TensorType& w = c.input_type(weight_input);
    if (w.shape != Ints{x.shape[1]} || w.dtype != x.dtype) {
      c.FailAt(StrCat("input ", weight_input), StrCat("the weights must be ", DTypeToString(x.dtype), " [", x.shape[1],
                                                      "], one per class, got ", DTypeToString(w.dtype), " ", ShapeText(w.shape)));
    }
    weight = c.Op(kTake, {c.input(weight_input), target}, MakeAttrs({{"axis", int64_t{0}}}));
  }
  if (kept) {
    Expr zero = ScalarOf(c, input, 0, x.dtype);
    weight = c.Op(kWhere, {*kept, weight ? *weight : ScalarOf(c, input, 1, x.dtype), zero});
  }
  if (weight) loss = c.Op(kMultiply, {loss, *weight});
  if (reduction == "none") return loss;
  Attrs all = MakeAttrs({{"axis", Ints{}}, {"keepdims", int64_t{0}}});
  Expr total = c.Op(kSum, {loss}, all);
  if (reduction == "sum") return total;
  if (weight) return c.Op(kDivide, {total, c.Op(kSum, {*weight}, all)});
  return c.Op(kDivide, {total, ScalarOf(c, input, static_cast<double>(t.NumElements()), x.dtype)});
}

Outputs NegativeLogLikelihoodLoss(const NodeContext& c) { return {NegativeLogLikelihood(c, c.input(0), 1, 2)}; }

Outputs SoftmaxCrossEntropyLoss(const NodeContext& c) {
  if (c.input_type(0).ndim() < 2) c.FailAt("input 0", "the scores must be [N, C, ...]");
  Expr log_prob = LogSoftmaxOf(c, c.input(0), {1});
  return {NegativeLogLikelihood(c, log_prob, 1, 2), log_prob};
}

}  // namespace

void AddLossConverters(ConverterTable& table) {
  Register(table, "NegativeLogLikelihoodLoss", NegativeLogLikelihoodLoss, 12);
  Register(table, "SoftmaxCrossEntropyLoss", SoftmaxCrossEntropyLoss, 12);
}

}  // namespace kiln::frontend
