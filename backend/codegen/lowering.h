// How the host code generator lowers each op: one entry per op (lowerings.cc), keyed by the op,
// saying whether a kernel call, an elementwise loop, loops of its own or a copy computes it.
// Kernel planners choose the kernel and fill its parameters; lower.cc asks them.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/codegen/emitter.h"
#include "backend/codegen/plan.h"
#include "ir/expr.h"

namespace kiln::backend {

// An op that reads a kernel's result, a candidate for the kernel's epilogue: `call` reads the
// result once and, for a binary op, one other operand; or, for `swish`, `call` is the multiply of
// result * sigmoid(result).
struct FusedOp {
  const ir::CallNode* call = nullptr;
  std::optional<BufferId> operand;  // absent for a unary op
  ir::TensorType operand_type;
  bool operand_first = false;  // the other operand is the first argument (x - result)
  bool swish = false;
};

// What a kernel planner is given: the call, the buffers of its arguments and results, and the
// ops it applies as its epilogue (as many as its `epilogue_length` accepted).
struct KernelOperands {
  const ir::CallNode& call;
  const kernels::KernelConfig& config;  // of the target's instruction set
  std::vector<BufferId> inputs;
  std::vector<ir::TensorType> input_types;
  std::vector<BufferId> outputs;
  std::vector<ir::TensorType> output_types;
  std::vector<FusedOp> epilogue;
};

using KernelPlanner = KernelCall (*)(const KernelOperands& operands);
// How many ops at the start of `chain` the kernel computing `anchor` (with arguments of types
// `anchor_inputs`) applies as its epilogue. `chain` holds the ops that read the anchor's result
// one after another, each the only reader of the one before, whose other operands are parameters.
using EpilogueLength = size_t (*)(const ir::CallNode& anchor, const std::vector<ir::TensorType>& anchor_inputs,
                                  const std::vector<FusedOp>& chain);

// An elementwise op computed by its one definition (kernels/elementwise/scalar_ops.h): a call of
// kiln::kernels::scalar::<function> on the op's elements, then its float attributes `attrs` (as
// the element type) in order.
struct ScalarCall {
  const char* function = nullptr;
  std::vector<const char*> attrs;
};

// Exactly one of kernel, emit, scalar or element, and copy is set.
struct Lowering {
  KernelPlanner kernel = nullptr;            // computed by a call of the kernel library
  EpilogueLength epilogue_length = nullptr;  // with kernel: the kernel applies ops after it
  OpEmitter emit = nullptr;                  // written as loops of its own
  // Elementwise: one element, so runs of them share one loop; by its scalar function, or (cast,
  // broadcast_to) by an expression of its own.
  ScalarCall scalar;
  ElementExpr element = nullptr;
  // Elementwise ops whose arguments after the first are 1-D and lie along the `axis` attribute.
  bool params_along_axis = false;
  // The step a kernel's epilogue applies when the op follows the kernel; absent when none can.
  std::optional<kernels::EpilogueStep::Op> epilogue_step;
  bool copy = false;  // the result is the bytes of the first argument (reshape and its kind)
  bool reduces = false;  // loops that reduce their input: large (split across threads) by what they read

  bool elementwise() const { return scalar.function != nullptr || element != nullptr; }
};

// The C++ expression of an elementwise op's value at one element: `call` on the elements `v`
// of C type `t` (its first argument's).
std::string ElementExpression(const Lowering& lowering, const ir::CallNode& call, const std::vector<std::string>& v,
                              const std::string& t);

// Null when the host code generator has no lowering for the op.
const Lowering* FindLowering(const ir::OpDef& op);

// Kernel arguments, as planners write them.
inline KernelArg Buffer(std::string name, BufferId buffer) { return {std::move(name), buffer}; }
inline KernelArg Int(std::string name, int64_t value) { return {std::move(name), value}; }
inline KernelArg Float(std::string name, float value) { return {std::move(name), value}; }
inline KernelArg Flag(std::string name, bool value) { return {std::move(name), value}; }
// Whether every type is float32 (the kernels' one dtype); RequireFloat32 throws Error naming the
// op when an argument is not.
bool AllFloat32(const std::vector<ir::TensorType>& types);
void RequireFloat32(const KernelOperands& operands);

// The kernel planners and epilogue rules of each op family (conv_lowering.cc, kernel_calls.cc).
// A kernel's epilogue: the steps of `operands.epilogue`, and how many ops of `chain` from the
// first the kernel computing `anchor` can apply; a per-channel operand lies along axis 1 of a
// convolution's output, or along the last axis (`channels_last`: a dense layer's features).
std::vector<EpilogueOp> EpilogueOf(const KernelOperands& operands, bool channels_last);
size_t EpilogueChainLength(const ir::CallNode& anchor, const std::vector<FusedOp>& chain, bool channels_last);
KernelCall PlanConv2D(const KernelOperands& operands);
size_t Conv2DEpilogueLength(const ir::CallNode& anchor, const std::vector<ir::TensorType>& anchor_inputs,
                            const std::vector<FusedOp>& chain);
KernelCall PlanConv2DWinograd(const KernelOperands& operands);
KernelCall PlanConv2DPointwiseDepthwise(const KernelOperands& operands);
KernelCall PlanConvTranspose(const KernelOperands& operands);
size_t ConvTransposeEpilogueLength(const ir::CallNode& anchor, const std::vector<ir::TensorType>& anchor_inputs,
                                   const std::vector<FusedOp>& chain);
KernelCall PlanDense(const KernelOperands& operands);
size_t DenseEpilogueLength(const ir::CallNode& anchor, const std::vector<ir::TensorType>& anchor_inputs,
                           const std::vector<FusedOp>& chain);
KernelCall PlanBatchMatmul(const KernelOperands& operands);
KernelCall PlanPool2D(const KernelOperands& operands);
KernelCall PlanSoftmax(const KernelOperands& operands);
KernelCall PlanTopk(const KernelOperands& operands);
KernelCall PlanUnique(const KernelOperands& operands);
KernelCall PlanNonMaxSuppression(const KernelOperands& operands);
KernelCall PlanGridSample(const KernelOperands& operands);
KernelCall PlanRoiAlign(const KernelOperands& operands);
KernelCall PlanDet(const KernelOperands& operands);
KernelCall PlanLayerNorm(const KernelOperands& operands);
KernelCall PlanAttention(const KernelOperands& operands);

}  // namespace kiln::backend
