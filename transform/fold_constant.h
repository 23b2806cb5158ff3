// FoldConstant: every call whose arguments are (or fold to) constants and whose op has reference
// semantics (OpDef::evaluate; ir/evaluate.h) is replaced by its value. Calls of other ops (conv2d,
// pooling, reductions) and values larger than kiln.FoldConstant.max_elements stay computed at
// run time.
//
// May run: anywhere before FuseOps.
#pragma once

#include "transform/pass.h"

namespace kiln::transform {

ir::Expr FoldConstant(const ir::Expr& main, const PassEnvironment& environment);

}  // namespace kiln::transform
