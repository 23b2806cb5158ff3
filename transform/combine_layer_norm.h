// CombineLayerNorm: layer normalization as exporters write it before ONNX had the op (PyTorch at
// opsets below 17: mean, subtract, square, mean, add epsilon, sqrt, divide, times gamma, plus
// beta) becomes one nn.layer_norm over the last axis: one kernel on the host instead of five,
// and an op external codegens take whole (TVM's partition_for_dnnl makes the same rewrite).
// Only float32, only over the last axis, only with a scalar epsilon and gamma and beta of one
// value per element of that axis; without gamma (or beta), which SimplifyExpr removes when it is
// all ones (zeros), the layer norm gets ones (zeros).
//
// May run: anywhere before FuseOps; after SimplifyExpr it sees squares as multiplies, before it
// as powers: it takes both.
#pragma once

#include "transform/pass.h"

namespace kiln::transform {

ir::Expr CombineLayerNorm(const ir::Expr& main, const PassEnvironment& environment);

}  // namespace kiln::transform
