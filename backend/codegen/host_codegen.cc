// Printing a plan as the C++ of one operator function.
#include "backend/codegen/host_codegen.h"

#include <cmath>
#include <optional>
#include <variant>

#include "backend/codegen/lowering.h"
#include "runtime/error.h"

namespace kiln::backend {
namespace {

std::string SpecFor(const ir::TensorType& t, const std::string& shape_name) {
  return "{" + std::to_string(t.dtype.code) + ", " + std::to_string(t.dtype.bits) + ", " + std::to_string(t.ndim()) +
         ", " + shape_name + "}";
}

// The field of `plan`'s one kernel call to multiply by the samples when that call can run a whole
// batch (its parameter struct counts samples, kernel_params.h: one call, more parallel work and one
// launch, instead of a call per sample): the plan is that call alone, without workspace, and each
// of its tensors either holds the samples (`batched`, per parameter then output) or is read whole
// by every sample's computation (weights, per-channel epilogue operands: not a batch-free operand
// of the output's shape, nor a per-channel or single value that is each sample's own, which the
// kernel would read as the first sample's for all).
std::optional<std::string> WholeBatchField(const Plan& plan, const std::vector<bool>& batched) {
  if (batched.empty() || plan.steps.size() != 1 || plan.NumOf(PlanBuffer::kWorkspace) != 0) return std::nullopt;
  const auto* call = std::get_if<KernelCall>(&plan.steps[0]);
  if (call == nullptr || !call->params || call->params->sample_field.empty()) return std::nullopt;
  for (const EpilogueOp& step : call->epilogue) {
    if (!step.data) continue;
    bool tensor = step.operand == kernels::EpilogueStep::kTensor;
    if (tensor != batched.at(*step.data)) return std::nullopt;
  }
  // The data, the kernel's first tensor, holds the samples (the weights after it do not).
  for (const KernelArg& arg : call->args) {
    if (const auto* b = std::get_if<BufferId>(&arg.value)) {
      return batched.at(*b) ? std::optional(call->params->sample_field) : std::nullopt;
    }
  }
  return std::nullopt;
}

// Prints the steps of one plan.
class StepPrinter {
 public:
  StepPrinter(CodeWriter& code, const Plan& plan, std::string sample_field = "")
      : code_(code), plan_(plan), sample_field_(std::move(sample_field)) {}

  void operator()(const KernelCall& call) {
    std::string args;
    if (call.params && !sample_field_.empty()) {
      code_.Line("auto params = " + ParamsLiteral(*call.params) + ";");
      code_.Line("params." + sample_field_ + " *= samples;");
      args = "params";
    } else if (call.params) {
      code_.Line("const auto params = " + ParamsLiteral(*call.params) + ";");
      args = "params";
    }
    for (const KernelArg& arg : call.args) args += (args.empty() ? "" : ", ") + Value(arg);
    if (call.takes_epilogue) {
      std::string steps;
      for (const EpilogueOp& step : call.epilogue) {
        steps += std::string(steps.empty() ? "" : ", ") + "{static_cast<kiln::kernels::EpilogueStep::Op>(" +
                 std::to_string(step.op) + "), static_cast<kiln::kernels::EpilogueStep::Operand>(" +
                 std::to_string(step.operand) + "), " + (step.data ? Name(*step.data) : "nullptr") + ", " +
                 Float32Literal(step.lo) + ", " + Float32Literal(step.hi) + "}";
      }
      if (!call.epilogue.empty()) code_.Line("const kiln::kernels::EpilogueStep epilogue[] = {" + steps + "};");
      args += call.epilogue.empty() ? ", nullptr, 0" : ", epilogue, " + std::to_string(call.epilogue.size());
    }
    if (!call.inner_kernel.empty()) args += ", &kiln::kernels::" + call.inner_kernel;
    std::string invocation = "kiln::kernels::" + call.kernel + "(" + args + ")";
    code_.Line(call.returns_status ? "if (" + invocation + " != 0) return -1;" : invocation + ";");
  }

  void operator()(const ElementwiseLoop& loop) { EmitElementwiseLoop(code_, loop, plan_); }

  void operator()(const GatherLoop& loop) { EmitGatherLoop(code_, loop, plan_); }

