// image.resize as loops: the taps of each resized axis (kernels/image/resize_taps.h) become static tables of
// input offsets and weights in the generated code; an output element is the weighted sum over the
// product of its axes' taps, or a plain read when every axis has one tap of weight 1 (nearest),
// a copy of the contiguous run of the axes after the last resized one where there is one.
// In a function with shape dimensions an axis's table has the output's length, known at run time
// only: nearest taps that read input o * in / out (an upsampling by a whole factor, and others)
// are tabulated when the function runs; other taps are an Error there.
#include "backend/codegen/emitter.h"
#include "kernels/image/resize_taps.h"
#include "ir/type.h"
#include "runtime/error.h"

namespace kiln::backend {
namespace {

struct AxisTables {
  int dim = 0;
  int64_t taps = 1;
  std::string offsets;  // name of the table of input offsets (coordinate * stride)
  std::string weights;  // name of the weight table, empty when every weight is 1
  std::string outside;  // name of the outside flags, empty when none is outside
};

}  // namespace

void EmitResize(EmitContext& c) {
  if (c.output_types[0].NumElements() == 0) return;  // nothing to write (and no taps to tabulate)
  const std::vector<int64_t> in = c.input_types[0].shape;  // copies: run-time tables join the inputs
  const std::vector<int64_t> out = c.output_types[0].shape;
  const ir::Attrs& attrs = c.call.attrs;
  const auto& scales = attrs.GetFloats("scales");
  const auto& roi = attrs.GetFloats("roi");
  kernels::ResizeMethod method{attrs.GetString("method"),
                      attrs.GetString("coordinate_transformation_mode"),
                      attrs.GetString("rounding_method"),
                      attrs.GetFloat("cubic_alpha"),
                      attrs.GetInt("cubic_exclude") != 0,
                      attrs.GetInt("antialias") != 0};
  std::string type = CType(c.input_types[0].dtype);
  std::vector<int64_t> strides = ir::RowStrides(in);
  int rank = static_cast<int>(in.size());
  std::vector<AxisTables> axes;  // the resized axes
  std::string base = "0";        // the input offset of the axes left as they are
  for (int d = 0; d < rank; ++d) {
    double start = roi.empty() ? 0 : roi[d], end = roi.empty() ? 1 : roi[rank + d];
    kernels::ResizeAxis axis = kernels::ComputeResizeAxis(in[d], out[d], scales[d], start, end, method);
    if (axis.identity) {
      base += " + i" + std::to_string(d) + " * " + IntLiteral(strides[d]);
      continue;
    }
    AxisTables tables{d, axis.taps, "", "", ""};
    bool unit = axis.taps == 1;
    for (size_t i = 0; unit && i < axis.weight.size(); ++i) unit = axis.weight[i] == 1 || (!axis.outside.empty() && axis.outside[i]);
    if (c.code.extents_vary()) {
      bool floor_ratio = unit && axis.outside.empty();
      for (int64_t o = 0; floor_ratio && o < out[d]; ++o) floor_ratio = axis.index[o] == o * in[d] / out[d];
      runtime::Check(floor_ratio, c.function, ": image.resize along axis ", d, " (", attrs.GetString("method"),
                     ", ", method.mode, ") takes taps that kiln tabulates only for fixed shapes; this axis's extent ",
                     "cannot be a shape dimension");
      tables.offsets = c.code.Fresh("offsets");
      std::string workspace = c.code.Fresh("w");
      c.code.Line("kiln::kernels::Workspace " + workspace + "(static_cast<uint64_t>(" + IntLiteral(out[d]) +
                  ") * sizeof(int64_t));");
      c.code.Line("if (!" + workspace + ".ok()) return -1;");
      c.code.Line("int64_t* " + tables.offsets + " = " + workspace + ".as<int64_t>();");
      c.code.Line("for (int64_t o = 0; o < " + IntLiteral(out[d]) + "; ++o) " + tables.offsets + "[o] = o * " +
                  IntLiteral(in[d]) + " / " + IntLiteral(out[d]) + " * " + IntLiteral(strides[d]) + ";");
      c.inputs.push_back(tables.offsets);  // read by the loops' tasks like an input
      c.input_types.push_back(ir::TensorType{{out[d]}, DLDataType{kDLInt, 64, 1}});
      axes.push_back(tables);
      continue;
    }
    for (int64_t& at : axis.index) at *= strides[d];
    tables.offsets = StaticTable(c, "int64_t", "offsets", axis.index, IntLiteral);
    if (!unit) tables.weights = StaticTable(c, type, "weights", axis.weight, FloatLiteral);
    if (!axis.outside.empty()) {
      tables.outside = StaticTable(c, "bool", "outside", axis.outside, [](bool b) { return std::string(b ? "1" : "0"); });
    }
    axes.push_back(tables);
  }
  // Nearest taps on every resized axis, and axes after the last resized one left as they are (the
  // channels of a blocked layout): each step copies that run of contiguous elements at once (read
  // element by element, GCC wrote the text detector's 2x upsampling of 96 channels, 160x160
  // out, as scalar loads and stores: 557 us on one Zen 5 core).
  int64_t run = 1;
  int loop_dims = rank;
  bool nearest = !c.code.extents_vary() && !axes.empty();
  for (const AxisTables& a : axes) nearest = nearest && a.taps == 1 && a.weights.empty() && a.outside.empty();
  if (nearest) {
    loop_dims = axes.back().dim + 1;
    for (int d = loop_dims; d < rank; ++d) run *= out[d];
    if (run < 4) {  // shorter runs stay element by element: a memcpy call costs more than 3 copies
      run = 1;
      loop_dims = rank;
    }
  }
  if (run > 1) {
    base = "0";
    for (int d = 0; d < loop_dims; ++d) {
      bool resized = false;
      for (const AxisTables& a : axes) resized = resized || a.dim == d;
      if (!resized) base += " + i" + std::to_string(d) + " * " + IntLiteral(strides[d]);
    }
  }
  std::string counter = c.code.Fresh("o");
  OutputLoops loops = OpenOutputLoops(c, counter, loop_dims);
  std::string target = c.outputs[0] + "[" + counter + "++]";
  std::string outside;
  for (const AxisTables& a : axes) {
    if (!a.outside.empty()) outside += (outside.empty() ? "" : " || ") + a.outside + "[i" + std::to_string(a.dim) + "]";
  }
  if (!outside.empty()) {
    c.code.Line("if (" + outside + ") { " + target + " = " + type + "(" +
                FloatLiteral(attrs.GetFloat("extrapolation_value")) + "); continue; }");
  }
  // Each resized axis contributes a loop over its taps (or one read when it has a single tap).
  std::string offset = base, weight;
  int tap_loops = 0;
  for (const AxisTables& a : axes) {
    std::string row = "i" + std::to_string(a.dim) + " * " + IntLiteral(a.taps);
    std::string at = row;
    if (a.taps > 1) {
      std::string t = "tap" + std::to_string(a.dim);
      if (tap_loops++ == 0) c.code.Line(type + " sum = 0;");
      c.code.Open("for (int64_t " + t + " = 0; " + t + " < " + IntLiteral(a.taps) + "; ++" + t + ")");
      at += " + " + t;
    }
    offset += " + " + a.offsets + "[" + at + "]";
    if (!a.weights.empty()) weight += a.weights + "[" + at + "] * ";
  }
  std::string value = c.inputs[0] + "[" + offset + "]";
  if (run > 1) {
    c.code.Line("std::memcpy(" + c.outputs[0] + " + " + counter + "++ * " + IntLiteral(run) + ", " + c.inputs[0] +
                " + " + offset + ", " + IntLiteral(run) + " * sizeof(" + type + "));");
  } else if (tap_loops == 0) {
    c.code.Line(target + " = " + (weight.empty() ? value : weight + value) + ";");
  } else {
    c.code.Line("sum += " + weight + value + ";");
    for (int k = 0; k < tap_loops; ++k) c.code.Close();
    c.code.Line(target + " = sum;");
  }
  CloseOutputLoops(c, loops);
}

}  // namespace kiln::backend
