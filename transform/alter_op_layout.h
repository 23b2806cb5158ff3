// AlterOpLayout: convolution chains run in blocked layouts. A tensor in NCHW[x]c is
// [N, C / x, H, W, x]; the x channels of a block sit side by side, so a convolution kernel can
// hold one block of output channels in a vector register (kernels/conv/conv2d_nchwc.cc).
//
//   - nn.conv2d and nn.dense are laid out as the implementation that the kernel selection
//     (strategy/conv2d.h, strategy/dense.h) chooses for the target wants, and carry its name in
//     their `implementation` attribute. A blocked convolution (float32, groups 1, output channels
//     dividing by the block: the kiln.AlterOpLayout.block config, by default the target's, or
//     half of it when that is 8 or more) produces NCHW[x]c, with its weights packed as
//     OIHW[i]i[x]o; it reads its input as it comes: blocked when the producer is blocked, else
//     plain NCHW (i = 1), so a first convolution over 3 channels needs no transform. A depthwise
//     one (groups == C == O) reads its input in its own block, with weights OIHW1i[x]o; a grouped
//     one whose groups fill whole blocks, in a block that fills each group's channels. A dense
//     layer's constant weight is packed in panels (NK16n) when its implementation wants them.
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
  target::Target target = target::HostTarget();  // whose kernel configuration the choices read
};

ir::Expr AlterOpLayout(const ir::Expr& main, const AlterOpLayoutOptions& options);
// The pipeline's entry: the block from the context's config (kiln.AlterOpLayout.block), or when
// that is -1 (the default) the one the environment's target prefers.
ir::Expr AlterOpLayout(const ir::Expr& main, const PassEnvironment& environment);

}  // namespace kiln::transform
