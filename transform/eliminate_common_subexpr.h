// EliminateCommonSubexpr: op calls with the same op, attributes and input values, and constants
// with the same type and bytes, become one value.
//
// May run: anywhere before FuseOps.
#pragma once

#include "transform/pass.h"

namespace kiln::transform {

ir::Expr EliminateCommonSubexpr(const ir::Expr& main, const PassEnvironment& environment);

}  // namespace kiln::transform
