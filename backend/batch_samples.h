// Which values of a model compiled for one sample hold the samples of its batch dimension, and
// whether every op keeps the samples apart: the condition under which running the compiled
// functions sample by sample (backend/codegen/host_codegen.cc) is the model at that batch size
// (docs/architecture.md, "Batch dimensions").
//
// Memory holds the samples one after another: a batched value of shape [d0, d1, ...] for one
// sample is [n * d0, d1, ...] at n. In the model at batch n the samples may lie along another
// axis (torchvision's attention transposes [N, S, D] to [S, N, D] and back), so each value records
// the axes that may hold them (more than one when a reshape leaves it open between axes of extent
// 1). An op keeps the samples apart when it works along other axes: elementwise ops that do not
// broadcast along them, reshapes, transposes, convolutions and pooling of images along axis 0,
// matrix products over other axes, softmax, normalization, reductions, joins and slices of other
// axes. Ops that work along their axes mix them; they, and ops kiln has no rule for yet, are errors.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/expr.h"

namespace kiln::backend {

// The axes of a tensor that may hold the batch's samples, one bit per axis; 0: it holds none.
using BatchAxes = uint64_t;

// Per output of `function` (a primitive function; its result's tuple fields in order), the axes
// that hold the samples, given the parameters'. Throws Error naming the op (and the ONNX node it
// comes from) when an op of the function mixes them, or when the function is an external
// codegen's (fixed shapes only). An output that holds no samples is the same for each.
std::vector<BatchAxes> BatchedOutputs(const ir::FunctionNode& function, const std::vector<BatchAxes>& param_axes);

}  // namespace kiln::backend
