// Evaluating constant subgraphs for FoldConstant with the same code generator and kernels as
// the model: the function is compiled (cached like any build), linked into a temporary library,
// run once by the graph executor, and its results returned.
#pragma once

#include <vector>

#include "backend/compiler.h"
#include "ir/expr.h"
#include "runtime/ndarray.h"

namespace kiln::backend {

// `function` takes no parameters; its result is a tensor or a tuple of tensors.
std::vector<runtime::NDArray> EvaluateConstantFunction(const ir::Expr& function, const CompilerOptions& options);

}  // namespace kiln::backend
