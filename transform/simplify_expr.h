// SimplifyExpr: local algebraic clean-ups that importers and other passes leave behind:
// reshape chains collapse into one reshape (squeeze and expand_dims become reshapes), a reshape
// to the same shape, an identity transpose, a cast to the same dtype and a broadcast_to the same
// shape disappear, transpose pairs compose, a transpose that only moves axes of extent 1 becomes
// a reshape, elementwise ops move before reshapes that only add or
// drop axes of extent 1 (so that the reshapes around 1-D layers run as 2-D meet and collapse), and
// x * 1, x / 1, x + 0, x - 0 become x when the constant does not broadcast x to a larger shape.
//
// May run: anywhere before FuseOps.
#pragma once

#include "transform/pass.h"

namespace kiln::transform {

ir::Expr SimplifyExpr(const ir::Expr& main, const PassEnvironment& environment);

}  // namespace kiln::transform
