// What a pass is: a function from the main function to the main function, run under a
// PassContext with what the build supplies (PassEnvironment). Each pass header declares its entry
// with this signature; pipeline.h lists them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/expr.h"
#include "runtime/ndarray.h"
#include "transform/pass_context.h"

namespace kiln::transform {

// Evaluates a function without parameters to the values of its result (a tensor or a tuple of
// tensors). The build driver supplies one that compiles with the host code generator, so that
// folded constants are computed by the same kernels as the model.
using ConstantEvaluator = std::function<std::vector<runtime::NDArray>(const ir::Expr& function)>;

struct PassEnvironment {
  const PassContext& context;
  ConstantEvaluator evaluate;  // may be empty: FoldConstant then does nothing
};

using PassFunction = ir::Expr (*)(const ir::Expr& main, const PassEnvironment& environment);

struct Pass {
  std::string name;
  int opt_level;  // runs when the context's opt level is at least this (or when required)
  PassFunction run;
};

}  // namespace kiln::transform
