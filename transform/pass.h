// What a pass is: a function from the main function to the main function, run under a
// PassContext with what the build supplies (PassEnvironment). Each pass header declares its entry
// with this signature; pipeline.h lists them.
#pragma once

#include <string>
#include <vector>

#include "ir/expr.h"
#include "target/target.h"
#include "transform/pass_context.h"

namespace kiln::transform {

struct PassEnvironment {
  const PassContext& context;
  target::Target target = target::HostTarget();  // what the build compiles for
};

using PassFunction = ir::Expr (*)(const ir::Expr& main, const PassEnvironment& environment);

struct Pass {
  std::string name;
  int opt_level;  // runs when the context's opt level is at least this (or when required)
  PassFunction run;
};

}  // namespace kiln::transform
