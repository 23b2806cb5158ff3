// Host code generation: a primitive function becomes the C++ source of one operator function of
// the packed C ABI, specialised to its static shapes. The function checks its arguments, keeps
// intermediate values in workspace memory and calls the kernel library for heavy ops.
#pragma once

#include <string>

#include "ir/expr.h"

namespace kiln::backend {

// The source of `symbol` computing `primitive` (a FunctionNode with Primitive=1). Inputs are the
// parameters in order, then one output per tensor of the result. Throws Error naming the op when
// an op has no emitter or a dtype is not supported.
std::string GenerateOperatorSource(const std::string& symbol, const ir::Expr& primitive);

// The lines every generated translation unit starts with.
std::string OperatorSourcePrelude();

}  // namespace kiln::backend
