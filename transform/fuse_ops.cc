// FuseOps: for now every op call becomes a primitive function of its own (max_depth 1).
#include "transform/fuse_ops.h"

#include <unordered_map>

#include "runtime/error.h"

namespace kiln::transform {

using namespace ir;

namespace {

// fn [Primitive=1] (%p0, %p1, ...) { op(%p0, %p1, ...) } called with the call's arguments.
Expr WrapInPrimitive(const CallNode& call, const std::vector<Expr>& args) {
  std::vector<Expr> params;
  for (size_t i = 0; i < args.size(); ++i) params.push_back(Var("p" + std::to_string(i), args[i]->type()));
  Attrs attrs;
  attrs.Set("Primitive", int64_t{1});
  Expr function = Function(params, Call(*call.op, params, call.attrs), attrs);
  return CallFunction(function, args);
}

}  // namespace

Expr FuseOps(const Expr& main, const FuseOptions& options) {
  const auto* f = main->As<FunctionNode>();
  runtime::Check(f != nullptr, "FuseOps: expected a function");
  runtime::Check(options.max_depth >= 1, "FuseOps: max_depth must be at least 1, got ", options.max_depth);
  Expr body = Rewrite(f->body, [](const Expr& original, const std::vector<Expr>& inputs) -> Expr {
    const auto* call = original->As<CallNode>();
    if (call == nullptr) return WithInputs(original, inputs);
    runtime::Check(call->op != nullptr, "FuseOps: the main function already calls functions");
    return WrapInPrimitive(*call, inputs);
  });
  return Function(f->params, body, f->attrs);
}

}  // namespace kiln::transform