  void operator()(const LoopOp& op) {
    EmitContext context{code_, *op.call, {}, {}, {}, {}, plan_.symbol, op.parallel};
    for (BufferId b : op.inputs) {
      context.inputs.push_back(Name(b));
      context.input_types.push_back(plan_.buffers[b].type);
    }
    for (BufferId b : op.outputs) {
      context.outputs.push_back(Name(b));
      context.output_types.push_back(plan_.buffers[b].type);
    }
    FindLowering(*op.call->op)->emit(context);
  }

  void operator()(const Copy& copy) {
    std::string to = Name(copy.to), from = Name(copy.from);
    code_.Line("if (static_cast<const void*>(" + to + ") != static_cast<const void*>(" + from + ")) std::memcpy(" + to +
               ", " + from + ", " + std::to_string(plan_.buffers[copy.to].type.NumBytes()) + "ULL);");
  }

 private:
  std::string Name(BufferId b) const { return BufferName(plan_.buffers[b]); }

  std::string Value(const KernelArg& arg) const {
    if (const auto* b = std::get_if<BufferId>(&arg.value)) return Name(*b);
    if (const auto* i = std::get_if<int64_t>(&arg.value)) return IntLiteral(*i);
    if (const auto* f = std::get_if<float>(&arg.value)) return Float32Literal(*f);
    return std::get<bool>(arg.value) ? "true" : "false";
  }

