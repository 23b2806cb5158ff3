// The build pipeline: one readable list of named passes, each with the lowest opt level at which
// it runs (pipeline.cc), and the runner that applies it under a PassContext with its
// instrumentation (print the IR after a pass, time the passes, verify between passes).
#pragma once

#include <functional>
#include <ostream>
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

const std::vector<Pass>& BuildPipeline();
std::vector<std::string> PassNames();

struct PassTiming {
  std::string name;
  double milliseconds;
};

// Runs the pipeline on `main`. Printing goes to `log`. Returns the optimized main function;
// `timings` (optional) receives the time of each pass that ran.
ir::Expr RunPipeline(const ir::Expr& main, const PassEnvironment& environment, std::ostream& log,
                     std::vector<PassTiming>* timings = nullptr);

// Checks the invariants every pass must keep (a function, typed, primitive functions closed);
// throws InternalError naming the pass that broke them.
void VerifyFunction(const ir::Expr& main, const std::string& after_pass);

}  // namespace kiln::transform
