// AnnotateTarget: one rewrite over the main function.
#include "transform/annotate_target.h"

#include "runtime/error.h"
#include "transform/merge_composite.h"

namespace kiln::transform {

using namespace ir;

const OpRef kCompilerBegin("annotation.compiler_begin");
const OpRef kCompilerEnd("annotation.compiler_end");

const CallNode* AsCallOf(const Expr& e, const OpRef& op) {
  const auto* call = e->As<CallNode>();
  return call != nullptr && op.Is(call->op) ? call : nullptr;
}

namespace {

// The target claiming `call`, or null.
const CompilerTarget* TargetOf(const CallNode& call, const std::vector<CompilerTarget>& targets) {
  if (!call.type().is_tensor()) return nullptr;
  for (const Expr& arg : call.args) {
    if (!arg->type().is_tensor()) return nullptr;
  }
  std::string composite = call.op == nullptr ? CompositeName(call.function) : "";
  for (const CompilerTarget& target : targets) {
    if (call.op == nullptr ? composite.rfind(target.name + ".", 0) == 0 : target.supports(call)) return &target;
  }
  return nullptr;
}

}  // namespace

Expr AnnotateTarget(const Expr& main, const std::vector<CompilerTarget>& targets) {
  const auto* f = main->As<FunctionNode>();
  runtime::CheckInternal(f != nullptr, "AnnotateTarget: expected a function");
  Expr body = Rewrite(f->body, [&](const Expr& original, const std::vector<Expr>& inputs) -> Expr {
    const auto* call = original->As<CallNode>();
    const CompilerTarget* target =
        call == nullptr || (call->op == nullptr && IsExternal(call->function)) ? nullptr : TargetOf(*call, targets);
    if (target == nullptr) return WithInputs(original, inputs);
    Attrs compiler;
    compiler.Set("compiler", target->name);
    std::vector<Expr> marked = inputs;  // a function call's first input is its function
    for (size_t i = call->op == nullptr ? 1 : 0; i < marked.size(); ++i) {
      if (marked[i]->kind() != ExprKind::kConstant) marked[i] = Call(kCompilerBegin, {marked[i]}, compiler);
    }
    return Call(kCompilerEnd, {WithInputs(original, marked)}, compiler);
  });
  return body == f->body ? main : Function(f->params, body, f->attrs);
}

}  // namespace kiln::transform
