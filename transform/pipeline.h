// The build pipeline: one readable list of named passes, each with the lowest opt level at which
// it runs (pipeline.cc), and the runner that applies it under a PassContext with its
// instrumentation (print the IR after a pass, time the passes, verify between passes).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "ir/expr.h"
#include "transform/pass.h"

namespace kiln::transform {

const std::vector<Pass>& BuildPipeline();
std::vector<std::string> PassNames();

struct PassTiming {
  std::string name;
  double milliseconds;
};

// Runs one pass as RunPipeline does. What escapes it says where: a kiln Error gains the ONNX node
// of the call the pass was working on (ir/provenance.h); anything else, a bug in kiln, is an
// InternalError naming the pass and that call.
ir::Expr RunPass(const Pass& pass, const ir::Expr& main, const PassEnvironment& environment);

// Runs the pipeline on `main`. Printing goes to `log`. Returns the optimized main function;
// `timings` (optional) receives the time of each pass that ran.
ir::Expr RunPipeline(const ir::Expr& main, const PassEnvironment& environment, std::ostream& log,
                     std::vector<PassTiming>* timings = nullptr);

// Checks the invariants every pass must keep (a function, typed, primitive functions closed);
// throws InternalError naming the pass that broke them.
void VerifyFunction(const ir::Expr& main, const std::string& after_pass);

}  // namespace kiln::transform
