// Ops whose result extents depend on the data, as loops: nonzero and compress. Each writes its
// result compactly (as a tensor of the extent it counted), zeros after it, and the count
// (RaggedAxesFn in ir/op.h).
#include "backend/codegen/emitter.h"

namespace kiln::backend {

// nonzero: the coordinates of each non-zero element (NaN is non-zero), one row per dimension.
void EmitNonZero(EmitContext& c) {
  const auto& shape = c.input_types[0].shape;
  int64_t elements = c.input_types[0].NumElements(), rank = static_cast<int64_t>(shape.size());
  const std::string &in = c.inputs[0], &out = c.outputs[0];
  std::string n = c.code.Fresh("n"), j = c.code.Fresh("j");
  c.code.Line("int64_t " + n + " = 0;");
  c.code.Line("for (int64_t i = 0; i < " + IntLiteral(elements) + "; ++i) " + n + " += " + in + "[i] != 0;");
  c.code.Line("int64_t " + j + " = 0;");
  c.code.Open("for (int64_t i = 0; i < " + IntLiteral(elements) + "; ++i)");
  c.code.Line("if (!(" + in + "[i] != 0)) continue;");
  c.code.Line("int64_t rest = i;");
  for (int64_t d = rank - 1; d >= 0; --d) {
    c.code.Line(out + "[" + IntLiteral(d) + " * " + n + " + " + j + "] = rest % " + IntLiteral(shape[d]) + ";");
    if (d > 0) c.code.Line("rest /= " + IntLiteral(shape[d]) + ";");
  }
  c.code.Line("++" + j + ";");
  c.code.Close();
  c.code.Line("for (int64_t i = " + IntLiteral(rank) + " * " + n + "; i < " + IntLiteral(rank * elements) +
              "; ++i) " + out + "[i] = 0;");
  c.code.Line(c.outputs[1] + "[0] = " + n + ";");
}

// compress: the slices along the axis whose condition is true, in order.
void EmitCompress(EmitContext& c) {
  const auto& shape = c.input_types[0].shape;
  AxisView view = ViewAroundAxis(c.call, shape);
  int64_t length = c.input_types[1].shape[0];
  const std::string &in = c.inputs[0], &condition = c.inputs[1], &out = c.outputs[0];
  std::string n = c.code.Fresh("n"), j = c.code.Fresh("j");
  c.code.Line("int64_t " + n + " = 0;");
  c.code.Line("for (int64_t k = 0; k < " + IntLiteral(length) + "; ++k) " + n + " += " + condition + "[k] != 0;");
  c.code.Line("int64_t " + j + " = 0;");
  c.code.Open("for (int64_t k = 0; k < " + IntLiteral(length) + "; ++k)");
  c.code.Line("if (" + condition + "[k] == 0) continue;");
  c.code.Open("for (int64_t o = 0; o < " + IntLiteral(view.outer) + "; ++o)");
  c.code.Line("for (int64_t i = 0; i < " + IntLiteral(view.inner) + "; ++i) " + out + "[(o * " + n + " + " + j +
              ") * " + IntLiteral(view.inner) + " + i] = " + in + "[(o * " + IntLiteral(shape[view.axis]) +
              " + k) * " + IntLiteral(view.inner) + " + i];");
  c.code.Close();
  c.code.Line("++" + j + ";");
  c.code.Close();
  c.code.Line("for (int64_t i = " + IntLiteral(view.outer * view.inner) + " * " + n + "; i < " +
              IntLiteral(view.outer * length * view.inner) + "; ++i) " + out + "[i] = 0;");
  c.code.Line(c.outputs[1] + "[0] = " + n + ";");
}

}  // namespace kiln::backend
