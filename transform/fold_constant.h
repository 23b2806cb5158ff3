// FoldConstant: every largest subgraph whose leaves are all constants is evaluated once, with the
// evaluator the build supplies (the same code generator and kernels as the model), and replaced
// by its value. Results larger than kiln.FoldConstant.max_elements stay computed at run time.
//
// May run: anywhere before FuseOps; does nothing without an evaluator.
#pragma once

#include "transform/pass.h"

namespace kiln::transform {

ir::Expr FoldConstant(const ir::Expr& main, const PassEnvironment& environment);

}  // namespace kiln::transform
