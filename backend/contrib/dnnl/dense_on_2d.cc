// Dense layers on data of rank 3 or more, as TVM hands them to its DNNL codegen (dnnl_codegen.h).
#include <deque>

#include "backend/contrib/dnnl/dnnl_codegen.h"
#include "transform/pattern.h"

namespace kiln::backend {

using namespace ir;
using transform::IsOp;
using transform::Pattern;
using transform::PatternRewrite;
using transform::Wildcard;

namespace {

const OpRef kDense("nn.dense");
const OpRef kReshape("reshape");

Expr Reshape(const Expr& x, const std::vector<int64_t>& shape) {
  Attrs attrs;
  attrs.Set("newshape", shape);
  return Call(kReshape, {x}, attrs);
}

bool Float32(const Expr& e) { return e->type().is_tensor() && e->type().tensor().dtype == runtime::kFloat32; }

// dense(x, w) on x of rank 3 or more: reshape(dense(reshape(x, [M, K]), w), [..., N]).
PatternRewrite DenseOn2D() {
  Pattern x = Wildcard(), w = Wildcard();
  return {IsOp(kDense, {x, w}), [=](const transform::Match& m, const transform::Rewritten& rewritten) -> Expr {
            const TensorType& in = m[x]->type().tensor();
            if (in.ndim() < 3 || !Float32(m.root()) || in.shape.back() <= 0) return nullptr;
            const auto* dense = m.root()->As<CallNode>();
            int64_t k = in.shape.back();
            Expr flat = Call(kDense, {Reshape(rewritten(m[x]), {in.NumElements() / k, k}), rewritten(m[w])}, dense->attrs);
            return Reshape(flat, m.root()->type().tensor().shape);
          }};
}

// The other operand `c` of an elementwise op on [M, N] data that was reshaped to `shape`: as it is
// when it is one value, as a vector when it holds one value per element of the last axis, as
// [M, N] when it has `shape`; null otherwise.
Expr OperandOn2D(const Expr& c, const std::vector<int64_t>& shape, int64_t m, int64_t n) {
  if (!c->type().is_tensor()) return nullptr;
  const TensorType& t = c->type().tensor();
  if (t.NumElements() == 1 && t.ndim() <= 1) return c;
  if (t.shape == shape) return Reshape(c, {m, n});
  if (t.ndim() >= 1 && t.ndim() <= static_cast<int>(shape.size()) && t.shape.back() == n && t.NumElements() == n) {
    return t.ndim() == 1 ? c : Reshape(c, {n});
  }
  return nullptr;
}

// op(reshape(y, S), c) and op(c, reshape(y, S)) with y of [M, N]: reshape(op(y, c'), S), the
// operands in their order; for a unary op, op(reshape(y, S)) -> reshape(op(y), S).
std::vector<PatternRewrite> ReshapeAfter(const std::vector<const char*>& binary, const std::vector<const char*>& unary) {
  std::vector<PatternRewrite> rewrites;
  Pattern y = Wildcard(), c = Wildcard();
  Pattern reshaped = IsOp(kReshape, {y});
  // Whether `r`, a reshape of y, turns [M, N] into a shape with the same last axis.
  auto on_2d = [](const Expr& r, const Expr& yy) {
    if (!Float32(r) || !Float32(yy)) return false;
    const TensorType& from = yy->type().tensor();
    const TensorType& to = r->type().tensor();
    return from.ndim() == 2 && to.ndim() >= 3 && to.shape.back() == from.shape[1];
  };
  static std::deque<OpRef> ops;  // the rewrites refer to them: made once (DnnlDenseOn2D's table)
  for (const char* name : unary) {
    const OpRef* op = &ops.emplace_back(name);
    rewrites.push_back({IsOp(*op, {reshaped}), [=](const transform::Match& m, const transform::Rewritten& rewritten) -> Expr {
                          if (!on_2d(m[reshaped], m[y]) || m.root()->type() != m[reshaped]->type()) return nullptr;
                          Expr inner = Call(*op, {rewritten(m[y])}, m.root()->As<CallNode>()->attrs);
                          return Reshape(inner, m.root()->type().tensor().shape);
                        }});
  }
  for (const char* name : binary) {
    const OpRef* op = &ops.emplace_back(name);
    for (bool reshaped_first : {true, false}) {
      Pattern pattern = reshaped_first ? IsOp(*op, {reshaped, c}) : IsOp(*op, {c, reshaped});
      rewrites.push_back({pattern, [=](const transform::Match& m, const transform::Rewritten& rewritten) -> Expr {
                            if (!on_2d(m[reshaped], m[y]) || m.root()->type() != m[reshaped]->type()) return nullptr;
                            const std::vector<int64_t>& shape = m.root()->type().tensor().shape;
                            const std::vector<int64_t>& flat = m[y]->type().tensor().shape;
                            Expr other = OperandOn2D(rewritten(m[c]), shape, flat[0], flat[1]);
                            if (other == nullptr) return nullptr;
                            const Attrs& attrs = m.root()->As<CallNode>()->attrs;
                            Expr inner = reshaped_first ? Call(*op, {rewritten(m[y]), other}, attrs)
                                                        : Call(*op, {other, rewritten(m[y])}, attrs);
                            return Reshape(inner, shape);
                          }});
    }
  }
  return rewrites;
}

}  // namespace

Expr DnnlDenseOn2D(const Expr& main) {
  const auto* f = main->As<FunctionNode>();
  Expr body = transform::RewritePatterns(f->body, {DenseOn2D()});
  if (body == f->body) return main;
  // Each round moves the reshapes one op further, until no elementwise op follows one.
  static const std::vector<PatternRewrite> sink =
      ReshapeAfter({"add", "subtract", "multiply", "divide", "maximum", "minimum"},
                   {"nn.relu", "sigmoid", "tanh", "erf", "exp", "sqrt", "clip", "negative", "abs"});
  for (int round = 0; round < 64; ++round) {
    Expr next = transform::RewritePatterns(body, sink);
    if (next == body) break;
    body = next;
  }
  return Function(f->params, body, f->attrs);
}

}  // namespace kiln::backend
