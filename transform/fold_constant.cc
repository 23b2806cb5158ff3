// FoldConstant.
#include "transform/fold_constant.h"

#include <unordered_map>
#include <unordered_set>

#include "runtime/error.h"

namespace kiln::transform {

using namespace ir;

Expr FoldConstant(const Expr& main, const PassEnvironment& environment) {
  if (!environment.evaluate) return main;
  const auto* f = main->As<FunctionNode>();
  int64_t max_elements = environment.context.GetInt("kiln.FoldConstant.max_elements");
  std::vector<Expr> order = PostOrder(f->body);

  // A value is constant-valued when it is a constant, or an op call (or tuple item) whose inputs
  // all are.
  std::unordered_set<const ExprNode*> constant_valued;
  for (const Expr& e : order) {
    bool foldable = e->kind() == ExprKind::kConstant;
    if (const auto* call = e->As<CallNode>(); call != nullptr && call->op != nullptr) foldable = true;
    if (e->kind() == ExprKind::kTupleGetItem) foldable = true;
    if (e->kind() != ExprKind::kConstant && foldable) {
      for (const Expr& input : Inputs(e)) foldable = foldable && constant_valued.count(input.get()) != 0;
    }
    if (foldable) constant_valued.insert(e.get());
  }
  // Roots: constant-valued computed tensors used by something that is not constant-valued.
  std::vector<Expr> roots;
  std::unordered_set<const ExprNode*> is_root;
  auto consider = [&](const Expr& e) {
    if (constant_valued.count(e.get()) == 0 || e->kind() == ExprKind::kConstant || !e->type().is_tensor()) return;
    if (e->type().tensor().NumElements() > max_elements) return;
    if (is_root.insert(e.get()).second) roots.push_back(e);
  };
  for (const Expr& e : order) {
    if (constant_valued.count(e.get()) != 0) continue;
    for (const Expr& input : Inputs(e)) consider(input);
  }
  consider(f->body);
  if (roots.empty()) return main;

  Expr evaluated_function = Function({}, roots.size() == 1 ? roots[0] : Tuple(roots));
  std::vector<runtime::NDArray> values = environment.evaluate(evaluated_function);
  runtime::Check(values.size() == roots.size(), "FoldConstant: the evaluator returned ", values.size(),
                 " values for ", roots.size());
  std::unordered_map<const ExprNode*, Expr> replacement;
  for (size_t i = 0; i < roots.size(); ++i) replacement[roots[i].get()] = Constant(values[i]);
  Expr body = Rewrite(f->body, [&](const Expr& original, const std::vector<Expr>& inputs) -> Expr {
    auto it = replacement.find(original.get());
    if (it != replacement.end()) return it->second;
    return WithInputs(original, inputs);
  });
  return Function(f->params, body, f->attrs);
}

}  // namespace kiln::transform
