// FoldScaleAxis: a per-output-channel scale applied after a conv2d or dense (the multiply that
// SimplifyInference makes of a batch norm, possibly after the layer's bias) moves into the
// layer's weights: multiply(conv2d(x, W), S) -> conv2d(x, W * S), and
// multiply(bias_add(conv2d(x, W), b), S) -> bias_add(conv2d(x, W * S), b * S). Legal only when S
// is a constant that varies along the channel axis alone and the layer's result has no other
// use. The products are constant expressions that FoldConstant then evaluates. And forward: a
// scale per input channel that only a convolution reads moves into its weight,
// conv2d(multiply(x, S), W) -> conv2d(x, W * S), for a constant S, and for one computed at run
// time (squeeze-and-excitation's gate) where the weight is no larger than x per channel and the
// batch is fixed (fold_scale_axis.cc).
//
// May run: after SimplifyInference, before FoldConstant and FuseOps.
#pragma once

#include "transform/pass.h"

namespace kiln::transform {

ir::Expr FoldScaleAxis(const ir::Expr& main, const PassEnvironment& environment);

}  // namespace kiln::transform
