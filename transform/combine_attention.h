// CombineAttention: scaled dot-product attention as exporters write it (a batched product of the
// queries and the transposed keys, a scale, an additive mask or bias, a softmax over the keys, a
// batched product with the values), with the reshapes, transposes and slices that split a
// projection into heads and join the heads after, into one nn.attention that reads q, k and v
// where the projections left them and writes its result where the join would have put it.
#pragma once

#include "transform/pass.h"

namespace kiln::transform {

ir::Expr CombineAttention(const ir::Expr& main, const PassEnvironment& environment);

}  // namespace kiln::transform
