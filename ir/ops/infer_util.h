// Small helpers shared by the ops' type inference.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/attrs.h"
#include "ir/type.h"
#include "runtime/error.h"

namespace kiln::ir {

// The tensor type of argument i; throws Error for a tuple.
const TensorType& TensorArg(const std::vector<Type>& args, size_t i);
// Numpy broadcasting of two shapes; throws Error when they do not broadcast.
std::vector<int64_t> BroadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
// A possibly negative axis in [-ndim, ndim) as a non-negative one; throws Error otherwise.
int NormalizeAxis(int64_t axis, int ndim);
// Throws Error unless every argument has the dtype of argument 0.
void CheckSameDType(const std::vector<Type>& args);

}  // namespace kiln::ir
