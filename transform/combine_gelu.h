// CombineGelu: GELU in its erf form as exporters write it (PyTorch's nn.GELU and BERT's gelu:
// x * 0.5 * (1 + erf(x / sqrt 2)), in any order of the products; ONNX's Gelu and the
// com.microsoft Gelu family as the importer spells them out) becomes one nn.gelu: the constants
// are then part of the op, not parameters of the fused function, so the elementwise loop does no
// divisions and a dense layer can take GELU into its epilogue. Only float32, only where the
// result has x's shape.
//
// May run: anywhere before FuseOps.
#pragma once

#include "transform/pass.h"

namespace kiln::transform {

ir::Expr CombineGelu(const ir::Expr& main, const PassEnvironment& environment);

}  // namespace kiln::transform
