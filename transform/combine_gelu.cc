// CombineGelu.
#include "transform/combine_gelu.h"

#include <cmath>

#include "transform/pattern.h"

namespace kiln::transform {

using namespace ir;

namespace {

const OpRef kAdd("add");
const OpRef kDivide("divide");
const OpRef kErf("erf");
const OpRef kGelu("nn.gelu");
const OpRef kMultiply("multiply");

// A float32 constant all of whose elements lie within a float's rounding of `value` (exporters
// write sqrt 2 and its reciprocal rounded to float, or to double).
Pattern ConstantNear(double value) {
  return IsConstant().Where([value](const Expr& e) {
    const TensorType& t = e->type().tensor();
    if (t.dtype != runtime::kFloat32 || t.NumElements() == 0) return false;
    const float* v = static_cast<const float*>(e->As<ConstantNode>()->value.data());
    for (int64_t i = 0; i < t.NumElements(); ++i) {
      if (!(std::abs(v[i] - value) <= 1e-6 * value)) return false;  // NaN too
    }
    return true;
  });
}

PatternRewrite GeluOfItsParts() {
  Pattern x = Wildcard();
  Pattern scaled = IsOp(kDivide, {x, ConstantNear(std::sqrt(2.0))}) |
                   IsOp(kMultiply, {x, ConstantNear(std::sqrt(0.5))}).Commutative();
  Pattern one_plus = IsOp(kAdd, {IsOp(kErf, {scaled}), ConstantOf(1)}).Commutative();
  Pattern half = ConstantOf(0.5);
  Pattern x_times = IsOp(kMultiply, {x, one_plus}).Commutative();
  Pattern pattern = IsOp(kMultiply, {x_times, half}).Commutative() |
                    IsOp(kMultiply, {IsOp(kMultiply, {x, half}).Commutative(), one_plus}).Commutative() |
                    IsOp(kMultiply, {x, IsOp(kMultiply, {one_plus, half}).Commutative()}).Commutative() |
                    IsOp(kDivide, {x_times, ConstantOf(2)});
  return {pattern, [=](const Match& m, const Rewritten& rewritten) -> Expr {
            const TensorType& in = m[x]->type().tensor();
            if (in.dtype != runtime::kFloat32 || m.root()->type().tensor() != in) return nullptr;
            return Call(kGelu, {rewritten(m[x])});
          }};
}

}  // namespace

Expr CombineGelu(const Expr& main, const PassEnvironment&) {
  const auto* f = main->As<FunctionNode>();
  static const PatternRewrite form = GeluOfItsParts();
  Expr body = RewritePatterns(f->body, {form});
  return body == f->body ? main : Function(f->params, body, f->attrs);
}

}  // namespace kiln::transform
