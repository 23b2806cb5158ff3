// Host code generation: a primitive function's plan (plan.h) printed as the C++ source of one
// operator function of the packed C ABI, specialised to its static shapes. The function checks
// its arguments, keeps intermediate values in workspace memory and calls the kernel library for
// heavy ops.
#pragma once

#include <string>
#include <vector>

#include "backend/codegen/plan.h"

namespace kiln::backend {

// The source of the operator function `plan.symbol`. With `batched` (per argument: parameters,
// then outputs), the function runs its steps once per sample of a batch: a flagged argument holds
// any number of the plan's shapes along axis 0 (frontend/batch_samples.h). With `num_dims` shape
// dimensions the function takes their values after its tensors, as kiln_d0, kiln_d1, ... (the
// plan is one sample's; backend/generalize_dims.h makes its extents expressions of them).
std::string GenerateOperatorSource(const Plan& plan, const std::vector<bool>& batched = {}, int num_dims = 0);

// The lines every generated translation unit starts with.
std::string OperatorSourcePrelude();

}  // namespace kiln::backend
