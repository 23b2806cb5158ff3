// FusePointwiseDepthwise: a blocked pointwise convolution that expands the channels, its bias and
// clip, relu or swish (x * sigmoid(x)), and the depthwise convolution that alone reads the result
// (the inverted residual blocks of MobileNetV2, MNASNet and EfficientNet, after AlterOpLayout)
// become one nn.conv2d_pointwise_depthwise call, where the kernel computes it on the target
// (strategy/conv2d.h, kernels::PointwiseDepthwiseComputes): the expanded tensor, 4.8 MB in
// MobileNetV2's second block, is then never written to memory and read back
// (kernels/conv/pointwise_depthwise.cc). What follows the depthwise convolution (its bias and clip) stays
// its epilogue, which FuseOps joins as before. Only expansions of at most 64 input channels:
// wider ones do more pointwise work than the saved traffic repays. Decides by channels and
// windows only, never by the extents a shape dimension changes.
//
// May run: after AlterOpLayout (blocked layouts and implementations chosen) and before FuseOps.
#pragma once

#include "transform/pass.h"

namespace kiln::transform {

ir::Expr FusePointwiseDepthwise(const ir::Expr& main, const PassEnvironment& environment);

}  // namespace kiln::transform
