// AlterOpLayout: convolution chains run in blocked layouts. A tensor in NCHW[x]c is
// [N, C / x, H, W, x]; the x channels of a block sit side by side, so a convolution kernel can
// hold one block of output channels in a vector register (kernels/conv/conv2d_nchwc.cc).
//
//   - nn.conv2d (float32, groups 1) whose output channels divide by the block (the
//     kiln.AlterOpLayout.block config, by default the target's choice, target/kernel_choice.h;
//     else half of it when that is 8 or more)
//     produces NCHW[x]c, with its weights packed as OIHW[i]i[x]o. It reads its input as it comes:
//     blocked when the producer is blocked, else plain NCHW (i = 1), so a first convolution over
//     3 channels needs no transform.
//   - A depthwise nn.conv2d (groups == C == O) whose channels divide by a block runs blocked too,
//     with weights OIHW1i[x]o.
//   - Ops that work on blocked data follow their input: elementwise ops; broadcasting arithmetic
//     whose other operand is a scalar, per-channel, spatial or full tensor (reshaped or
//     transformed to match); nn.bias_add on channels (it becomes an add of the reshaped bias);
//     max/avg pooling and global average pooling (layout attribute); mean/sum/max/min over H and
//     W with keepdims; concatenate on channels when every input's channels divide by the block.
//   - Every other consumer (calls of external functions too), and the function's result, gets
//     the plain NCHW tensor back through one layout_transform per blocked value: transforms
//     appear only at the borders of blocked regions. Transforms compose, a transform meeting its inverse cancels (also where the input
//     IR already holds such pairs), a transform of a tensor with H = W = 1 is a reshape, and
//     constants (weights, biases) are transformed here, at build time.
//
// Block 0 disables the pass; other blocks than 8 and 16 are an Error (the kernels have vector
// forms for those two).
//
// May run: after FoldConstant (so that weights are constants and get packed here) and before
// FuseOps, on a main function of op calls. The function's parameter and result types do not
// change.
#pragma once

#include "transform/pass.h"

namespace kiln::transform {

struct AlterOpLayoutOptions {
  int64_t block = 16;  // channel block of NCHW[x]c; 0: leave the function alone
};

ir::Expr AlterOpLayout(const ir::Expr& main, const AlterOpLayoutOptions& options);
// The pipeline's entry: the block from the context's config (kiln.AlterOpLayout.block), or when
// that is -1 (the default) the one the environment's target prefers.
ir::Expr AlterOpLayout(const ir::Expr& main, const PassEnvironment& environment);

}  // namespace kiln::transform
