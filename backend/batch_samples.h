// Which values of a model compiled for one sample hold the samples of its batch dimension, and
// whether every op keeps the samples apart: the condition under which running the compiled
// functions sample by sample (backend/codegen/host_codegen.cc) is the model at that batch size
// (docs/architecture.md, "Batch dimensions").
//
// A batched value holds the samples one after another along its axis 0 (an op that reshapes may
// merge the samples' axis into axis 0: [1, S, D] -> [S, D] holds [n * S, D] at n samples). An op
// keeps the samples apart when each sample of its result comes from the same sample of its
// batched arguments and from the whole of the others: elementwise ops without broadcasting
// along axis 0, reshapes, convolutions, pooling, matrix products of batched rows, and ops along an
// axis other than 0. Reductions, softmax, concatenation, slicing, transposes and gathers that
// involve axis 0 mix or move them, and so do ops kiln has no rule for yet.
#pragma once

#include <vector>

#include "ir/expr.h"

namespace kiln::backend {

// Per output of `function` (a primitive function; its result's tuple fields in order), whether it
// holds the samples, given which parameters do. Throws Error naming the op (and the ONNX node it
// comes from) when an op of the function mixes or moves the samples, or when the function is an
// external codegen's (fixed shapes only). An output that holds no samples is the same for each.
std::vector<bool> BatchedOutputs(const ir::FunctionNode& function, const std::vector<bool>& batched_params);

}  // namespace kiln::backend
