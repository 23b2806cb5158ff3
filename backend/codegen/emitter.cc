// Helpers the plan printer and the emitters share.
#include "backend/codegen/emitter.h"

#include <cmath>
#include <cstdio>

#include "runtime/dtype.h"
#include "runtime/error.h"

namespace kiln::backend {

std::string BufferName(const PlanBuffer& buffer) {
  const char* prefix = buffer.kind == PlanBuffer::kParam ? "p" : buffer.kind == PlanBuffer::kOutput ? "out" : "t";
  return prefix + std::to_string(buffer.index);
}

std::string CType(DLDataType dtype) {
  if (dtype.lanes == 1) {
    if (dtype.code == kDLFloat && dtype.bits == 32) return "float";
    if (dtype.code == kDLFloat && dtype.bits == 64) return "double";
    if (dtype.code == kDLFloat && dtype.bits == 16) return "_Float16";  // GCC and Clang on x86-64
    if (dtype.code == kDLInt && dtype.bits == 64) return "int64_t";
    if (dtype.code == kDLInt && dtype.bits == 32) return "int32_t";
    if (dtype.code == kDLInt && dtype.bits == 16) return "int16_t";
    if (dtype.code == kDLInt && dtype.bits == 8) return "int8_t";
    if (dtype.code == kDLUInt && dtype.bits == 8) return "uint8_t";
    if (dtype.code == kDLUInt && dtype.bits == 16) return "uint16_t";
    if (dtype.code == kDLUInt && dtype.bits == 32) return "uint32_t";
    if (dtype.code == kDLUInt && dtype.bits == 64) return "uint64_t";
    if (dtype.code == kDLUInt && dtype.bits == 1) return "uint8_t";
    // Stored as their bits, computed in float (kernels/elementwise/narrow_floats.h).
    if (dtype.code == kDLBfloat && dtype.bits == 16) return "kiln::kernels::BFloat16";
    if (dtype.code == runtime::kDLFloat8E4M3FN && dtype.bits == 8) return "kiln::kernels::Float8E4M3FN";
    if (dtype.code == runtime::kDLFloat8E4M3FNUZ && dtype.bits == 8) return "kiln::kernels::Float8E4M3FNUZ";
    if (dtype.code == runtime::kDLFloat8E5M2 && dtype.bits == 8) return "kiln::kernels::Float8E5M2";
    if (dtype.code == runtime::kDLFloat8E5M2FNUZ && dtype.bits == 8) return "kiln::kernels::Float8E5M2FNUZ";
  }
  runtime::Fail("dtype ", runtime::DTypeToString(dtype), " is not supported by the host code generator");
}

std::string IntLiteral(int64_t value) { return std::to_string(value) + "LL"; }

std::string IntList(const std::vector<int64_t>& values) {
  std::string text = "{";
  for (size_t i = 0; i < values.size(); ++i) text += (i > 0 ? ", " : "") + IntLiteral(values[i]);
  return text + "}";
}

std::string CeilDivText(const CodeWriter& code, int64_t value, int64_t divisor) {
  if (!code.extents_vary()) return IntLiteral((value + divisor - 1) / divisor);
  return "((" + IntLiteral(value) + " + " + IntLiteral(divisor - 1) + ") / " + IntLiteral(divisor) + ")";
}

std::string FloatLiteral(double value) {
  if (std::isinf(value)) return value > 0 ? "INFINITY" : "-INFINITY";
  if (std::isnan(value)) return "NAN";
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  std::string text = buffer;
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string Float32Literal(float value) {
  std::string literal = FloatLiteral(value);
  return std::isfinite(value) ? literal + "f" : literal;
}

std::string ParamsLiteral(const KernelParams& params) {
  std::string fields;
  for (const KernelParams::Value& field : params.fields) {
    if (!fields.empty()) fields += ", ";
    if (const auto* i = std::get_if<int64_t>(&field)) fields += IntLiteral(*i);
    if (const auto* f = std::get_if<float>(&field)) fields += Float32Literal(*f);
    if (const auto* b = std::get_if<bool>(&field)) fields += *b ? "true" : "false";
  }
  return "kiln::kernels::" + params.type + "{" + fields + "}";
}

AxisView ViewAroundAxis(const ir::CallNode& call, const std::vector<int64_t>& shape) {
  AxisView view;
  view.axis = static_cast<int>(call.attrs.GetInt("axis"));
  if (view.axis < 0) view.axis += static_cast<int>(shape.size());
  for (int d = 0; d < view.axis; ++d) view.outer *= shape[d];
  for (size_t d = view.axis + 1; d < shape.size(); ++d) view.inner *= shape[d];
  return view;
}

int OpenLoops(CodeWriter& code, const std::vector<int64_t>& shape) {
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string i = "i" + std::to_string(d);
    code.Open("for (int64_t " + i + " = 0; " + i + " < " + IntLiteral(shape[d]) + "; ++" + i + ")");
  }
  return static_cast<int>(shape.size());
}

void CloseLoops(CodeWriter& code, int count) {
  for (int k = 0; k < count; ++k) code.Close();
}

void AddParallelBuffer(std::vector<ParallelBuffer>* buffers, const std::string& name, const ir::TensorType& type,
                       bool writable) {
  for (ParallelBuffer& b : *buffers) {
    if (b.name != name) continue;
    if (writable) b.type = CType(type.dtype);
    return;
  }
  buffers->push_back({name, (writable ? "" : "const ") + CType(type.dtype)});
}

void OpenParallelFor(CodeWriter& code, const std::vector<ParallelBuffer>& buffers, const std::string& tasks,
                     int64_t elements) {
  if (code.parallel_elements() > 0) {
    code.Line("const bool split_ = " + IntLiteral(elements) + " >= " + IntLiteral(code.parallel_elements()) + ";");
  }
  std::string list;
  for (const ParallelBuffer& b : buffers) list += (list.empty() ? "" : ", ") + std::string("(void*)") + b.name;
  if (code.num_dims() > 0) list += std::string(list.empty() ? "" : ", ") + "(void*)kiln_dims";
  code.Line("void* context_[] = {" + list + "};");
  code.Open("if (kiln::kernels::ParallelFor(" + tasks + ", [](int64_t begin_, int64_t end_, void* pointers_)");
  code.Line("void** context_ = static_cast<void**>(pointers_);");
  for (size_t i = 0; i < buffers.size(); ++i) {
    code.Line(buffers[i].type + "* " + buffers[i].name + " = static_cast<" + buffers[i].type + "*>(context_[" +
              std::to_string(i) + "]);");
  }
  if (code.num_dims() > 0) {
    code.Line("const int64_t* kiln_dims = static_cast<const int64_t*>(context_[" + std::to_string(buffers.size()) +
              "]);");
    for (int d = 0; d < code.num_dims(); ++d) {
      std::string name = "kiln_d" + std::to_string(d);
      code.Line("const int64_t " + name + " = kiln_dims[" + std::to_string(d) + "];");
      code.Line("(void)" + name + ";");
    }
  }
}

void OpenParallelFor(CodeWriter& code, const std::vector<ParallelBuffer>& buffers, int64_t tasks, int64_t elements) {
  OpenParallelFor(code, buffers, IntLiteral(tasks), elements);
}

void CloseParallelFor(CodeWriter& code) {
  code.Close(code.parallel_elements() > 0 ? ", context_, split_) != 0) return -1;" : ", context_) != 0) return -1;");
}

// A task of a split loop nest covers at least this many elements (its inner dimensions) where the
// nest leaves at least kMinTasks tasks so: [1, 2048, 7, 7] splits into 2048 planes of 49, not one
// task of everything.
constexpr int64_t kMinInnerElements = 64;
constexpr int64_t kMinTasks = 16;

TaskSplit SplitIntoTasks(const CodeWriter& code, const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  TaskSplit split;
  split.first_inner = static_cast<int>(shape.size()) - 1;
  split.inner = shape.back();
  while (!code.extents_vary() && split.first_inner > 1 && split.inner < kMinInnerElements) {
    int64_t wider = split.inner * shape[split.first_inner - 1];
    if (wider == 0 || count / wider < kMinTasks) break;
    split.inner = wider;
    --split.first_inner;
  }
  split.tasks = split.inner == 0 ? 0 : count / split.inner;
  return split;
}

int OpenTaskLoops(CodeWriter& code, const std::vector<int64_t>& shape, const TaskSplit& split,
                  const std::string& counter, const std::function<void(int)>& at_index) {
  code.Open("for (int64_t task_ = begin_; task_ < end_; ++task_)");
  if (!counter.empty()) code.Line("int64_t " + counter + " = task_ * " + IntLiteral(split.inner) + ";");
  code.Line("int64_t rest_ = task_;");
  for (int d = split.first_inner - 1; d >= 0; --d) {
    code.Line("const int64_t i" + std::to_string(d) + " = rest_ % " + IntLiteral(shape[d]) + ";");
    if (d > 0) code.Line("rest_ /= " + IntLiteral(shape[d]) + ";");
  }
  if (at_index) {
    for (int d = 0; d < split.first_inner; ++d) at_index(d);
  }
  const int ndim = static_cast<int>(shape.size());
  for (int d = split.first_inner; d < ndim; ++d) {
    std::string i = "i" + std::to_string(d);
    code.Open("for (int64_t " + i + " = 0; " + i + " < " + IntLiteral(shape[d]) + "; ++" + i + ")");
    if (at_index) at_index(d);
  }
  return ndim - split.first_inner + 1;
}

OutputLoops OpenOutputLoops(EmitContext& c, const std::string& counter) {
  return OpenOutputLoops(c, counter, static_cast<int>(c.output_types[0].shape.size()));
}

OutputLoops OpenOutputLoops(EmitContext& c, const std::string& counter, int loop_dims) {
  const std::vector<int64_t> shape(c.output_types[0].shape.begin(), c.output_types[0].shape.begin() + loop_dims);
  if (!c.parallel || shape.size() < 2 || c.output_types[0].NumElements() == 0) {
    c.code.Line("int64_t " + counter + " = 0;");
    return {OpenLoops(c.code, shape), false};
  }
  std::vector<ParallelBuffer> buffers;
  for (size_t k = 0; k < c.inputs.size(); ++k) AddParallelBuffer(&buffers, c.inputs[k], c.input_types[k], false);
  for (size_t k = 0; k < c.outputs.size(); ++k) AddParallelBuffer(&buffers, c.outputs[k], c.output_types[k], true);
  c.code.Open("");  // a scope of its own: an operator function may hold several such loops
  TaskSplit split = SplitIntoTasks(c.code, shape);
  OpenParallelFor(c.code, buffers, split.tasks, c.output_types[0].NumElements());
  return {OpenTaskLoops(c.code, shape, split, counter), true};
}

void CloseOutputLoops(EmitContext& c, const OutputLoops& loops) {
  CloseLoops(c.code, loops.open);
  if (!loops.parallel) return;
  CloseParallelFor(c.code);
  c.code.Close();
}

void ReadIndex(EmitContext& c, const std::string& name, const std::string& value, int64_t extent) {
  c.code.Line("int64_t " + name + " = static_cast<int64_t>(" + value + ");");
  c.code.Line("if (" + name + " < 0) " + name + " += " + IntLiteral(extent) + ";");
  c.code.Line("if (" + name + " < 0 || " + name + " >= " + IntLiteral(extent) + ") return kiln::kernels::Fail(\"" +
              c.function + ": " + c.call.op->name + ": an index is out of range\");");
}

}  // namespace kiln::backend
