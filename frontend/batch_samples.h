// Whether a model keeps the samples of its batch apart, so that a library compiled for one sample
// and run sample by sample (backend/codegen/host_codegen.cc) computes the model at any batch
// size (docs/architecture.md, "Batch dimensions").
//
// The model is imported twice, for one sample and for two; the two main functions must be the same
// graph. A value's extents tell where it holds the samples: the one axis that doubles (an extent
// that changes otherwise, or two axes that double, is an error), and a constant that differs
// between the two is computed from the batch size: allowed only when it is the one-sample constant
// repeated along an axis (a class token expanded to the batch), an error otherwise (the batch size
// used as data). Then every op must keep the samples apart: work along other axes than theirs
// (softmax, reductions, joins, slices, normalization, top-k, ...), not broadcast an operand that
// holds them along their axis, not sum a matrix product over it, take images along axis 0
// (convolutions, pooling), and reshape them as whole blocks (the samples the outer part of their
// axis before and after). The model's outputs hold them along axis 0.
#pragma once

#include "ir/expr.h"
#include "runtime/error.h"

namespace kiln::frontend {

// The model does not keep the samples apart (CheckSamplesApart, or its import for two samples
// fails): the importer takes the dimension as a shape dimension instead (ir/dim_samples.h).
class BatchDimensionError : public runtime::Error {
 public:
  explicit BatchDimensionError(const runtime::Error& cause) : runtime::Error(cause.message(), cause.location()) {}
};

// `one` and `two` are the main function imported for one sample and for two; `one` carries the
// batch attributes (ir::attr::kBatchDim, ...). Throws Error naming the op and its ONNX node when
// the model does not keep the samples apart.
void CheckSamplesApart(const ir::Expr& one, const ir::Expr& two);

}  // namespace kiln::frontend
