// CombineLayerNorm.
#include "transform/combine_layer_norm.h"

#include "transform/pattern.h"

namespace kiln::transform {

using namespace ir;

namespace {

const OpRef kAdd("add");
const OpRef kDivide("divide");
const OpRef kLayerNorm("nn.layer_norm");
const OpRef kMean("mean");
const OpRef kMultiply("multiply");
const OpRef kPower("power");
const OpRef kReshape("reshape");
const OpRef kSqrt("sqrt");
const OpRef kSubtract("subtract");

// A mean over the last axis alone, keeping it.
bool OverLastAxis(const Expr& e) {
  const auto* mean = e->As<CallNode>();
  const std::vector<int64_t>& axis = mean->attrs.GetInts("axis");
  int64_t last = static_cast<int64_t>(mean->args[0]->type().tensor().ndim()) - 1;
  return mean->attrs.GetInt("keepdims") == 1 && axis.size() == 1 && (axis[0] == last || axis[0] == -1) && last >= 0;
}

// `value`, a constant of one element per element of the last axis of `x`, as a vector.
Expr AlongLastAxis(const Expr& value, const TensorType& x) {
  const TensorType& t = value->type().tensor();
  if (t.dtype != runtime::kFloat32 || t.ndim() == 0 || t.shape.back() != x.shape.back() ||
      t.NumElements() != x.shape.back() || t.ndim() > x.ndim()) {
    return nullptr;
  }
  if (t.ndim() == 1) return value;
  Attrs attrs;
  attrs.Set("newshape", std::vector<int64_t>{x.shape.back()});
  return Call(kReshape, {value}, attrs);
}

PatternRewrite LayerNormOfItsParts() {
  Pattern x = Wildcard(), epsilon = IsConstant(), gamma = IsConstant(), beta = IsConstant();
  Pattern centered = IsOp(kSubtract, {x, IsOp(kMean, {x}).Where(OverLastAxis)});
  Pattern square = IsOp(kMultiply, {centered, centered}) | IsOp(kPower, {centered, ConstantOf(2)});
  Pattern variance = IsOp(kMean, {square}).Where(OverLastAxis);
  Pattern deviation = IsOp(kSqrt, {IsOp(kAdd, {variance, epsilon}).Commutative()});
  Pattern scaled = IsOp(kMultiply, {IsOp(kDivide, {centered, deviation}), gamma}).Commutative();
  Pattern pattern = IsOp(kAdd, {scaled, beta}).Commutative();
  return {pattern, [=](const Match& m, const Rewritten& rewritten) -> Expr {
            const TensorType& in = m[x]->type().tensor();
            const TensorType& eps = m[epsilon]->type().tensor();
            if (in.dtype != runtime::kFloat32 || m.root()->type().tensor() != in || eps.dtype != runtime::kFloat32 ||
                eps.NumElements() != 1) {
              return nullptr;
            }
            Expr g = AlongLastAxis(m[gamma], in), b = AlongLastAxis(m[beta], in);
            if (g == nullptr || b == nullptr) return nullptr;
            Attrs attrs;
            attrs.Set("axis", int64_t{-1});
            attrs.Set("epsilon", static_cast<double>(*static_cast<const float*>(m[epsilon]->As<ConstantNode>()->value.data())));
            return Call(kLayerNorm, {rewritten(m[x]), g, b}, attrs);
          }};
}

}  // namespace

Expr CombineLayerNorm(const Expr& main, const PassEnvironment&) {
  const auto* f = main->As<FunctionNode>();
  static const std::vector<PatternRewrite> rules = {LayerNormOfItsParts()};
  Expr body = RewritePatterns(f->body, rules);
  return body == f->body ? main : Function(f->params, body, f->attrs);
}

}  // namespace kiln::transform
