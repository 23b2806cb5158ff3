// Elementwise and broadcasting ops as loops over the output: one flat loop when every input has
// the output's shape, otherwise nested loops with per-input strides (0 on broadcast dimensions).
#include "backend/codegen/emitter.h"
#include "runtime/error.h"

namespace kiln::backend {
namespace {

using ir::TensorType;

// Strides of `in` read at each output position: numpy right-alignment, or, when `axis` >= 0, a
// 1-D input laid along that output axis.
std::vector<int64_t> ReadStrides(const std::vector<int64_t>& in, const std::vector<int64_t>& out, int axis) {
  std::vector<int64_t> strides(out.size(), 0);
  if (axis >= 0) {
    strides[axis] = 1;
    return strides;
  }
  std::vector<int64_t> in_strides = Strides(in);
  size_t offset = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    strides[offset + d] = (in[d] == 1 && out[offset + d] != 1) ? 0 : in_strides[d];
  }
  return strides;
}

// The C++ expression computing one output element from the input element expressions `v`.
std::string ElementExpr(const ir::CallNode& call, const std::vector<std::string>& v, const std::string& t) {
  const std::string& op = call.op->name;
  const ir::Attrs& attrs = call.attrs;
  if (op == "add") return v[0] + " + " + v[1];
  if (op == "subtract") return v[0] + " - " + v[1];
  if (op == "multiply") return v[0] + " * " + v[1];
  if (op == "divide") return v[0] + " / " + v[1];
  if (op == "power") return "std::pow(" + v[0] + ", " + v[1] + ")";
  if (op == "maximum") return "std::max<" + t + ">(" + v[0] + ", " + v[1] + ")";
  if (op == "minimum") return "std::min<" + t + ">(" + v[0] + ", " + v[1] + ")";
  if (op == "equal") return v[0] + " == " + v[1];
  if (op == "less") return v[0] + " < " + v[1];
  if (op == "greater") return v[0] + " > " + v[1];
  if (op == "less_equal") return v[0] + " <= " + v[1];
  if (op == "greater_equal") return v[0] + " >= " + v[1];
  if (op == "where") return v[0] + " ? " + v[1] + " : " + v[2];
  if (op == "nn.relu") return v[0] + " > 0 ? " + v[0] + " : " + t + "(0)";
  if (op == "negative") return "-" + v[0];
  if (op == "abs") return "std::abs(" + v[0] + ")";
  if (op == "sigmoid") return t + "(1) / (" + t + "(1) + std::exp(-" + v[0] + "))";
  if (op == "rsqrt") return t + "(1) / std::sqrt(" + v[0] + ")";
  if (op == "round") return "std::nearbyint(" + v[0] + ")";
  for (const char* f : {"tanh", "exp", "log", "sqrt", "erf", "floor", "ceil"}) {
    if (op == f) return std::string("std::") + f + "(" + v[0] + ")";
  }
  if (op == "nn.leaky_relu") {
    return v[0] + " > 0 ? " + v[0] + " : " + v[0] + " * " + t + "(" + FloatLiteral(attrs.GetFloat("alpha")) + ")";
  }
  if (op == "clip") {
    return "std::min<" + t + ">(std::max<" + t + ">(" + v[0] + ", " + t + "(" + FloatLiteral(attrs.GetFloat("a_min")) +
           ")), " + t + "(" + FloatLiteral(attrs.GetFloat("a_max")) + "))";
  }
  if (op == "cast" || op == "broadcast_to") return v[0];
  if (op == "nn.bias_add") return v[0] + " + " + v[1];
  if (op == "nn.batch_norm") {  // (x - mean) / sqrt(var + eps) * gamma + beta
    return "(" + v[0] + " - " + v[3] + ") / std::sqrt(" + v[4] + " + " + t + "(" +
           FloatLiteral(attrs.GetFloat("epsilon")) + ")) * " + v[1] + " + " + v[2];
  }
  runtime::Fail("no elementwise expression for op ", op);
}

}  // namespace

void EmitElementwise(EmitContext& c) {
  const TensorType& out = c.output_types[0];
  const std::string& op = c.call.op->name;
  int ndim = out.ndim();
  // Which inputs lie along one axis instead of broadcasting from the right.
  int param_axis = -1;
  size_t first_param = c.inputs.size();
  if (op == "nn.bias_add" || op == "nn.batch_norm") {
    param_axis = static_cast<int>(c.call.attrs.GetInt("axis"));
    if (param_axis < 0) param_axis += ndim;
    first_param = 1;
  }
  std::vector<std::vector<int64_t>> strides;
  bool flat = true;
  std::vector<int64_t> out_strides = Strides(out.shape);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    strides.push_back(ReadStrides(c.input_types[i].shape, out.shape, i >= first_param ? param_axis : -1));
    flat = flat && strides.back() == out_strides;
  }
  std::string t = CType(c.input_types[0].dtype);
  std::string to = CType(out.dtype);
  bool to_bool = out.dtype.code == kDLUInt && out.dtype.bits == 1;
  auto store = [&](const std::vector<std::string>& values, const std::string& out_index) {
    std::string expr = ElementExpr(c.call, values, t);
    if (to_bool && op == "cast") expr = "(" + expr + ") != 0";
    c.code.Line(c.outputs[0] + "[" + out_index + "] = static_cast<" + to + ">(" + expr + ");");
  };
  if (flat || ndim == 0) {
    c.code.Open("for (int64_t i = 0; i < " + std::to_string(out.NumElements()) + "LL; ++i)");
    std::vector<std::string> values;
    for (const std::string& in : c.inputs) values.push_back(in + "[i]");
    store(values, "i");
    c.code.Close();
    return;
  }
  std::string counter = c.code.Fresh("o");
  c.code.Line("int64_t " + counter + " = 0;");
  for (int d = 0; d < ndim; ++d) {
    std::string i = "i" + std::to_string(d);
    c.code.Open("for (int64_t " + i + " = 0; " + i + " < " + std::to_string(out.shape[d]) + "LL; ++" + i + ")");
  }
  std::vector<std::string> values;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    std::string index;
    for (int d = 0; d < ndim; ++d) {
      if (strides[k][d] == 0) continue;
      index += (index.empty() ? "" : " + ") + std::string("i") + std::to_string(d) + " * " + std::to_string(strides[k][d]) + "LL";
    }
    values.push_back(c.inputs[k] + "[" + (index.empty() ? "0" : index) + "]");
  }
  store(values, counter + "++");
  for (int d = 0; d < ndim; ++d) c.code.Close();
}

}  // namespace kiln::backend
