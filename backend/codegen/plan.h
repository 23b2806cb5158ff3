// The lowering plan of one primitive function: what its operator function computes, step by step,
// with every decision taken (buffers, kernel choice and typed kernel parameters, epilogues fused
// into kernels, elementwise ops sharing a loop). lower.cc builds it; host_codegen.cc only prints it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "backend/codegen/kernel_params.h"
#include "ir/expr.h"
#include "kernels/kernels.h"
#include "target/target.h"

namespace kiln::backend {

// A tensor of the operator function: one of its parameters, one of its outputs, or workspace
// (allocated when the function starts, released when it returns).
struct PlanBuffer {
  enum Kind { kParam, kOutput, kWorkspace };
  Kind kind = kWorkspace;
  int index = 0;  // among the buffers of its kind: p<index>, out<index>, t<index>
  ir::TensorType type;
  // A workspace buffer with no memory of its own: the bytes of an earlier buffer seen with this
  // buffer's type (a reshape's result, a value whose one reader is a reshape the function
  // returns, written in place in that output, or a part of a returned concatenation, computed in
  // its place in the concatenation's output).
  int view_of = -1;
  // Where the view starts in that buffer, in elements (a part of a concatenation computed in its
  // place in the concatenation's output).
  int64_t view_offset = 0;
  // An output whose storage the executor sizes as the graph runs (OpDef::sized_by_input): its
  // argument spec takes any extents.
  bool sized_at_run_time = false;
};
// A buffer of the plan: an index into Plan::buffers.
using BufferId = int;

// One argument of a kernel call, named as the kernel names it: a buffer or a typed scalar.
struct KernelArg {
  using Value = std::variant<BufferId, int64_t, float, bool>;
  std::string name;
  Value value;
};

// One elementwise op a kernel applies to its result while it is in registers.
struct EpilogueOp {
  kernels::EpilogueStep::Op op = kernels::EpilogueStep::kAdd;
  kernels::EpilogueStep::Operand operand = kernels::EpilogueStep::kNone;
  std::optional<BufferId> data;  // the other operand; absent for kNone
  float lo = 0, hi = 0;          // kClip bounds
};

// kiln::kernels::<kernel>(params, args..., [epilogue, epilogue size], [&kiln::kernels::<inner>]):
// the parameter struct, when the kernel takes one, then `args` in order. The kernel may name a
// template's instance (Conv2DNCHWc<16, 0, 16, 1, 16>): a library compiles the instances its code names.
struct KernelCall {
  std::string kernel;
  std::string implementation;  // what inspect and the profiler name: the kernel selection's choice
  std::optional<KernelParams> params;
  std::vector<KernelArg> args;
  bool takes_epilogue = false;  // the kernel takes (const EpilogueStep*, int) last
  std::vector<EpilogueOp> epilogue;
  bool returns_status = true;  // the kernel returns non-zero on failure, its message set
  std::string inner_kernel;     // non-empty: a kernel this one runs, passed last by its address
};

// Elementwise ops of one output shape computed in one loop over it, each element through every
// member in order. A member reads buffers (broadcast to the shape), a concatenation of buffers
// where they lie (never written out: DenseNet's batch normalization of the features joined so far
// read them through a copy, a pass over all of them per layer), or earlier members' values at the
// same element, and stores only when something outside the loop reads its value.
struct ElementwiseLoop {
  struct Operand {
    int member = -1;       // the member computing it, or -1
    BufferId buffer = -1;  // otherwise: the buffer read, or -1
    std::vector<BufferId> parts;  // otherwise: the buffers joined along `axis` of the loop's shape
    int axis = -1;
  };
  struct Member {
    const ir::CallNode* call = nullptr;
    std::vector<Operand> operands;  // one per argument
    std::optional<BufferId> output;
  };
  std::vector<Member> members;
  bool parallel = false;  // split across the runtime's threads
};

// An op written as loops by its emitter (transpose, reduction, pad, take, ...).
struct LoopOp {
  const ir::CallNode* call = nullptr;
  std::vector<BufferId> inputs, outputs;
  // Split across threads: loops written over the output in order (OpenOutputLoops), or global
  // average pooling's planes.
  bool parallel = false;
};

// The bytes of one buffer into another of the same size.
struct Copy {
  BufferId from = -1, to = -1;
};

// A tree of data-movement ops (reshape and its kind, transpose, strided_slice, concatenate)
// computed by one loop over its root's output, in runs of `run` elements that lie one after
// another in one leaf buffer: each run's source is found by walking its first index back through
// the ops, and no op of the tree writes a buffer of its own (a channel shuffle, concatenate ->
// reshape -> transpose -> reshape, was a pass over memory per op).
struct GatherLoop {
  struct Node {
    const ir::CallNode* call = nullptr;  // null: a leaf
    BufferId leaf = -1;                  // a leaf's buffer
    std::vector<int> inputs;             // a call's arguments, as indices into `nodes`
  };
  std::vector<Node> nodes;  // the root first
  BufferId output = -1;
  int64_t run = 1;
  bool parallel = false;  // runs split across the runtime's threads
};

using PlanStep = std::variant<KernelCall, ElementwiseLoop, LoopOp, Copy, GatherLoop>;

struct Plan {
  std::string symbol;
  ir::Expr function;  // the primitive function; steps point at its calls
  std::vector<PlanBuffer> buffers;  // the parameters, then the outputs, then workspace
  std::vector<PlanStep> steps;
  // One sample of a function of a library with shape dimensions whose extents may vary (known at
  // run time only): every loop that may be split across threads is, when it has at least
  // `parallel_elements` elements as it runs (else split as planned, parallel_elements 0).
  bool extents_vary = false;
  int64_t parallel_elements = 0;

  // What computes the function, as inspect and the profiler show it: the kernel implementations
  // and "elementwise loop", "<op> loops", "gather loop" or "copy" for the other steps, each once, in order,
  // joined by " + ".
  std::string Implementations() const;

  BufferId Param(int index) const { return index; }
  BufferId Output(int index) const { return NumOf(PlanBuffer::kParam) + index; }
  int NumOf(PlanBuffer::Kind kind) const;
};

// The plan of `primitive` (a FunctionNode with Primitive=1) as the operator function `symbol` for
// `target`: its inputs are the parameters in order, then one output per tensor of the result.
// Throws Error naming the op when an op or a form of it (dtype, layout) has no lowering.
// `extents_vary`: the function is one sample of a library with shape dimensions.
Plan LowerPrimitiveFunction(const std::string& symbol, const ir::Expr& primitive,
                            const target::Target& target = target::HostTarget(), bool extents_vary = false);

}  // namespace kiln::backend