  CodeWriter& code_;
  const Plan& plan_;
  std::string sample_field_;  // non-empty: the kernel call runs every sample, this field scaled
};

}  // namespace

std::string OperatorSourcePrelude() {
  return "// Generated by kiln. Operators of the packed C ABI over the kernel library.\n"
         "#include <algorithm>\n#include <cmath>\n#include <cstdint>\n#include <cstring>\n#include <limits>\n\n"
         "#include \"kernels/backend_api.h\"\n#include \"kernels/kernels.h\"\n#include \"kernels/elementwise/scalar_ops.h\"\n"
         "#include \"kernels/elementwise/narrow_floats.h\"\n\n";
}

std::string GenerateOperatorSource(const Plan& plan, const std::vector<bool>& batched, int num_dims) {
  CodeWriter code;
  code.set_num_dims(num_dims);
  code.set_extents_vary(plan.extents_vary);
  code.set_parallel_elements(plan.parallel_elements);
  code.Open("extern \"C\" TVM_DLL int " + plan.symbol +
            "(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value, int* out_ret_tcode, "
            "void* resource_handle)");
  code.Line("(void)out_ret_value; (void)out_ret_tcode; (void)resource_handle;");
  if (num_dims > 0) {  // the shape dimensions, after the tensors
    int num_tensors = plan.NumOf(PlanBuffer::kParam) + plan.NumOf(PlanBuffer::kOutput);
    code.Line("int64_t kiln_dims[" + std::to_string(num_dims) + "];");
    code.Line("if (kiln::kernels::DimArgs(\"" + plan.symbol + "\", args, type_codes, num_args, " +
              std::to_string(num_tensors) + ", kiln_dims, " + std::to_string(num_dims) + ") != 0) return -1;");
    for (int d = 0; d < num_dims; ++d) {
      std::string name = "kiln_d" + std::to_string(d);
      code.Line("const int64_t " + name + " = kiln_dims[" + std::to_string(d) + "];");
      code.Line("(void)" + name + ";");
    }
  }

  // Argument specs and pointers: parameters, then outputs. With shape dimensions the specs' extents
  // are computed at each call (the literals of one sample become expressions of kiln_d<i>,
  // backend/generalize_dims.h), so they are not static.
  std::string constant = num_dims > 0 ? "const " : "static const ";
  std::string specs;
  int num_args = 0;
  for (const PlanBuffer& b : plan.buffers) {
    if (b.kind == PlanBuffer::kWorkspace) continue;
    std::string shape = "shape" + std::to_string(num_args);
    code.Line(constant + "int64_t " + shape +
              "[] = " + IntList(b.type.shape.empty() ? std::vector<int64_t>{0} : b.type.shape) + ";");
    specs += (num_args > 0 ? ", " : "") + SpecFor(b.type, b.sized_at_run_time ? "nullptr" : shape);
    ++num_args;
  }
  code.Line(constant + "kiln::kernels::ArgSpec specs[] = {" + specs + "};");
  // Run sample by sample (frontend/batch_samples.h): batched arguments hold `samples` of their
  // spec along axis 0, and the steps see one at a time.
  std::optional<std::string> whole_batch = WholeBatchField(plan, batched);
  bool by_sample = !batched.empty() && !whole_batch;
  runtime::CheckInternal(batched.empty() || static_cast<int>(batched.size()) == num_args, "host codegen: ", plan.symbol,
                         " has ", num_args, " arguments but ", batched.size(), " batch flags");
  std::string arg_count = num_dims > 0 ? std::to_string(num_args) : "num_args";
  if (!batched.empty()) {
    std::string flags;
    for (bool b : batched) flags += std::string(flags.empty() ? "" : ", ") + (b ? "1" : "0");
    code.Line("static const unsigned char batched[] = {" + flags + "};");
    code.Line("int64_t samples = 0;");
    code.Line("if (kiln::kernels::CheckBatchedArgs(\"" + plan.symbol + "\", args, type_codes, " + arg_count +
              ", specs, batched, " +
              std::to_string(num_args) + ", &samples) != 0) return -1;");
  } else {
    code.Line("if (kiln::kernels::CheckArgs(\"" + plan.symbol + "\", args, type_codes, " + arg_count + ", specs, " +
              std::to_string(num_args) + ") != 0) return -1;");
  }
  int arg = 0;
  std::vector<std::string> per_sample;  // declarations of the batched arguments' pointers in the loop
  for (const PlanBuffer& b : plan.buffers) {
    std::string type = CType(b.type.dtype);
    if (b.kind == PlanBuffer::kParam) type = "const " + type;
    if (b.kind != PlanBuffer::kWorkspace) {
      bool sampled = by_sample && batched[arg];
      std::string name = BufferName(b) + (sampled ? "_samples" : "");
      code.Line(type + "* " + name + " = static_cast<" + type + "*>(kiln::kernels::ArgData(args, " +
                std::to_string(arg) + "));");
      if (b.sized_at_run_time) {  // what the data op checks its shape against (SizedCapacity)
        code.Line("const int64_t " + name + "_capacity = kiln::kernels::ArgCapacity(args, " + std::to_string(arg) +
                  ");");
      }
      ++arg;
      if (sampled) {
        per_sample.push_back(type + "* " + BufferName(b) + " = " + name + " + sample * " +
                             std::to_string(b.type.NumElements()) + "LL;");
      }
    } else if (b.view_of >= 0) {
      continue;  // declared with the steps (below), after what it views
    } else {  // alive until the function returns
      std::string workspace = "w" + std::to_string(b.index);
      code.Line("kiln::kernels::Workspace " + workspace + "(" + std::to_string(b.type.NumBytes()) + "ULL);");
      code.Line("if (!" + workspace + ".ok()) return -1;");
      code.Line(type + "* " + BufferName(b) + " = " + workspace + ".as<" + type + ">();");
    }
  }
  StepPrinter printer(code, plan, whole_batch.value_or(""));
  if (by_sample) {
    code.Open("for (int64_t sample = 0; sample < samples; ++sample)");
    for (const std::string& line : per_sample) code.Line(line);
  }
  for (const PlanBuffer& b : plan.buffers) {  // views, each after its base (an earlier buffer)
    if (b.view_of < 0) continue;
    const PlanBuffer* root = &plan.buffers.at(b.view_of);
    while (root->view_of >= 0) root = &plan.buffers.at(root->view_of);
    std::string type = (root->kind == PlanBuffer::kParam ? "const " : "") + CType(b.type.dtype);
    std::string offset = b.view_offset != 0 ? " + " + std::to_string(b.view_offset) + "LL" : "";
    code.Line(type + "* " + BufferName(b) + " = reinterpret_cast<" + type + "*>(" +
              BufferName(plan.buffers.at(b.view_of)) + ")" + offset + ";");
  }
  for (const PlanStep& step : plan.steps) {
    code.Open("");  // a scope per step keeps the steps' local names apart
    std::visit(printer, step);
    code.Close();
  }
  if (by_sample) code.Close();
  code.Line("return 0;");
  code.Close();
  return code.text();
}

}  // namespace kiln::backend
