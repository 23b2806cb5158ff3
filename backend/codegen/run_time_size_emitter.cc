// Ops whose result no input's size bounds (ir/ops/run_time_sized.cc), as loops: dyn.<op>_shape
// computes the result's shape with kernels/shape/run_time_shapes.cc, checked there; dyn.<op>,
// whose output the executor has sized from that shape before the call, copies the shape to its
// shape field and computes the data.
#include <algorithm>

#include "backend/codegen/emitter.h"
#include "runtime/error.h"

namespace kiln::backend {
namespace {

std::string Where(const EmitContext& c) { return OpWhere(c); }

void DeclareShape(EmitContext& c, const std::string& name, const ir::TensorType& type, int64_t rank) {
  DeclareStaticShape(c, name, type, rank);
}

void DeclareValues(EmitContext& c, size_t i, const std::string& name) { DeclareInputValues(c, i, name); }

int MapOfMode(const std::string& mode) {
  if (mode == "edge") return 3;     // kMapPadEdge
  if (mode == "reflect") return 4;  // kMapPadReflect
  if (mode == "wrap") return 5;     // kMapPadWrap
  runtime::Check(mode == "constant", "pad mode '", mode, "' is not constant, edge, reflect or wrap");
  return 2;  // kMapPadConstant
}

// The data op's shape field (output 1) from its shape input, once the shape is checked against
// `expected` (an int64_t array the op's inputs give, recomputed; "nullptr": any shape) and the
// storage the executor gave output 0 (host_codegen.cc declares its capacity); returns the rank.
int64_t CopyShape(EmitContext& c, const std::string& expected = "nullptr") {
  int64_t rank = c.output_types[1].shape[0];
  const std::string& shape = c.inputs[c.call.op->sized_by_input];
  c.code.Line("if (kiln::kernels::CheckSizedOutput(" + expected + ", " + shape + ", " + IntLiteral(rank) + ", " +
              c.outputs[0] + "_capacity, " + Where(c) + ") != 0) return -1;");
  c.code.Line("for (int64_t d = 0; d < " + IntLiteral(rank) + "; ++d) " + c.outputs[1] + "[d] = " + shape + "[d];");
  return rank;
}

// Declares `name`, an int64_t array of `rank` extents.
void DeclareExtents(EmitContext& c, const std::string& name, int64_t rank) {
  c.code.Line("int64_t " + name + "[" + IntLiteral(std::max<int64_t>(rank, 1)) + "] = {0};");
}

// The shape the op's inputs give, recomputed by the kernel library's `call` (its text up to its last
// two arguments, the extents it fills and the op's place): the name of the `rank` extents.
std::string RecomputedShape(EmitContext& c, int64_t rank, const std::string& call) {
  std::string expected = c.code.Fresh("expected");
  DeclareExtents(c, expected, rank);
  c.code.Line("if (" + call + expected + ", " + Where(c) + ") != 0) return -1;");
  return expected;
}

// The data by the kernel library's mapped copy (`map`, an AxisMap), the input seen with `rank` axes.
void EmitMappedCopy(EmitContext& c, int map, const std::string& before, const std::string& fill,
                    const std::string& expected) {
  int64_t rank = CopyShape(c, expected);
  c.code.Open("");
  std::string in = c.code.Fresh("in_shape");
  DeclareShape(c, in, c.input_types[0], rank);
  c.code.Line("kiln::kernels::CopyMappedAtRunTime(" + c.inputs[0] + ", " + in + ", " + c.outputs[1] + ", " +
              IntLiteral(rank) + ", " + std::to_string(map) + ", " + before + ", " + fill + ", sizeof(*" +
              c.outputs[0] + "), " + c.outputs[0] + ");");
  c.code.Close();
}

}  // namespace

void EmitDynExpandShape(EmitContext& c) {
  c.code.Open("");
  std::string in = c.code.Fresh("in_shape"), shape = c.code.Fresh("shape");
  DeclareShape(c, in, c.input_types[0], c.input_types[0].ndim());
  DeclareValues(c, 1, shape);
  c.code.Line("if (kiln::kernels::ExpandAtRunTime(" + in + ", " + IntLiteral(c.input_types[0].ndim()) + ", " + shape +
              ", " + IntLiteral(c.input_types[1].NumElements()) + ", " + c.outputs[0] + ", " + Where(c) +
              ") != 0) return -1;");
  c.code.Close();
}

void EmitDynTileShape(EmitContext& c) {
  c.code.Open("");
  std::string in = c.code.Fresh("in_shape"), repeats = c.code.Fresh("repeats");
  DeclareShape(c, in, c.input_types[0], c.input_types[0].ndim());
  DeclareValues(c, 1, repeats);
  c.code.Line("if (kiln::kernels::TileAtRunTime(" + in + ", " + IntLiteral(c.input_types[0].ndim()) + ", " + repeats +
              ", " + c.outputs[0] + ", " + Where(c) + ") != 0) return -1;");
  c.code.Close();
}

// Declares the pads' per-axis begins as `before` after computing the shape into `out`.
void DeclarePads(EmitContext& c, const std::string& before, const std::string& out) {
  std::string in = c.code.Fresh("in_shape"), pads = c.code.Fresh("pads"), axes = c.code.Fresh("axes");
  int64_t rank = c.input_types[0].ndim();
  DeclareShape(c, in, c.input_types[0], rank);
  DeclareValues(c, 1, pads);
  DeclareValues(c, 2, axes);
  c.code.Line("int64_t " + before + "[" + IntLiteral(std::max<int64_t>(rank, 1)) + "] = {0};");
  c.code.Line("if (kiln::kernels::PadAtRunTime(" + in + ", " + IntLiteral(rank) + ", " + pads + ", " + axes + ", " +
              IntLiteral(c.input_types[2].NumElements()) + ", " +
              std::to_string(MapOfMode(c.call.attrs.GetString("mode"))) + ", " + before + ", " + out + ", " +
              Where(c) + ") != 0) return -1;");
}

void EmitDynPadShape(EmitContext& c) {
  c.code.Open("");
  DeclarePads(c, c.code.Fresh("before"), c.outputs[0]);
  c.code.Close();
}

void EmitDynValuesShape(EmitContext& c) {
  c.code.Open("");
  std::string values = c.code.Fresh("values");
  DeclareValues(c, 0, values);
  c.code.Line("if (kiln::kernels::ShapeOfValuesAtRunTime(" + values + ", " +
              IntLiteral(c.input_types[0].NumElements()) + ", " + c.outputs[0] + ", " + Where(c) + ") != 0) return -1;");
  c.code.Close();
}

// In int64_t for integers, double for floating point (the count as the kernel library computes it).
void EmitDynRangeShape(EmitContext& c) {
  std::string t = c.input_types[0].dtype.code == kDLFloat ? "double" : "int64_t";
  c.code.Line("if (kiln::kernels::RangeAtRunTime(static_cast<" + t + ">(" + c.inputs[0] + "[0]), static_cast<" + t +
              ">(" + c.inputs[1] + "[0]), static_cast<" + t + ">(" + c.inputs[2] + "[0]), " + c.outputs[0] + ", " +
              Where(c) + ") != 0) return -1;");
}

// The input broadcast to the shape, which must be the broadcast of the two.
void EmitDynExpand(EmitContext& c) {
  int64_t rank = c.output_types[1].shape[0];
  c.code.Open("");
  std::string in = c.code.Fresh("in_shape");
  DeclareShape(c, in, c.input_types[0], c.input_types[0].ndim());
  std::string expected = RecomputedShape(c, rank,
                                         "kiln::kernels::ExpandAtRunTime(" + in + ", " +
                                             IntLiteral(c.input_types[0].ndim()) + ", " + c.inputs[1] + ", " +
                                             IntLiteral(rank) + ", ");
  EmitMappedCopy(c, 0, "nullptr", "nullptr", expected);  // kMapBroadcast
  c.code.Close();
}

// The input repeated (its repeats, input 1, give the shape again).
void EmitDynTile(EmitContext& c) {
  int64_t rank = c.input_types[0].ndim();
  c.code.Open("");
  std::string in = c.code.Fresh("in_shape"), repeats = c.code.Fresh("repeats");
  DeclareShape(c, in, c.input_types[0], rank);
  DeclareValues(c, 1, repeats);
  std::string expected =
      RecomputedShape(c, rank, "kiln::kernels::TileAtRunTime(" + in + ", " + IntLiteral(rank) + ", " + repeats + ", ");
  EmitMappedCopy(c, 1, "nullptr", "nullptr", expected);  // kMapTile
  c.code.Close();
}

void EmitDynPad(EmitContext& c) {
  c.code.Open("");
  std::string before = c.code.Fresh("before"), out = c.code.Fresh("out_shape");
  DeclareExtents(c, out, c.input_types[0].ndim());
  DeclarePads(c, before, out);
  EmitMappedCopy(c, MapOfMode(c.call.attrs.GetString("mode")), before, c.inputs[3], out);
  c.code.Close();
}

void EmitDynConstantOfShape(EmitContext& c) {
  int64_t rank = CopyShape(c);
  c.code.Open("");
  c.code.Line("int64_t elements = 1;");
  c.code.Line("for (int64_t d = 0; d < " + IntLiteral(rank) + "; ++d) elements *= " + c.outputs[1] + "[d];");
  c.code.Line("for (int64_t i = 0; i < elements; ++i) " + c.outputs[0] + "[i] = " + c.inputs[0] + "[0];");
  c.code.Close();
}

// start + i * delta, in the data's type (as ONNX's Range computes it).
void EmitDynRange(EmitContext& c) {
  CopyShape(c);
  std::string t = CType(c.output_types[0].dtype);
  c.code.Line("for (int64_t i = 0; i < " + c.outputs[1] + "[0]; ++i) " + c.outputs[0] + "[i] = static_cast<" + t +
              ">(" + c.inputs[0] + "[0] + static_cast<" + t + ">(i) * " + c.inputs[2] + "[0]);");
}

namespace {

std::string Quoted(const std::string& text) { return "\"" + text + "\""; }

// Resize's output shape into `out` (an int64_t* expression), with `scales` and `roi` declared as
// each axis's scale and roi (from the inputs data, roi, scales, sizes and the attributes).
void DeclareResizeShape(EmitContext& c, const std::string& in, const std::string& out, const std::string& scales,
                        const std::string& roi) {
  const ir::Attrs& attrs = c.call.attrs;
  int64_t rank = c.input_types[0].ndim();
  std::vector<int64_t> axes = attrs.GetInts("axes");
  DeclareShape(c, in, c.input_types[0], rank);
  std::string given_roi = c.code.Fresh("roi"), given_scales = c.code.Fresh("scales"), sizes = c.code.Fresh("sizes");
  std::string axes_name = c.code.Fresh("axes");
  DeclareInputValues(c, 1, given_roi, "double");
  DeclareInputValues(c, 2, given_scales, "double");
  DeclareValues(c, 3, sizes);
  c.code.Line("const int64_t " + axes_name + "[] = " + (axes.empty() ? std::string("{0LL}") : IntList(axes)) + ";");
  c.code.Line("double " + scales + "[" + IntLiteral(rank) + "], " + roi + "[" + IntLiteral(2 * rank) + "];");
  c.code.Line("if (kiln::kernels::ResizeShapeAtRunTime(" + in + ", " + IntLiteral(rank) + ", " + given_roi + ", " +
              IntLiteral(c.input_types[1].NumElements()) + ", " + given_scales + ", " +
              IntLiteral(c.input_types[2].NumElements()) + ", " + sizes + ", " +
              IntLiteral(c.input_types[3].NumElements()) + ", " + axes_name + ", " +
              IntLiteral(static_cast<int64_t>(axes.size())) + ", " + Quoted(attrs.GetString("keep_aspect_ratio_policy")) +
              ", " + out + ", " + scales + ", " + roi + ", " + Where(c) + ") != 0) return -1;");
}

}  // namespace

void EmitDynResizeShape(EmitContext& c) {
  c.code.Open("");
  DeclareResizeShape(c, c.code.Fresh("in_shape"), c.outputs[0], c.code.Fresh("axis_scales"), c.code.Fresh("axis_roi"));
  c.code.Close();
}

void EmitDynResize(EmitContext& c) {
  const ir::Attrs& attrs = c.call.attrs;
  int64_t rank = c.output_types[1].shape[0];
  c.code.Open("");
  std::string in = c.code.Fresh("in_shape"), out = c.code.Fresh("out_shape");
  std::string scales = c.code.Fresh("axis_scales"), roi = c.code.Fresh("axis_roi");
  DeclareExtents(c, out, rank);
  DeclareResizeShape(c, in, out, scales, roi);
  CopyShape(c, out);
  c.code.Line("kiln::kernels::ResizeAtRunTime(" + c.inputs[0] + ", " + in + ", " + IntLiteral(rank) + ", " +
              c.outputs[1] + ", " + scales + ", " + roi + ", " + Quoted(attrs.GetString("method")) + ", " +
              Quoted(attrs.GetString("coordinate_transformation_mode")) + ", " +
              Quoted(attrs.GetString("rounding_method")) + ", " + FloatLiteral(attrs.GetFloat("cubic_alpha")) +
              ", " + (attrs.GetInt("cubic_exclude") != 0 ? "true" : "false") + ", " +
              (attrs.GetInt("antialias") != 0 ? "true" : "false") + ", " +
              Float32Literal(static_cast<float>(attrs.GetFloat("extrapolation_value"))) + ", " + c.outputs[0] + ");");
  c.code.Close();
}

void EmitDynOneHotShape(EmitContext& c) {
  c.code.Open("");
  std::string in = c.code.Fresh("in_shape");
  DeclareShape(c, in, c.input_types[0], c.input_types[0].ndim());
  c.code.Line("if (kiln::kernels::OneHotAtRunTime(" + in + ", " + IntLiteral(c.input_types[0].ndim()) + ", " +
              c.inputs[1] + "[0], " + IntLiteral(c.call.attrs.GetInt("axis")) + ", " + c.outputs[0] + ", " + Where(c) +
              ") != 0) return -1;");
  c.code.Close();
}

// on where the index (from the end when negative) is the position along the depth, else off.
void EmitDynOneHot(EmitContext& c) {
  int64_t rank = c.output_types[1].shape[0], axis = c.call.attrs.GetInt("axis");
  c.code.Open("");
  std::string in = c.code.Fresh("in_shape");
  DeclareShape(c, in, c.input_types[0], rank - 1);
  CopyShape(c, RecomputedShape(c, rank,
                               "kiln::kernels::OneHotAtRunTime(" + in + ", " + IntLiteral(rank - 1) + ", " +
                                   c.inputs[2] + "[0], " + IntLiteral(axis) + ", "));
  std::string depth = c.outputs[1] + "[" + IntLiteral(axis) + "]";
  c.code.Line("int64_t outer = 1, inner = 1;");
  c.code.Line("for (int64_t d = 0; d < " + IntLiteral(axis) + "; ++d) outer *= " + c.outputs[1] + "[d];");
  c.code.Line("for (int64_t d = " + IntLiteral(axis + 1) + "; d < " + IntLiteral(rank) + "; ++d) inner *= " +
              c.outputs[1] + "[d];");
  c.code.Open("for (int64_t o = 0; o < outer; ++o)");
  c.code.Open("for (int64_t j = 0; j < " + depth + "; ++j)");
  c.code.Open("for (int64_t i = 0; i < inner; ++i)");
  c.code.Line("int64_t index = " + c.inputs[0] + "[o * inner + i];");
  c.code.Line("if (index < 0) index += " + depth + ";");
  c.code.Line(c.outputs[0] + "[(o * " + depth + " + j) * inner + i] = " + c.inputs[1] + "[index == j ? 1 : 0];");
  c.code.Close();
  c.code.Close();
  c.code.Close();
  c.code.Close();
}

void EmitDynWindowShape(EmitContext& c) {
  c.code.Line("if (kiln::kernels::ShapeOfValuesAtRunTime(" + c.inputs[0] + ", 1, " + c.outputs[0] + ", " + Where(c) +
              ") != 0) return -1;");
}

// ONNX's windows, w(n) over N1 = the size (periodic) or the size - 1 (kernels/elementwise/scalar_ops.h).
void EmitDynWindow(EmitContext& c) {
  const ir::Attrs& attrs = c.call.attrs;
  CopyShape(c);
  const std::string& kind = attrs.GetString("kind");
  std::string window = kind == "hann" ? "HannWindow" : kind == "hamming" ? "HammingWindow" : "BlackmanWindow";
  c.code.Open("");
  c.code.Line("double n1 = static_cast<double>(" + c.outputs[1] + "[0]" + (attrs.GetInt("periodic") != 0 ? "" : " - 1") +
              ");");
  c.code.Open("for (int64_t i = 0; i < " + c.outputs[1] + "[0]; ++i)");
  c.code.Line("double n = static_cast<double>(i);");
  c.code.Line(c.outputs[0] + "[i] = static_cast<" + CType(c.output_types[0].dtype) + ">(kiln::kernels::scalar::" + window +
              "(n, n1));");
  c.code.Close();
  c.code.Close();
}

void EmitDynCenterCropPadShape(EmitContext& c) {
  c.code.Open("");
  std::string in = c.code.Fresh("in_shape"), lengths = c.code.Fresh("lengths"), axes = c.code.Fresh("axes");
  std::vector<int64_t> given = c.call.attrs.GetInts("axes");
  DeclareShape(c, in, c.input_types[0], c.input_types[0].ndim());
  DeclareValues(c, 1, lengths);
  c.code.Line("const int64_t " + axes + "[] = " + (given.empty() ? std::string("{0LL}") : IntList(given)) + ";");
  c.code.Line("if (kiln::kernels::CenterCropPadAtRunTime(" + in + ", " + IntLiteral(c.input_types[0].ndim()) + ", " +
              lengths + ", " + axes + ", " + IntLiteral(static_cast<int64_t>(given.size())) + ", " + c.outputs[0] +
              ", " + Where(c) + ") != 0) return -1;");
  c.code.Close();
}

// Each axis cropped or zero-padded about its center: a padded copy whose padding before is
// (length - extent) / 2, negative when cropping (ONNX's halves, rounded down).
void EmitDynCenterCropPad(EmitContext& c) {
  int64_t rank = c.input_types[0].ndim();
  c.code.Open("");
  std::string in = c.code.Fresh("in_shape"), before = c.code.Fresh("before"), zero = c.code.Fresh("zero");
  DeclareShape(c, in, c.input_types[0], rank);
  c.code.Line("int64_t " + before + "[" + IntLiteral(std::max<int64_t>(rank, 1)) + "] = {0};");
  c.code.Line("for (int64_t d = 0; d < " + IntLiteral(rank) + "; ++d) " + before + "[d] = " + c.inputs[1] + "[d] >= " +
              in + "[d] ? (" + c.inputs[1] + "[d] - " + in + "[d]) / 2 : -((" + in + "[d] - " + c.inputs[1] +
              "[d]) / 2);");
  c.code.Line("const " + CType(c.output_types[0].dtype) + " " + zero + " = 0;");
  EmitMappedCopy(c, 2, before, "&" + zero, "nullptr");  // kMapPadConstant: in range for any shape
  c.code.Close();
}

void EmitDynAffineGridShape(EmitContext& c) {
  c.code.Open("");
  std::string size = c.code.Fresh("size");
  int64_t count = DeclareInputValues(c, 1, size);
  c.code.Line("if (kiln::kernels::AffineGridAtRunTime(" + IntLiteral(c.input_types[0].shape[0]) + ", " + size + ", " +
              IntLiteral(count) + ", " + c.outputs[0] + ", " + Where(c) + ") != 0) return -1;");
  c.code.Close();
}

// Per point, theta times (x, y[, z], 1), the normalized coordinates of the point's pixel center
// (align_corners: of the pixels themselves, -1 for an axis of one), the last spatial axis first.
void EmitDynAffineGrid(EmitContext& c) {
  int64_t rank = c.output_types[1].shape[0], spatial = rank - 2;
  bool align = c.call.attrs.GetInt("align_corners") != 0;
  c.code.Open("");
  std::string size = c.code.Fresh("size");
  DeclareInputValues(c, 1, size);
  CopyShape(c, RecomputedShape(c, rank,
                               "kiln::kernels::AffineGridAtRunTime(" + IntLiteral(c.input_types[0].shape[0]) + ", " +
                                   size + ", " + IntLiteral(rank) + ", "));
  c.code.Close();
  const std::string &theta = c.inputs[0], &shape = c.outputs[1], &out = c.outputs[0];
  std::string t = CType(c.output_types[0].dtype);
  c.code.Open("");
  c.code.Line("int64_t points = 1;");
  c.code.Line("for (int64_t d = 1; d <= " + IntLiteral(spatial) + "; ++d) points *= " + shape + "[d];");
  c.code.Open("for (int64_t n = 0; n < " + shape + "[0]; ++n)");
  c.code.Open("for (int64_t p = 0; p < points; ++p)");
  c.code.Line("double point[4] = {0, 0, 0, 1};");
  c.code.Line("int64_t rest = p;");
  c.code.Open("for (int64_t d = " + IntLiteral(spatial) + "; d >= 1; --d)");
  c.code.Line("double length = static_cast<double>(" + shape + "[d]), i = static_cast<double>(rest % " + shape +
              "[d]);");
  c.code.Line("rest /= " + shape + "[d];");
  c.code.Line(std::string("point[") + IntLiteral(spatial) + " - d] = " +
              (align ? "length == 1 ? -1.0 : -1.0 + 2.0 * i / (length - 1);" : "(2.0 * i + 1.0) / length - 1.0;"));
  c.code.Close();
  c.code.Line("point[" + IntLiteral(spatial) + "] = 1;");
  c.code.Open("for (int64_t k = 0; k < " + IntLiteral(spatial) + "; ++k)");
  c.code.Line("double sum = 0;");
  c.code.Line("for (int64_t j = 0; j <= " + IntLiteral(spatial) + "; ++j) sum += static_cast<double>(" + theta +
              "[(n * " + IntLiteral(spatial) + " + k) * " + IntLiteral(spatial + 1) + " + j]) * point[j];");
  c.code.Line(out + "[(n * points + p) * " + IntLiteral(spatial) + " + k] = static_cast<" + t + ">(sum);");
  c.code.Close();
  c.code.Close();
  c.code.Close();
  c.code.Close();
}

}  // namespace kiln::backend
