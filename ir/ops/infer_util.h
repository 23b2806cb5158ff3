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
// One sliced axis of a strided_slice, clamped like numpy / ONNX Slice: the first index taken, the
// step, how many (first 0 when none).
struct SlicedAxis {
  int axis;
  int64_t first, step, length;
};
// The sliced axes of a strided_slice of `shape`; throws Error when the attributes do not fit.
std::vector<SlicedAxis> SlicedAxes(const std::vector<int64_t>& shape, const Attrs& attrs);
// A transpose's permutation of `ndim` axes: its default (reversed axes) filled in, negative axes
// counted from the back.
std::vector<int64_t> TransposeAxes(const Attrs& attrs, size_t ndim);
// Whether a concatenation of result type `type` (attributes `attrs`) lays its parts one after
// another in memory: its axes before the joined one have extent 1.
bool PartsFollowOneAnother(const TensorType& type, const Attrs& attrs);

}  // namespace kiln::ir
