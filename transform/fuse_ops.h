// FuseOps: groups the op calls of the main function into primitive functions (Primitive=1), the
// units that code generation compiles and the graph executor calls. Op patterns decide:
//   - a heavy op (conv2d, dense, batch_matmul, pooling: out-elementwise-fusable) or a reduction
//     starts a group and takes the elementwise/broadcast ops that follow it (bias, batch-norm
//     scale and shift, residual add, activation) as its epilogue;
//   - elementwise, broadcast and injective ops (reshape, transpose, ...) fuse into chains, and a
//     reduction takes such a chain as its input stage (x - mean, squared, then mean);
//   - opaque ops (softmax, layer_norm, ...) stay alone.
// An op joins its producer's group only when it is that producer's single consumer and the
// producer is not a graph output, so every group has one result and no cycles can form. The one
// exception is a diamond: when a group's result is read several times and all paths from it
// meet again in one op within a few elementwise/broadcast ops (x * sigmoid(x)), those ops join
// the group together. And a concatenation alone in its group, whose parts are each the result of
// a heavy op's group read only by it and lie one after another in its output (the axes before the
// joined one of extent 1), takes those groups in: lowering computes each part in its place in
// the concatenation's output (SqueezeNet's fire modules, Inception's branches).
//
// Calls of external functions (ir::IsExternal: handed to an external codegen) stay as they are;
// nothing fuses into or across them.
//
// May run: on a type-correct main function whose body holds op calls and calls of external
// functions. After it, the main function calls only primitive and external functions.
#pragma once

#include "ir/expr.h"

namespace kiln::transform {

struct FuseOptions {
  // The most ops in one primitive function; 1 puts every op in a function of its own.
  int max_depth = 256;
};

ir::Expr FuseOps(const ir::Expr& main, const FuseOptions& options = {});

}  // namespace kiln::transform
