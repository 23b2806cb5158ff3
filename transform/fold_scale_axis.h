// FoldScaleAxis: a per-output-channel scale applied after a conv2d or dense (the multiply that
// SimplifyInference makes of a batch norm, possibly after the layer's bias) moves into the
// layer's weights: multiply(conv2d(x, W), S) -> conv2d(x, W * S), and
// multiply(bias_add(conv2d(x, W), b), S) -> bias_add(conv2d(x, W * S), b * S). Legal only when S
// is a constant that varies along the channel axis alone and the layer's result has no other
// use. The products are constant expressions that FoldConstant then evaluates.
//
// May run: after SimplifyInference, before FoldConstant and FuseOps.
#pragma once

#include "transform/pass.h"

namespace kiln::transform {

ir::Expr FoldScaleAxis(const ir::Expr& main, const PassEnvironment& environment);

}  // namespace kiln::transform
