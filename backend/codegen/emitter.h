// How an op becomes C++ in a generated operator function: each op has a lowering (listed in
// emitters.cc, one entry per op) whose emitter writes the code computing its outputs from its
// inputs. Emitters work on dense row-major buffers given as pointer expressions.
#pragma once

#include <string>
#include <vector>

#include "ir/expr.h"

namespace kiln::backend {

// Collects generated code with indentation.
class CodeWriter {
 public:
  void Line(const std::string& text) { text_ += std::string(indent_ * 2, ' ') + text + "\n"; }
  void Open(const std::string& text) { Line(text + " {"); ++indent_; }
  void Close(const std::string& suffix = "") { --indent_; Line("}" + suffix); }
  const std::string& text() const { return text_; }
  // A name not used before in this writer ("t3").
  std::string Fresh(const std::string& prefix) { return prefix + std::to_string(counter_++); }

 private:
  std::string text_;
  int indent_ = 0;
  int counter_ = 0;
};

// An op that the kernel of the op before it applies to that op's result while it is in
// registers (a fused epilogue): `call` reads the result once and, for a binary op, one other
// operand; or, for `swish`, `call` is the multiply of result * sigmoid(result).
struct FusedOp {
  const ir::CallNode* call;
  std::string operand;  // pointer expression of the other operand; empty for a unary op
  ir::TensorType operand_type;
  bool operand_first = false;  // the other operand is the first argument (x - result)
  bool swish = false;
};

struct EmitContext {
  CodeWriter& code;
  const ir::CallNode& call;
  std::vector<std::string> inputs;  // pointer expressions, typed (const float* ...)
  std::vector<ir::TensorType> input_types;
  std::vector<std::string> outputs;  // one per output tensor
  std::vector<ir::TensorType> output_types;
  std::string function;  // the generated function's name, for error messages
  std::vector<FusedOp> epilogue;  // applied to the result before it is stored (see FusedEpilogueLength)
};

using OpEmitter = void (*)(EmitContext& context);

// The C++ expression of one output element of an elementwise op from the expressions `v` of its
// input elements, computed in C++ type `t`.
using ElementExpr = std::string (*)(const ir::CallNode& call, const std::vector<std::string>& v, const std::string& t);

// How the host code generator lowers one op: the one entry per op in emitters.cc, keyed by the op.
struct Lowering {
  OpEmitter emit = nullptr;  // writes the op as a step of its own
  // Elementwise ops (emit is EmitElementwise): one element, so runs of them share one loop.
  ElementExpr element = nullptr;
  // Elementwise ops whose arguments after the first are 1-D and lie along the `axis` attribute.
  bool params_along_axis = false;
  // The step the blocked convolution kernel applies when the op follows it in its epilogue
  // (kernels::EpilogueStep::Op, "kAdd"); null when it cannot.
  const char* epilogue_step = nullptr;
};

// Null when the host code generator has no lowering for the op.
const Lowering* FindLowering(const ir::OpDef& op);

// The C++ type of a dtype ("float", "int64_t", "uint8_t" for bool); throws Error for dtypes the
// generator does not handle.
std::string CType(DLDataType dtype);
// Row-major strides of a shape.
std::vector<int64_t> Strides(const std::vector<int64_t>& shape);
// "{1, 2, 3}"
std::string IntList(const std::vector<int64_t>& values);
// A float literal that reads back bit-exactly ("0.100000001f", "-INFINITY").
std::string FloatLiteral(double value);

// How many ops at the start of `chain` the emitter of `anchor` (with inputs of types
// `anchor_inputs`) applies in its kernel as a fused epilogue; 0 when it applies none. `chain`
// holds the ops that read the anchor's result one after another, each the only reader of the
// one before, whose other operands are parameters of the function.
size_t FusedEpilogueLength(const ir::CallNode& anchor, const std::vector<ir::TensorType>& anchor_inputs,
                           const std::vector<FusedOp>& chain);

// Whether a nn.conv2d has a blocked layout (NCHW[x]c data or output, packed weights).
bool IsBlockedConv(const ir::CallNode& call);

// One op of a group of elementwise ops of one output shape that share a loop: each reads
// buffers (broadcast to the shape) or the values of earlier members at the same element.
struct ElementwiseMember {
  const ir::CallNode* call;
  std::vector<int> member_inputs;  // per argument: the index of the member computing it, or -1
  std::vector<std::string> inputs;  // per argument read from a buffer: its pointer expression
  std::vector<ir::TensorType> input_types;
  std::string output;  // pointer the value is stored to; empty when only members read it
  ir::TensorType output_type;
};
// One loop over the members' output shape computing every member per element, in order.
void EmitElementwiseGroup(CodeWriter& code, const std::vector<ElementwiseMember>& members);

// The emitters of each op family.
void EmitElementwise(EmitContext& context);
void EmitReduce(EmitContext& context);
void EmitConv2D(EmitContext& context);
void EmitDense(EmitContext& context);
void EmitBatchMatmul(EmitContext& context);
void EmitPool2D(EmitContext& context);
void EmitGlobalAvgPool2D(EmitContext& context);
void EmitSoftmax(EmitContext& context);
void EmitLayerNorm(EmitContext& context);
void EmitCopy(EmitContext& context);
void EmitTranspose(EmitContext& context);
void EmitConcatenate(EmitContext& context);
void EmitStridedSlice(EmitContext& context);
void EmitTake(EmitContext& context);
void EmitSplit(EmitContext& context);
void EmitPad(EmitContext& context);
void EmitConv2DNCHWc(EmitContext& context);
void EmitLayoutTransform(EmitContext& context);

}  // namespace kiln::backend
