// FoldConstant: one walk in topological order, each call evaluated once its arguments are
// constants.
#include "transform/fold_constant.h"

#include "ir/evaluate.h"

namespace kiln::transform {

using namespace ir;

Expr FoldConstant(const Expr& main, const PassEnvironment& environment) {
  const auto* f = main->As<FunctionNode>();
  int64_t max_elements = environment.context.GetInt("kiln.FoldConstant.max_elements");
  bool folded = false;
  Expr body = Rewrite(f->body, [&](const Expr& original, const std::vector<Expr>& inputs) -> Expr {
    Expr e = WithInputs(original, inputs);
    std::optional<runtime::NDArray> value = EvaluateCall(e, max_elements);
    if (!value) return e;
    folded = true;
    return Constant(*value);
  });
  return folded ? Function(f->params, body, f->attrs) : main;
}

}  // namespace kiln::transform
