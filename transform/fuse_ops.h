// FuseOps: groups the op calls of the main function into primitive functions (Primitive=1), the
// units that code generation compiles and the graph executor calls. Every op call ends up in
// exactly one primitive function; variables, constants and tuples stay in the main function.
//
// May run: on a type-correct main function whose body holds op calls only (no primitive
// functions yet). After it, the main function calls only primitive functions.
#pragma once

#include "ir/expr.h"

namespace kiln::transform {

struct FuseOptions {
  // The most ops in one primitive function; 1 puts every op in a function of its own.
  int max_depth = 1;
};

ir::Expr FuseOps(const ir::Expr& main, const FuseOptions& options = {});

}  // namespace kiln::transform
