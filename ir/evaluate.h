// Constant folding's one mechanism, shared by the ONNX importer (which folds shape computations
// as it builds calls) and the FoldConstant pass: a call whose op has reference semantics
// (OpDef::evaluate) and whose arguments are all constants is replaced by its value.
#pragma once

#include <cstdint>
#include <optional>

#include "ir/expr.h"
#include "runtime/ndarray.h"

namespace kiln::ir {

// The default bound on the elements of a folded value (FoldConstant's
// kiln.FoldConstant.max_elements; the importer's bound).
constexpr int64_t kDefaultMaxFoldedElements = int64_t{1} << 26;

// The value of `expr`, or std::nullopt when it is not a call of an op with reference semantics on
// constant arguments, a dtype is one evaluators do not take, the value has more than
// `max_elements` elements, or the op leaves it undefined (an index out of range, an integer
// division by zero). `expr` must be typed.
std::optional<runtime::NDArray> EvaluateCall(const Expr& expr, int64_t max_elements);

}  // namespace kiln::ir
