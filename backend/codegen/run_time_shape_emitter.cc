// Ops whose shape-deciding input is given at run time (ir/ops/run_time_shaped.cc), as loops: the
// result's shape from kernels/shape/run_time_shapes.cc, checked there, into the op's shape output;
// the data compactly at that shape, then zeros up to the storage's end.
#include <algorithm>

#include "backend/codegen/emitter.h"

namespace kiln::backend {

std::string OpWhere(const EmitContext& c) { return "\"" + c.function + ": " + c.call.op->name + "\""; }

void DeclareStaticShape(EmitContext& c, const std::string& name, const ir::TensorType& type, int64_t rank) {
  std::vector<int64_t> shape(static_cast<size_t>(rank - type.ndim()), 1);
  shape.insert(shape.end(), type.shape.begin(), type.shape.end());
  c.code.Line("const int64_t " + name + "[] = " + (shape.empty() ? std::string("{0LL}") : IntList(shape)) + ";");
}

int64_t DeclareInputValues(EmitContext& c, size_t i, const std::string& name, const std::string& type) {
  int64_t count = c.input_types[i].NumElements();
  c.code.Line(type + " " + name + "[" + IntLiteral(std::max<int64_t>(count, 1)) + "] = {0};");
  c.code.Line("for (int64_t k = 0; k < " + IntLiteral(count) + "; ++k) " + name + "[k] = " + c.inputs[i] + "[k];");
  return count;
}

namespace {

// Declares `name`, an int64_t array of the input's static shape; returns its rank.
int64_t DeclareInputShape(EmitContext& c, const std::string& name) {
  DeclareStaticShape(c, name, c.input_types[0], c.input_types[0].ndim());
  return c.input_types[0].ndim();
}

int64_t DeclareValues(EmitContext& c, size_t i, const std::string& name) { return DeclareInputValues(c, i, name); }

std::string Where(const EmitContext& c) { return OpWhere(c); }

// A local array for the shape of output `field` (an int64 vector): the kernel writes it there, and
// CommitShape copies it to the output once every check has passed, so that a run that fails leaves
// the output's shape as the last good run gave it.
std::string LocalShape(EmitContext& c, size_t field) {
  std::string name = c.code.Fresh("shape");
  c.code.Line("int64_t " + name + "[" + IntLiteral(std::max<int64_t>(c.output_types[field].shape[0], 1)) + "] = {0};");
  return name;
}
void CommitShape(EmitContext& c, const std::string& local, size_t field) {
  c.code.Line("for (int64_t d = 0; d < " + IntLiteral(c.output_types[field].shape[0]) + "; ++d) " + c.outputs[field] +
              "[d] = " + local + "[d];");
}

// The elements of the shape output: `name`, the product of its extents.
void DeclareElements(EmitContext& c, const std::string& name) {
  c.code.Line("int64_t " + name + " = 1;");
  c.code.Line("for (int64_t d = 0; d < " + IntLiteral(c.output_types[1].shape[0]) + "; ++d) " + name + " *= " +
              c.outputs[1] + "[d];");
}

void ZeroTail(EmitContext& c, const std::string& elements) {
  c.code.Line("for (int64_t i = " + elements + "; i < " + IntLiteral(c.output_types[0].NumElements()) + "; ++i) " +
              c.outputs[0] + "[i] = 0;");
}

void CopyData(EmitContext& c) {
  c.code.Line("for (int64_t i = 0; i < " + IntLiteral(c.input_types[0].NumElements()) + "; ++i) " + c.outputs[0] +
              "[i] = " + c.inputs[0] + "[i];");
}

// dyn.reshape, dyn.squeeze, dyn.unsqueeze: the shape, and the data as it is.
void EmitNewShape(EmitContext& c, const std::string& kernel, const std::string& flag) {
  c.code.Open("");
  std::string in = c.code.Fresh("in_shape"), values = c.code.Fresh("values");
  int64_t rank = DeclareInputShape(c, in);
  int64_t count = DeclareValues(c, 1, values);
  std::string shape = LocalShape(c, 1);
  c.code.Line("if (kiln::kernels::" + kernel + "(" + in + ", " + IntLiteral(rank) + ", " + values + ", " +
              IntLiteral(count) + flag + ", " + shape + ", " + Where(c) + ") != 0) return -1;");
  CommitShape(c, shape, 1);
  CopyData(c);
  c.code.Close();
}

// The reduction's terms: what each input element `v` adds (or is compared with), and the result
// from the accumulated `a` (ONNX's ReduceL1, L2, SumSquare, LogSum and LogSumExp).
std::string Term(const std::string& reducer, const std::string& v, const std::string& shift) {
  if (reducer == "l1") return "(" + v + " < 0 ? -" + v + " : " + v + ")";
  if (reducer == "l2" || reducer == "sum_square") return v + " * " + v;
  if (reducer == "log_sum_exp") return "std::exp(static_cast<double>(" + v + ") - " + shift + ")";
  return v;
}
std::string Final(const std::string& reducer, const std::string& a, const std::string& shift) {
  if (reducer == "l2") return "std::sqrt(static_cast<double>(" + a + "))";
  if (reducer == "log_sum") return "std::log(static_cast<double>(" + a + "))";
  if (reducer == "log_sum_exp") return "std::log(static_cast<double>(" + a + ")) + " + shift;
  return a;
}

// Walks the input in row-major order with `o`, the index of each element's result (the reduced axes'
// strides are zero), running `body` per element.
void WalkReduced(EmitContext& c, const std::string& in, const std::string& strides, int64_t rank,
                 const std::string& o, const std::string& body) {
  std::string at = c.code.Fresh("at");
  c.code.Line("int64_t " + at + "[" + IntLiteral(std::max<int64_t>(rank, 1)) + "] = {0};");
  c.code.Line("int64_t " + o + " = 0;");
  c.code.Open("for (int64_t i = 0; i < " + IntLiteral(c.input_types[0].NumElements()) + "; ++i)");
  c.code.Line(body);
  c.code.Open("for (int64_t d = " + IntLiteral(rank - 1) + "; d >= 0; --d)");
  c.code.Open("if (++" + at + "[d] < " + in + "[d])");
  c.code.Line(o + " += " + strides + "[d];");
  c.code.Line("break;");
  c.code.Close();
  c.code.Line(o + " -= (" + in + "[d] - 1) * " + strides + "[d];");
  c.code.Line(at + "[d] = 0;");
  c.code.Close();
  c.code.Close();
}

}  // namespace

void EmitDynReshape(EmitContext& c) {
  EmitNewShape(c, "ReshapeAtRunTime", c.call.attrs.GetInt("allowzero") != 0 ? ", true" : ", false");
}

void EmitDynSqueeze(EmitContext& c) { EmitNewShape(c, "SqueezeAtRunTime", ""); }

void EmitDynUnsqueeze(EmitContext& c) { EmitNewShape(c, "UnsqueezeAtRunTime", ""); }

// Every input element's term accumulated into its result element; LogSumExp's terms shifted by
// the largest element of their result (found in a first walk) against overflow.
void EmitDynReduce(EmitContext& c) {
  const ir::Attrs& attrs = c.call.attrs;
  const std::string& reducer = attrs.GetString("reducer");
  std::string t = CType(c.output_types[0].dtype);
  bool is_float = c.output_types[0].dtype.code == kDLFloat;
  c.code.Open("");
  std::string in = c.code.Fresh("in_shape"), axes = c.code.Fresh("axes"), strides = c.code.Fresh("strides");
  int64_t rank = DeclareInputShape(c, in);
  int64_t count = DeclareValues(c, 1, axes);
  c.code.Line("int64_t " + strides + "[" + IntLiteral(std::max<int64_t>(rank, 1)) + "] = {0};");
  std::string shape = LocalShape(c, 1);
  c.code.Line(std::string("if (kiln::kernels::ReduceAtRunTime(") + in + ", " + IntLiteral(rank) + ", " + axes + ", " +
              IntLiteral(count) + ", " + (attrs.GetInt("keepdims") != 0 ? "true" : "false") + ", " +
              (attrs.GetInt("noop_with_empty_axes") != 0 ? "true" : "false") + ", " + shape + ", " + strides + ", " +
              Where(c) + ") != 0) return -1;");
  CommitShape(c, shape, 1);
  std::string elements = c.code.Fresh("elements");
  DeclareElements(c, elements);
  const std::string &x = c.inputs[0], &out = c.outputs[0];
  std::string lowest = is_float ? "-INFINITY" : "std::numeric_limits<" + t + ">::lowest()";
  std::string init = reducer == "prod"  ? "1"
                     : reducer == "max" ? lowest
                     : reducer == "min" ? (is_float ? "INFINITY" : "std::numeric_limits<" + t + ">::max()")
                                        : "0";
  std::string shift;  // LogSumExp's per result element
  if (reducer == "log_sum_exp") {
    std::string workspace = c.code.Fresh("w"), o = c.code.Fresh("o");
    shift = c.code.Fresh("shift");
    c.code.Line("kiln::kernels::Workspace " + workspace + "(static_cast<uint64_t>(" + elements +
                ") * sizeof(double));");
    c.code.Line("if (!" + workspace + ".ok()) return -1;");
    c.code.Line("double* " + shift + " = " + workspace + ".as<double>();");
    c.code.Line("for (int64_t k = 0; k < " + elements + "; ++k) " + shift + "[k] = -INFINITY;");
    WalkReduced(c, in, strides, rank, o,
                shift + "[" + o + "] = std::max<double>(" + shift + "[" + o + "], " + x + "[i]);");
    c.code.Line("for (int64_t k = 0; k < " + elements + "; ++k) if (std::isinf(" + shift + "[k])) " + shift +
                "[k] = 0;");  // no element, or an infinite one: unshifted
  }
  c.code.Line("for (int64_t k = 0; k < " + elements + "; ++k) " + out + "[k] = " + init + ";");
  std::string o = c.code.Fresh("o"), element = out + "[" + o + "]";
  std::string term = Term(reducer, x + "[i]", shift + "[" + o + "]");
  std::string body = reducer == "prod"  ? element + " *= " + term + ";"
                     : reducer == "max" ? element + " = std::max<" + t + ">(" + element + ", " + term + ");"
                     : reducer == "min" ? element + " = std::min<" + t + ">(" + element + ", " + term + ");"
                                        : element + " += " + term + ";";
  WalkReduced(c, in, strides, rank, o, body);
  if (reducer == "mean") {  // each result element averages the product of the reduced extents
    std::string reduced = c.code.Fresh("reduced");
    c.code.Line("int64_t " + reduced + " = 1;");
    c.code.Line("for (int64_t d = 0; d < " + IntLiteral(rank) + "; ++d) " + reduced + " *= " + strides +
                "[d] == 0 ? " + in + "[d] : 1;");
    std::string quotient = out + "[k] / static_cast<" + (is_float ? "double" : t) + ">(" + reduced + ")";
    if (!is_float) quotient = "(" + reduced + " == 0 ? 0 : " + quotient + ")";  // an empty input's mean
    c.code.Line("for (int64_t k = 0; k < " + elements + "; ++k) " + out + "[k] = static_cast<" + t + ">(" +
                quotient + ");");
  }
  std::string result = Final(reducer, out + "[k]", shift + "[k]");
  if (result != out + "[k]") {
    c.code.Line("for (int64_t k = 0; k < " + elements + "; ++k) " + out + "[k] = static_cast<" + t + ">(" + result +
                ");");
  }
  ZeroTail(c, elements);
  c.code.Close();
}

// The slice's first index and step per axis, then the elements gathered.
void EmitDynStridedSlice(EmitContext& c) {
  c.code.Open("");
  std::string in = c.code.Fresh("in_shape");
  int64_t rank = DeclareInputShape(c, in);
  std::vector<std::string> values;
  for (const char* name : {"starts", "ends", "axes", "steps"}) {
    values.push_back(c.code.Fresh(name));
    DeclareValues(c, values.size(), values.back());
  }
  std::string first = c.code.Fresh("first"), step = c.code.Fresh("step");
  for (const std::string& name : {first, step}) {
    c.code.Line("int64_t " + name + "[" + IntLiteral(std::max<int64_t>(rank, 1)) + "] = {0};");
  }
  std::string shape = LocalShape(c, 1);
  c.code.Line("if (kiln::kernels::SliceAtRunTime(" + in + ", " + IntLiteral(rank) + ", " + values[0] + ", " +
              values[1] + ", " + values[2] + ", " + values[3] + ", " + IntLiteral(c.input_types[1].NumElements()) +
              ", " + first + ", " + step + ", " + shape + ", " + Where(c) + ") != 0) return -1;");
  CommitShape(c, shape, 1);
  c.code.Line("kiln::kernels::GatherStridedAtRunTime(" + c.inputs[0] + ", " + in + ", " + IntLiteral(rank) + ", " +
              first + ", " + step + ", " + c.outputs[1] + ", sizeof(*" + c.outputs[0] + "), " + c.outputs[0] + ");");
  std::string elements = c.code.Fresh("elements");
  DeclareElements(c, elements);
  ZeroTail(c, elements);
  c.code.Close();
}

// The axis's extent and the elements before and after it, from a value `axis` known at run time:
// declares `outer`, `extent` and `inner` over the input's shape array `in`.
void DeclareAxisView(EmitContext& c, const std::string& in, int64_t rank, const std::string& axis,
                     const std::string& outer, const std::string& extent, const std::string& inner) {
  c.code.Line("int64_t " + outer + " = 1, " + inner + " = 1, " + extent + " = " + in + "[" + axis + "];");
  c.code.Line("for (int64_t d = 0; d < " + axis + "; ++d) " + outer + " *= " + in + "[d];");
  c.code.Line("for (int64_t d = " + axis + " + 1; d < " + IntLiteral(rank) + "; ++d) " + inner + " *= " + in +
              "[d];");
}

// The k first, sorted, by the kernel library's TopK.
void EmitDynTopk(EmitContext& c) {
  const ir::Attrs& attrs = c.call.attrs;
  c.code.Open("");
  std::string in = c.code.Fresh("in_shape"), k = c.code.Fresh("k");
  int64_t rank = DeclareInputShape(c, in);
  int64_t axis = attrs.GetInt("axis") < 0 ? attrs.GetInt("axis") + rank : attrs.GetInt("axis");
  c.code.Line("const int64_t " + k + " = " + c.inputs[1] + "[0];");
  std::string shape = LocalShape(c, 2);
  c.code.Line("if (kiln::kernels::TopKAtRunTime(" + in + ", " + IntLiteral(rank) + ", " + IntLiteral(axis) + ", " + k +
              ", " + shape + ", " + Where(c) + ") != 0) return -1;");
  CommitShape(c, shape, 2);
  std::string outer = c.code.Fresh("outer"), extent = c.code.Fresh("extent"), inner = c.code.Fresh("inner");
  DeclareAxisView(c, in, rank, IntLiteral(axis), outer, extent, inner);
  c.code.Line("kiln::kernels::TopK(kiln::kernels::TopKShape{" + outer + ", " + extent + ", " + inner + ", " + k +
              ", " + (attrs.GetInt("largest") != 0 ? "false" : "true") + "}, " + c.inputs[0] + ", " + c.outputs[0] +
              ", " + c.outputs[1] + ");");
  std::string elements = outer + " * " + k + " * " + inner;
  c.code.Line("for (int64_t i = " + elements + "; i < " + IntLiteral(c.output_types[0].NumElements()) + "; ++i) " +
              c.outputs[0] + "[i] = 0, " + c.outputs[1] + "[i] = 0;");
  c.code.Close();
}

// Each piece gathered from its offset along the axis.
void EmitDynSplit(EmitContext& c) {
  const ir::Attrs& attrs = c.call.attrs;
  int64_t pieces = attrs.GetInt("pieces");
  c.code.Open("");
  std::string in = c.code.Fresh("in_shape"), sizes = c.code.Fresh("sizes");
  int64_t rank = DeclareInputShape(c, in);
  int64_t axis = attrs.GetInt("axis") < 0 ? attrs.GetInt("axis") + rank : attrs.GetInt("axis");
  DeclareValues(c, 1, sizes);
  c.code.Line("if (kiln::kernels::SplitAtRunTime(" + in + ", " + IntLiteral(rank) + ", " + IntLiteral(axis) + ", " +
              sizes + ", " + IntLiteral(pieces) + ", " + Where(c) + ") != 0) return -1;");
  std::string first = c.code.Fresh("first"), step = c.code.Fresh("step");
  c.code.Line("int64_t " + first + "[" + IntLiteral(rank) + "] = {0};");
  c.code.Line("int64_t " + step + "[" + IntLiteral(rank) + "];");
  c.code.Line("for (int64_t d = 0; d < " + IntLiteral(rank) + "; ++d) " + step + "[d] = 1;");
  for (int64_t p = 0; p < pieces; ++p) {
    const std::string &data = c.outputs[p], &shape = c.outputs[pieces + p];
    c.code.Line("for (int64_t d = 0; d < " + IntLiteral(rank) + "; ++d) " + shape + "[d] = d == " + IntLiteral(axis) +
                " ? " + sizes + "[" + IntLiteral(p) + "] : " + in + "[d];");
    c.code.Line("kiln::kernels::GatherStridedAtRunTime(" + c.inputs[0] + ", " + in + ", " + IntLiteral(rank) + ", " +
                first + ", " + step + ", " + shape + ", sizeof(*" + data + "), " + data + ");");
    c.code.Line(first + "[" + IntLiteral(axis) + "] += " + sizes + "[" + IntLiteral(p) + "];");
    std::string elements = c.code.Fresh("elements");
    c.code.Line("int64_t " + elements + " = 1;");
    c.code.Line("for (int64_t d = 0; d < " + IntLiteral(rank) + "; ++d) " + elements + " *= " + shape + "[d];");
    c.code.Line("for (int64_t i = " + elements + "; i < " + IntLiteral(c.output_types[p].NumElements()) + "; ++i) " +
                data + "[i] = 0;");
  }
  c.code.Close();
}

// Running sums along the axis the value gives, in the input's own type (as the fixed form).
void EmitDynCumsum(EmitContext& c) {
  c.code.Open("");
  std::string in = c.code.Fresh("in_shape"), axis = c.code.Fresh("axis");
  int64_t rank = DeclareInputShape(c, in);
  c.code.Line("int64_t " + axis + " = 0;");
  c.code.Line("if (kiln::kernels::AxisAtRunTime(static_cast<int64_t>(" + c.inputs[1] + "[0]), " + IntLiteral(rank) +
              ", &" + axis + ", " + Where(c) + ") != 0) return -1;");
  std::string outer = c.code.Fresh("outer"), n = c.code.Fresh("extent"), inner = c.code.Fresh("inner");
  DeclareAxisView(c, in, rank, axis, outer, n, inner);
  EmitCumsumLoops(c, outer, n, inner);
  c.code.Close();
}

}  // namespace kiln::backend
