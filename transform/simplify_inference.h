// SimplifyInference: rewrites what only matters in training. nn.batch_norm becomes a multiply by
// a per-channel scale and an add of a per-channel shift (computed from the batch-norm constants;
// FoldConstant evaluates them and FoldScaleAxis moves the scale into a preceding conv or dense);
// nn.dropout and copy disappear.
//
// May run: anywhere before FuseOps.
#pragma once

#include "transform/pass.h"

namespace kiln::transform {

ir::Expr SimplifyInference(const ir::Expr& main, const PassEnvironment& environment);

}  // namespace kiln::transform
