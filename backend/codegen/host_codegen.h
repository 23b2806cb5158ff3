// Host code generation: a primitive function's plan (plan.h) printed as the C++ source of one
// operator function of the packed C ABI, specialised to its static shapes. The function checks
// its arguments, keeps intermediate values in workspace memory and calls the kernel library for
// heavy ops.
#pragma once

#include <string>

#include "backend/codegen/plan.h"

namespace kiln::backend {

// The source of the operator function `plan.symbol`.
std::string GenerateOperatorSource(const Plan& plan);

// The lines every generated translation unit starts with.
std::string OperatorSourcePrelude();

}  // namespace kiln::backend
