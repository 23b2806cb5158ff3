// SimplifyExpr.
#include "transform/simplify_expr.h"

#include <cstring>

namespace kiln::transform {

using namespace ir;

namespace {

// The ops this pass makes.
const OpRef kMultiply("multiply");
const OpRef kReshape("reshape");
const OpRef kTranspose("transpose");

bool IsOp(const Expr& e, const char* name) {
  const auto* call = e->As<CallNode>();
  return call != nullptr && call->op != nullptr && call->op->name == name;
}

// True when `e` is a float32 or int64 constant all of whose elements equal `value`.
bool IsConstantOf(const Expr& e, double value) {
  const auto* c = e->As<ConstantNode>();
  if (c == nullptr) return false;
  const TensorType& t = e->type().tensor();
  int64_t n = t.NumElements();
  if (t.dtype == runtime::kFloat32) {
    const float* v = static_cast<const float*>(c->value.data());
    for (int64_t i = 0; i < n; ++i) {
      if (v[i] != static_cast<float>(value)) return false;
    }
    return true;
  }
  if (t.dtype == DLDataType{kDLInt, 64, 1}) {
    const int64_t* v = static_cast<const int64_t*>(c->value.data());
    for (int64_t i = 0; i < n; ++i) {
      if (v[i] != static_cast<int64_t>(value)) return false;
    }
    return true;
  }
  return false;
}

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

Expr Simplify(const Expr& original, const std::vector<Expr>& inputs) {
  Expr e = WithInputs(original, inputs);
  const auto* call = e->As<CallNode>();
  if (call == nullptr || call->op == nullptr) return e;
  const std::string& op = call->op->name;
  const Type& type = e->type();
  if (op == "reshape" || op == "squeeze" || op == "expand_dims") {
    Expr x = call->args[0];
    while (IsOp(x, "reshape")) x = x->As<CallNode>()->args[0];  // only the last shape matters
    return Reshape(x, type.tensor().shape);
  }
  if (op == "transpose") {
    Expr x = call->args[0];
    int ndim = type.tensor().ndim();
    std::vector<int64_t> perm = Permutation(*call, ndim);
    if (IsOp(x, "transpose")) {  // out[i] = inner[perm[i]] = x[inner_perm[perm[i]]]
      std::vector<int64_t> inner = Permutation(*x->As<CallNode>(), ndim);
      for (int64_t& p : perm) p = inner[p];
      x = x->As<CallNode>()->args[0];
    }
    bool identity = true;
    for (int d = 0; d < ndim; ++d) identity = identity && perm[d] == d;
    if (identity) return x;
    Attrs attrs;
    attrs.Set("axes", perm);
    return Call(kTranspose, {x}, attrs);
  }
  if ((op == "cast" || op == "broadcast_to") && call->args[0]->type() == type) return call->args[0];
  auto keeps_type = [&](const Expr& x) { return x->type() == type; };
  if (op == "multiply") {
    if (IsConstantOf(call->args[1], 1) && keeps_type(call->args[0])) return call->args[0];
    if (IsConstantOf(call->args[0], 1) && keeps_type(call->args[1])) return call->args[1];
  }
  if (op == "add") {
    if (IsConstantOf(call->args[1], 0) && keeps_type(call->args[0])) return call->args[0];
    if (IsConstantOf(call->args[0], 0) && keeps_type(call->args[1])) return call->args[1];
  }
  if (op == "power" && keeps_type(call->args[0])) {  // std::pow is slow; x * x is the same square
    if (IsConstantOf(call->args[1], 2)) return Call(kMultiply, {call->args[0], call->args[0]});
    if (IsConstantOf(call->args[1], 1)) return call->args[0];
  }
  if ((op == "subtract" && IsConstantOf(call->args[1], 0)) || (op == "divide" && IsConstantOf(call->args[1], 1))) {
    if (keeps_type(call->args[0])) return call->args[0];
  }
  return e;
}

}  // namespace

Expr SimplifyExpr(const Expr& main, const PassEnvironment&) {
  const auto* f = main->As<FunctionNode>();
  return Function(f->params, Rewrite(f->body, Simplify), f->attrs);
}

}  // namespace kiln::transform
