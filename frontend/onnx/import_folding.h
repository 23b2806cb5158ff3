// Folding at import: a call whose arguments are all constants, of one of the cheap data-movement
// or arithmetic ops (reshape, transpose, take, strided_slice, concatenate, cast, broadcast_to,
// arithmetic and comparisons, where, ...), is evaluated right away. This makes the shape
// computations of exported models (Shape -> Gather -> Concat -> Reshape) disappear, and turns
// weight layout changes (a transposed MatMul weight) into plain constants.
#pragma once

#include "ir/expr.h"

namespace kiln::frontend {

// The folded constant, or `expr` itself when it cannot be folded.
ir::Expr FoldIfConstant(const ir::Expr& expr);

}  // namespace kiln::frontend
