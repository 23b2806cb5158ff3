// DeadCodeElimination. Values nothing uses are not part of kiln's dataflow IR to begin with, so
// what is left to remove is indirection: an item taken from a tuple built on the spot becomes
// the field itself, and primitive functions lose parameters they do not read (with the
// arguments passed for them). External functions keep their parameters: their codegen decides.
//
// May run: anywhere.
#pragma once

#include "transform/pass.h"

namespace kiln::transform {

ir::Expr DeadCodeElimination(const ir::Expr& main, const PassEnvironment& environment);

}  // namespace kiln::transform
