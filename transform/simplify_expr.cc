// SimplifyExpr.
#include "transform/simplify_expr.h"

#include <algorithm>
#include <optional>

#include "transform/pattern.h"

namespace kiln::transform {

using namespace ir;

namespace {

const OpRef kAdd("add");
const OpRef kBiasAdd("nn.bias_add");
const OpRef kBroadcastTo("broadcast_to");
const OpRef kCast("cast");
const OpRef kDivide("divide");
const OpRef kExpandDims("expand_dims");
const OpRef kMultiply("multiply");
const OpRef kPad("nn.pad");
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
// none when the permutation is the identity; a reshape when it keeps the order of the axes longer
// than 1 (it moves only axes of extent 1: ViT's [1, 197, 768] -> [197, 1, 768], a pass over memory
// otherwise).
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
            const std::vector<int64_t>& out = m.root()->type().tensor().shape;
            bool order_kept = true;
            for (int d = 0, last = -1; d < ndim; ++d) {
              if (out[d] == 1) continue;
              order_kept = order_kept && perm[d] > last;
              last = static_cast<int>(perm[d]);
            }
            if (order_kept) return Reshape(rewritten(m[x]), out);
            if (m[inner] == nullptr) return nullptr;
            Attrs attrs;
            attrs.Set("axes", perm);
            return Call(kTranspose, {rewritten(m[x])}, attrs);
          }, false};
}

using Shape = std::vector<int64_t>;

// When `from` and `to` differ only in axes of extent 1 (a reshape between them keeps every other
// axis): for each axis of `to`, the axis of `from` it is, or -1 for an added axis of extent 1.
std::optional<std::vector<int64_t>> UnitAxesOnly(const Shape& from, const Shape& to) {
  std::vector<int64_t> axis_of(to.size(), -1);
  size_t i = 0;
  for (size_t j = 0; j < to.size(); ++j) {
    if (to[j] == 1) continue;
    while (i < from.size() && from[i] == 1) ++i;
    if (i == from.size() || from[i] != to[j]) return std::nullopt;
    axis_of[j] = static_cast<int64_t>(i++);
  }
  while (i < from.size() && from[i] == 1) ++i;
  if (i != from.size()) return std::nullopt;
  return axis_of;
}

// An elementwise op (broadcasting ones without attributes: broadcast_to's shape is one), or a
// bias_add, whose first argument is a reshape.
bool IsElementwiseOfReshape(const Expr& e) {
  const auto* call = e->As<CallNode>();
  if (call == nullptr || call->op == nullptr || call->args.empty()) return false;  // op null: a function call
  bool elementwise = call->op->pattern == OpPattern::kElemWise ||
                     (call->op->pattern == OpPattern::kBroadcast && call->attrs.values().empty());
  if (!elementwise && !kBiasAdd.Is(call->op)) return false;
  const auto* inner = call->args[0]->As<CallNode>();
  return inner != nullptr && kReshape.Is(inner->op);
}

// An elementwise op (or a bias_add) of reshape(x), where the reshape only adds or drops axes of
// extent 1, becomes the reshape of the op on x: its other operands, constants or reshapes from
// x's shape, and a bias_add's axis moved to x's axes. Reshapes then sink through runs of such ops
// and the reshapes that meet collapse: 1-D layers run as 2-D ones, and the bias, batch norm and
// activation between two of them then follow the convolution directly.
PatternRewrite ElementwiseBeforeReshape() {
  return {Wildcard().Where(IsElementwiseOfReshape), [](const Match& m, const Rewritten& rewritten) -> Expr {
            const auto* call = m.root()->As<CallNode>();
            const Expr& x = call->args[0]->As<CallNode>()->args[0];
            const Shape& from = x->type().tensor().shape;
            const Shape& to = call->args[0]->type().tensor().shape;
            std::optional<std::vector<int64_t>> axis_of = UnitAxesOnly(from, to);
            if (!axis_of || !call->type().is_tensor() || call->type().tensor().shape != to) return nullptr;
            std::vector<Expr> args = {rewritten(x)};
            Attrs attrs = call->attrs;
            if (kBiasAdd.Is(call->op)) {
              int64_t axis = attrs.GetInt("axis");
              axis = axis < 0 ? axis + static_cast<int64_t>(to.size()) : axis;
              if (axis < 0 || axis >= static_cast<int64_t>(to.size()) || (*axis_of)[axis] < 0) return nullptr;
              attrs.Set("axis", (*axis_of)[axis]);
              args.push_back(rewritten(call->args[1]));
              return Reshape(Call(*call->op, args, attrs), to);
            }
            for (size_t k = 1; k < call->args.size(); ++k) {
              const Expr& operand = call->args[k];
              const auto* reshape = operand->As<CallNode>();
              if (reshape != nullptr && kReshape.Is(reshape->op) && operand->type().tensor().shape == to &&
                  reshape->args[0]->type().tensor().shape == from) {
                args.push_back(rewritten(reshape->args[0]));
                continue;
              }
              const auto* constant = operand->As<ConstantNode>();
              const Shape& shape = operand->type().tensor().shape;
              if (constant == nullptr || shape.size() > to.size()) return nullptr;
              // The operand's axes, right-aligned to `to`'s, moved to x's.
              Shape moved(from.size(), 1);
              size_t lead = to.size() - shape.size();
              for (size_t j = 0; j < shape.size(); ++j) {
                if (shape[j] == 1) continue;
                int64_t a = (*axis_of)[lead + j];
                if (a < 0) return nullptr;
                moved[a] = shape[j];
              }
              bool all_ones = std::all_of(shape.begin(), shape.end(), [](int64_t d) { return d == 1; });
              bool keep = shape == moved || (all_ones && shape.size() <= from.size());
              args.push_back(keep ? operand : Constant(constant->value.CreateView(moved, constant->value.dtype())));
            }
            return Reshape(Call(*call->op, args, attrs), to);
          }, false};
}

// `pattern` replaced by `x` when that keeps the type: cast to the same dtype, x * 1, x + 0, ...
PatternRewrite Identity(const Pattern& pattern, const Pattern& x) {
  return {pattern, [=](const Match& m, const Rewritten& rewritten) -> Expr {
            return m[x]->type() == m.root()->type() ? rewritten(m[x]) : nullptr;
          }, false};
}

// nn.pad of nothing on every side, in any mode: x. PyTorch exports one before each AvgPool2d
// (DenseNet's transitions), and a pad keeps its input out of the blocked layouts (AlterOpLayout).
PatternRewrite PadOfNothing() {
  Pattern x = Wildcard();
  return {IsOp(kPad, {x}), [=](const Match& m, const Rewritten& rewritten) -> Expr {
            const std::vector<int64_t>& widths = m.root()->As<CallNode>()->attrs.GetInts("pad_width");
            bool nothing = std::all_of(widths.begin(), widths.end(), [](int64_t w) { return w == 0; });
            return nothing && m[x]->type() == m.root()->type() ? rewritten(m[x]) : nullptr;
          }, false};
}

const std::vector<PatternRewrite>& Rules() {
  static const std::vector<PatternRewrite> rules = [] {
    Pattern x = Wildcard();
    Pattern squared = IsOp(kPower, {x, ConstantOf(2)});
    return std::vector<PatternRewrite>{
        ReshapeChain(),
        TransposeChain(),
        ElementwiseBeforeReshape(),
        PadOfNothing(),
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
