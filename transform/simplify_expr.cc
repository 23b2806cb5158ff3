// SimplifyExpr.
#include "transform/simplify_expr.h"

#include "transform/pattern.h"

namespace kiln::transform {

using namespace ir;

namespace {

const OpRef kAdd("add");
const OpRef kBroadcastTo("broadcast_to");
const OpRef kCast("cast");
const OpRef kDivide("divide");
const OpRef kExpandDims("expand_dims");
const OpRef kMultiply("multiply");
const OpRef kPower("power");
const OpRef kReshape("reshape");
const OpRef kSqueeze("squeeze");
const OpRef kSubtract("subtract");
const OpRef kTranspose("transpose");

Expr Reshape(const Expr& x, const std::vector<int64_t>& shape) {
  if (x->type().tensor().shape == shape) return x;
  Attrs attrs;
  attrs.Set("newshape", shape);
  return Call(kReshape, {x}, attrs);
}

std::vector<int64_t> Permutation(const CallNode& transpose, int ndim) {
  std::vector<int64_t> axes = transpose.attrs.GetInts("axes");
  if (axes.empty()) {
    for (int d = ndim - 1; d >= 0; --d) axes.push_back(d);
  }
  for (int64_t& a : axes) a = a < 0 ? a + ndim : a;
  return axes;
}

// reshape, squeeze or expand_dims of x, or of reshape(x): one reshape of x (only the last shape
// matters), or x itself when the shape does not change.
PatternRewrite ReshapeChain() {
  Pattern x = Wildcard(), inner = IsOp(kReshape, {x});
  Pattern source = inner | x;
  Pattern pattern = IsOp(kReshape, {source}) | IsOp(kSqueeze, {source}) | IsOp(kExpandDims, {source});
  return {pattern, [=](const Match& m, const Rewritten& rewritten) -> Expr {
            const std::vector<int64_t>& shape = m.root()->type().tensor().shape;
            bool same = m[x]->type().tensor().shape == shape;
            if (m[inner] == nullptr && !same && kReshape.Is(m.root()->As<CallNode>()->op)) return nullptr;
            return Reshape(rewritten(m[x]), shape);
          }, false};
}

// transpose of transpose(x): one transpose (out[i] = inner[perm[i]] = x[inner_perm[perm[i]]]);
// none when the permutation is the identity.
PatternRewrite TransposeChain() {
  Pattern x = Wildcard(), inner = IsOp(kTranspose, {x});
  return {IsOp(kTranspose, {inner | x}), [=](const Match& m, const Rewritten& rewritten) -> Expr {
            int ndim = m.root()->type().tensor().ndim();
            std::vector<int64_t> perm = Permutation(*m.root()->As<CallNode>(), ndim);
            if (m[inner] != nullptr) {
              std::vector<int64_t> first = Permutation(*m[inner]->As<CallNode>(), ndim);
              for (int64_t& p : perm) p = first[p];
            }
            bool identity = true;
            for (int d = 0; d < ndim; ++d) identity = identity && perm[d] == d;
            if (identity) return rewritten(m[x]);
            if (m[inner] == nullptr) return nullptr;
            Attrs attrs;
            attrs.Set("axes", perm);
            return Call(kTranspose, {rewritten(m[x])}, attrs);
          }, false};
}

// `pattern` replaced by `x` when that keeps the type: cast to the same dtype, x * 1, x + 0, ...
PatternRewrite Identity(const Pattern& pattern, const Pattern& x) {
  return {pattern, [=](const Match& m, const Rewritten& rewritten) -> Expr {
            return m[x]->type() == m.root()->type() ? rewritten(m[x]) : nullptr;
          }, false};
}

const std::vector<PatternRewrite>& Rules() {
  static const std::vector<PatternRewrite> rules = [] {
    Pattern x = Wildcard();
    Pattern squared = IsOp(kPower, {x, ConstantOf(2)});
    return std::vector<PatternRewrite>{
        ReshapeChain(),
        TransposeChain(),
        Identity(IsOp(kCast, {x}) | IsOp(kBroadcastTo, {x}), x),
        Identity(IsOp(kMultiply, {x, ConstantOf(1)}).Commutative(), x),
        Identity(IsOp(kAdd, {x, ConstantOf(0)}).Commutative(), x),
        Identity(IsOp(kSubtract, {x, ConstantOf(0)}) | IsOp(kDivide, {x, ConstantOf(1)}), x),
        Identity(IsOp(kPower, {x, ConstantOf(1)}), x),
        // std::pow is slow; x * x is the same square.
        {squared, [=](const Match& m, const Rewritten& rewritten) -> Expr {
           if (m[x]->type() != m.root()->type()) return nullptr;
           return Call(kMultiply, {rewritten(m[x]), rewritten(m[x])});
         }, false},
    };
  }();
  return rules;
}

}  // namespace

Expr SimplifyExpr(const Expr& main, const PassEnvironment&) {
  const auto* f = main->As<FunctionNode>();
  return Function(f->params, RewritePatterns(f->body, Rules()), f->attrs);
}

}  // namespace kiln::transform
