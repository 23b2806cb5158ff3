// How an op becomes C++ in a generated operator function: each op has an emitter (listed in
// emitters.cc) that writes the code computing its outputs from its inputs. Emitters work on
// dense row-major buffers given as pointer expressions.
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

struct EmitContext {
  CodeWriter& code;
  const ir::CallNode& call;
  std::vector<std::string> inputs;  // pointer expressions, typed (const float* ...)
  std::vector<ir::TensorType> input_types;
  std::vector<std::string> outputs;  // one per output tensor
  std::vector<ir::TensorType> output_types;
  std::string function;  // the generated function's name, for error messages
};

using OpEmitter = void (*)(EmitContext& context);

// Null when the host code generator has no emitter for the op.
OpEmitter FindEmitter(const std::string& op_name);

// The C++ type of a dtype ("float", "int64_t", "uint8_t" for bool); throws Error for dtypes the
// generator does not handle.
std::string CType(DLDataType dtype);
// Row-major strides of a shape.
std::vector<int64_t> Strides(const std::vector<int64_t>& shape);
// "{1, 2, 3}"
std::string IntList(const std::vector<int64_t>& values);
// A float literal that reads back bit-exactly ("0.100000001f", "-INFINITY").
std::string FloatLiteral(double value);

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

}  // namespace kiln::backend
