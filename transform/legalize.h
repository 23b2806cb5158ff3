// Legalize: rewrites the ops kiln's own kernels do not implement into ops they do.
// nn.conv2d_transpose becomes the convolution it is the gradient of (TVM's topi computes it the
// same way): the input with stride - 1 zeros after each element, padded by the kernel's extent
// less the pads (cropped where that is negative), convolved at stride 1 with the weight flipped
// and its in/out channels swapped within each group. The weight's rearrangement is a constant
// expression that FoldConstant then evaluates. Ops inside external functions stay as they are:
// their backend runs them.
//
// May run: before FoldConstant, AlterOpLayout and FuseOps; always (code generation needs it).
#pragma once

#include <string>

#include "transform/pass.h"

namespace kiln::transform {

ir::Expr Legalize(const ir::Expr& main, const PassEnvironment& environment);

// Whether Legalize rewrites every call of the op named `op` (kiln's kernels need no lowering of it).
bool Legalizes(const std::string& op);

}  // namespace kiln::transform
