// DeadCodeElimination.
#include "transform/dead_code_elimination.h"

#include <unordered_set>

namespace kiln::transform {

using namespace ir;

namespace {

// A primitive function without the parameters its body does not read, and the kept positions.
Expr DropUnusedParams(const FunctionNode& f, std::vector<size_t>& kept) {
  std::unordered_set<const ExprNode*> read;
  for (const Expr& e : PostOrder(f.body)) read.insert(e.get());
  std::vector<Expr> params;
  for (size_t i = 0; i < f.params.size(); ++i) {
    if (read.count(f.params[i].get()) == 0) continue;
    params.push_back(f.params[i]);
    kept.push_back(i);
  }
  return Function(params, f.body, f.attrs);
}

}  // namespace

Expr DeadCodeElimination(const Expr& main, const PassEnvironment&) {
  const auto* f = main->As<FunctionNode>();
  Expr body = Rewrite(f->body, [](const Expr& original, const std::vector<Expr>& inputs) -> Expr {
    if (const auto* item = original->As<TupleGetItemNode>()) {
      if (const auto* tuple = inputs[0]->As<TupleNode>()) return tuple->fields[item->index];
    }
    const auto* call = original->As<CallNode>();
    if (call != nullptr && call->function != nullptr && !IsExternal(call->function)) {
      const auto* fn = inputs[0]->As<FunctionNode>();
      std::vector<size_t> kept;
      Expr slim = DropUnusedParams(*fn, kept);
      if (kept.size() != fn->params.size()) {
        std::vector<Expr> args;
        for (size_t i : kept) args.push_back(inputs[1 + i]);
        return CallFunction(slim, args);
      }
    }
    return WithInputs(original, inputs);
  });
  return Function(f->params, body, f->attrs);
}

}  // namespace kiln::transform
