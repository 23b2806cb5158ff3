// Checks a call's arguments and result before its op's evaluator sees them.
#include "ir/evaluate.h"

#include "ir/op.h"
#include "ir/ops/eval_util.h"

namespace kiln::ir {

std::optional<runtime::NDArray> EvaluateCall(const Expr& expr, int64_t max_elements) {
  const auto* call = expr->As<CallNode>();
  if (call == nullptr || call->op == nullptr || call->op->evaluate == nullptr || !expr->type().is_tensor()) {
    return std::nullopt;
  }
  const TensorType& result = expr->type().tensor();
  if (!IsEvaluableDType(result.dtype) || result.NumElements() > max_elements) return std::nullopt;
  std::vector<runtime::NDArray> args;
  for (const Expr& arg : call->args) {
    const auto* constant = arg->As<ConstantNode>();
    if (constant == nullptr || !IsEvaluableDType(constant->value.dtype())) return std::nullopt;
    args.push_back(constant->value);
  }
  std::optional<runtime::NDArray> value = call->op->evaluate(args, call->attrs, result);
  if (value) {
    runtime::CheckInternal(value->shape() == result.shape && value->dtype() == result.dtype, "the evaluator of ",
                           call->op->name, " returned ", ShapeText(value->shape()), " ",
                           runtime::DTypeToString(value->dtype()), " for a result of type ", expr->type().ToString());
  }
  return value;
}

}  // namespace kiln::ir
