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

// A float32 vector of `n` copies of `fill`.
Expr Filled(int64_t n, float fill) { return FloatConstant({n}, std::vector<float>(static_cast<size_t>(n), fill)); }

// The parts, times gamma and plus beta when asked for: SimplifyExpr drops a gamma of ones and a
// beta of zeros (as freshly initialized layers have), so each may be missing.
PatternRewrite LayerNormOfItsParts(bool with_gamma, bool with_beta) {
  Pattern x = Wildcard(), epsilon = IsConstant(), gamma = IsConstant(), beta = IsConstant();
  Pattern centered = IsOp(kSubtract, {x, IsOp(kMean, {x}).Where(OverLastAxis)});
  Pattern square = IsOp(kMultiply, {centered, centered}) | IsOp(kPower, {centered, ConstantOf(2)});
  Pattern variance = IsOp(kMean, {square}).Where(OverLastAxis);
  Pattern deviation = IsOp(kSqrt, {IsOp(kAdd, {variance, epsilon}).Commutative()});
  Pattern pattern = IsOp(kDivide, {centered, deviation});
  if (with_gamma) pattern = IsOp(kMultiply, {pattern, gamma}).Commutative();
  if (with_beta) pattern = IsOp(kAdd, {pattern, beta}).Commutative();
  return {pattern, [=](const Match& m, const Rewritten& rewritten) -> Expr {
            const TensorType& in = m[x]->type().tensor();
            const TensorType& eps = m[epsilon]->type().tensor();
            if (in.dtype != runtime::kFloat32 || m.root()->type().tensor() != in || eps.dtype != runtime::kFloat32 ||
                eps.NumElements() != 1) {
              return nullptr;
            }
            int64_t n = in.shape.back();
            Expr g = with_gamma ? AlongLastAxis(m[gamma], in) : Filled(n, 1.0f);
            Expr b = with_beta ? AlongLastAxis(m[beta], in) : Filled(n, 0.0f);
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
  // The longest form first, each over the whole graph: a shorter one would take a longer one's
  // core before its gamma and beta are seen.
  static const std::vector<PatternRewrite> forms = {LayerNormOfItsParts(true, true), LayerNormOfItsParts(true, false),
                                                    LayerNormOfItsParts(false, true), LayerNormOfItsParts(false, false)};
  Expr body = f->body;
  for (const PatternRewrite& form : forms) body = RewritePatterns(body, {form});
  return body == f->body ? main : Function(f->params, body, f->attrs);
}

}  // namespace kiln::transform
