// Reductions as loops: over the kept dimensions outside, the reduced ones inside, accumulating
// in double for floating point; argmax / argmin; cumsum; and global average pooling.
#include <algorithm>
#include <limits>

#include "backend/codegen/emitter.h"
#include "ir/layout.h"
#include "runtime/error.h"

namespace kiln::backend {
namespace {

const ir::OpRef kSum("sum");
const ir::OpRef kMean("mean");
const ir::OpRef kProd("prod");
const ir::OpRef kMax("max");
const ir::OpRef kMin("min");
const ir::OpRef kArgMax("argmax");

}  // namespace

void EmitReduce(EmitContext& c) {
  const auto& in = c.input_types[0];
  const ir::OpDef* op = c.call.op;
  bool sum = kSum.Is(op) || kMean.Is(op);
  std::vector<bool> reduced(in.shape.size(), c.call.attrs.GetInts("axis").empty());
  for (int64_t axis : c.call.attrs.GetInts("axis")) reduced[axis < 0 ? axis + in.ndim() : axis] = true;
  std::vector<int64_t> strides = ir::RowStrides(in.shape);
  std::string t = CType(in.dtype);
  bool is_float = in.dtype.code == kDLFloat;
  std::string acc_type = is_float ? "double" : t;
  std::string init = sum            ? "0"
                     : kProd.Is(op) ? "1"
                     : kMax.Is(op)  ? (is_float ? "-INFINITY" : "std::numeric_limits<" + t + ">::lowest()")
                                    : (is_float ? "INFINITY" : "std::numeric_limits<" + t + ">::max()");
  int64_t count = 1;
  for (size_t d = 0; d < in.shape.size(); ++d) count *= reduced[d] ? in.shape[d] : 1;

  std::string counter = c.code.Fresh("o");
  c.code.Line("int64_t " + counter + " = 0;");
  int open = 0;
  for (size_t d = 0; d < in.shape.size(); ++d) {
    if (reduced[d]) continue;
    std::string i = "i" + std::to_string(d);
    c.code.Open("for (int64_t " + i + " = 0; " + i + " < " + std::to_string(in.shape[d]) + "LL; ++" + i + ")");
    ++open;
  }
  c.code.Line(acc_type + " acc = " + init + ";");
  for (size_t d = 0; d < in.shape.size(); ++d) {
    if (!reduced[d]) continue;
    std::string i = "i" + std::to_string(d);
    c.code.Open("for (int64_t " + i + " = 0; " + i + " < " + std::to_string(in.shape[d]) + "LL; ++" + i + ")");
  }
  std::string index;
  for (size_t d = 0; d < in.shape.size(); ++d) {
    index +=
        (index.empty() ? "" : " + ") + std::string("i") + std::to_string(d) + " * " + std::to_string(strides[d]) + "LL";
  }
  std::string value = c.inputs[0] + "[" + (index.empty() ? "0" : index) + "]";
  if (sum) c.code.Line("acc += " + value + ";");
  if (kProd.Is(op)) c.code.Line("acc *= " + value + ";");
  if (kMax.Is(op)) c.code.Line("acc = std::max<" + acc_type + ">(acc, " + value + ");");
  if (kMin.Is(op)) c.code.Line("acc = std::min<" + acc_type + ">(acc, " + value + ");");
  for (size_t d = 0; d < in.shape.size(); ++d) {
    if (reduced[d]) c.code.Close();
  }
  // (Where extents vary, the count is the integer literal the dimensions make an expression of.)
  std::string divisor = c.code.extents_vary() ? "static_cast<double>(" + IntLiteral(count) + ")"
                                              : std::to_string(count) + ".0";
  std::string result = kMean.Is(op) ? "acc / " + divisor : "acc";
  c.code.Line(c.outputs[0] + "[" + counter + "++] = static_cast<" + CType(c.output_types[0].dtype) + ">(" + result +
              ");");
  for (int k = 0; k < open; ++k) c.code.Close();
}

// argmax / argmin: for each position of the other dimensions, the first (or, with
// select_last_index, the last) index along the axis holding the largest / smallest value.
void EmitArgReduce(EmitContext& c) {
  const auto& in = c.input_types[0].shape;
  bool largest = kArgMax.Is(c.call.op);
  int axis = static_cast<int>(c.call.attrs.GetInt("axis"));
  if (axis < 0) axis += static_cast<int>(in.size());
  bool last = c.call.attrs.GetInt("select_last_index") != 0;
  std::string better = std::string(largest ? ">" : "<") + (last ? "=" : "");
  AxisView view = ViewAroundAxis(c.call, in);
  c.code.Open("for (int64_t outer = 0; outer < " + IntLiteral(view.outer) + "; ++outer)");
  c.code.Open("for (int64_t inner = 0; inner < " + IntLiteral(view.inner) + "; ++inner)");
  std::string at = c.inputs[0] + "[(outer * " + IntLiteral(in[axis]) + " + k) * " + IntLiteral(view.inner) + " + inner]";
  c.code.Line("int64_t best = 0;");
  c.code.Line("auto best_value = " + c.inputs[0] + "[outer * " + IntLiteral(in[axis] * view.inner) + " + inner];");
  c.code.Open("for (int64_t k = 1; k < " + IntLiteral(in[axis]) + "; ++k)");
  c.code.Open("if (" + at + " " + better + " best_value)");
  c.code.Line("best_value = " + at + ";");
  c.code.Line("best = k;");
  c.code.Close();
  c.code.Close();
  c.code.Line(c.outputs[0] + "[outer * " + IntLiteral(view.inner) + " + inner] = best;");
  c.code.Close();
  c.code.Close();
}

// cumsum: running sums along the axis in its own type, from its end with `reverse`; `exclusive`
// stores each sum before adding the element.
void EmitCumsum(EmitContext& c) {
  const auto& in = c.input_types[0].shape;
  auto [axis, outer, inner] = ViewAroundAxis(c.call, in);
  EmitCumsumLoops(c, IntLiteral(outer), IntLiteral(in[axis]), IntLiteral(inner));
}

void EmitCumsumLoops(EmitContext& c, const std::string& outer, const std::string& extent, const std::string& inner) {
  bool reverse = c.call.attrs.GetInt("reverse") != 0, exclusive = c.call.attrs.GetInt("exclusive") != 0;
  c.code.Open("for (int64_t outer = 0; outer < " + outer + "; ++outer)");
  c.code.Open("for (int64_t inner = 0; inner < " + inner + "; ++inner)");
  c.code.Line(CType(c.input_types[0].dtype) + " sum = 0;");
  c.code.Open(reverse ? "for (int64_t k = " + extent + " - 1; k >= 0; --k)"
                      : "for (int64_t k = 0; k < " + extent + "; ++k)");
  std::string at = "(outer * " + extent + " + k) * " + inner + " + inner";
  if (exclusive) c.code.Line(c.outputs[0] + "[" + at + "] = sum;");
  c.code.Line("sum += " + c.inputs[0] + "[" + at + "];");
  if (!exclusive) c.code.Line(c.outputs[0] + "[" + at + "] = sum;");
  c.code.Close();
  c.code.Close();
  c.code.Close();
}

// Sums in double per channel; in NCHW[x]c the `block` channels of a plane side by side. Planes are
// split across threads when the input is large.
void EmitGlobalAvgPool2D(EmitContext& c) {
  runtime::Check(c.input_types[0].dtype == runtime::kFloat32, "nn.global_avg_pool2d on ",
                 runtime::DTypeToString(c.input_types[0].dtype),
                 " is not supported by the host code generator (float32 only)");
  const auto& data = c.input_types[0].shape;
  int64_t block = std::max<int64_t>(1, ir::ChannelBlock(c.call.attrs.GetString("layout")));
  int64_t planes = data[0] * data[1], size = data[2] * data[3];
  std::string i = c.code.Fresh("plane");
  bool parallel = c.parallel && planes > 1;  // planes split across threads (EfficientNet's squeeze-and-excitation)
  if (parallel) {
    std::vector<ParallelBuffer> buffers;
    AddParallelBuffer(&buffers, c.inputs[0], c.input_types[0], false);
    AddParallelBuffer(&buffers, c.outputs[0], c.output_types[0], true);
    c.code.Open("");
    OpenParallelFor(c.code, buffers, planes, planes * size);
    c.code.Open("for (int64_t " + i + " = begin_; " + i + " < end_; ++" + i + ")");
  } else {
    c.code.Open("for (int64_t " + i + " = 0; " + i + " < " + IntLiteral(planes) + "; ++" + i + ")");
  }
  // Four partial sums, positions j % 4: with one, each addition waited for the one before
  // (EfficientNet's [1, 15 x 8, 80, 80] took 79 us on one Zen 5 core, 10 GB/s).
  const std::string b = IntLiteral(block);
  c.code.Line("double sum[4][" + b + "] = {};");
  c.code.Line("const float* x = " + c.inputs[0] + " + " + i + " * " + IntLiteral(size * block) + ";");
  c.code.Open("for (int64_t j = 0; j < " + IntLiteral(size / 4 * 4) + "; j += 4)");
  for (int u = 0; u < 4; ++u) {
    c.code.Line("for (int64_t k = 0; k < " + b + "; ++k) sum[" + std::to_string(u) + "][k] += x[(j + " +
                std::to_string(u) + ") * " + b + " + k];");
  }
  c.code.Close();
  c.code.Open("for (int64_t j = " + IntLiteral(size / 4 * 4) + "; j < " + IntLiteral(size) + "; ++j)");
  c.code.Line("for (int64_t k = 0; k < " + b + "; ++k) sum[0][k] += x[j * " + b + " + k];");
  c.code.Close();
  c.code.Line("for (int64_t k = 0; k < " + b + "; ++k) " + c.outputs[0] + "[" + i + " * " + b +
              " + k] = static_cast<float>((sum[0][k] + sum[1][k] + sum[2][k] + sum[3][k]) / " +
              IntLiteral(size) + ");");
  c.code.Close();
  if (parallel) {
    CloseParallelFor(c.code);
    c.code.Close();
  }
}

// nn.max_pool2d_with_indices: each window's first largest value and its index in the flattened
// input (row-major, or with storage_order 1 column-major over H and W); padding is never chosen.
void EmitMaxPool2DWithIndices(EmitContext& c) {
  const auto& in = c.input_types[0].shape;
  const auto& out = c.output_types[0].shape;
  const ir::Attrs& attrs = c.call.attrs;
  const auto& pool = attrs.GetInts("pool_size");
  const auto& strides = attrs.GetInts("strides");
  const auto& dilation = attrs.GetInts("dilation");
  const auto& padding = attrs.GetInts("padding");
  bool column_major = attrs.GetInt("storage_order") != 0;
  std::string h = IntLiteral(in[2]), w = IntLiteral(in[3]);
  c.code.Open("for (int64_t plane = 0; plane < " + IntLiteral(in[0] * in[1]) + "; ++plane)");
  c.code.Open("for (int64_t oh = 0; oh < " + IntLiteral(out[2]) + "; ++oh)");
  c.code.Open("for (int64_t ow = 0; ow < " + IntLiteral(out[3]) + "; ++ow)");
  c.code.Line("int64_t best = -1;");
  c.code.Open("for (int64_t kh = 0; kh < " + IntLiteral(pool[0]) + "; ++kh)");
  c.code.Line("int64_t ih = oh * " + IntLiteral(strides[0]) + " - " + IntLiteral(padding[0]) + " + kh * " +
              IntLiteral(dilation[0]) + ";");
  c.code.Line("if (ih < 0 || ih >= " + h + ") continue;");
  c.code.Open("for (int64_t kw = 0; kw < " + IntLiteral(pool[1]) + "; ++kw)");
  c.code.Line("int64_t iw = ow * " + IntLiteral(strides[1]) + " - " + IntLiteral(padding[1]) + " + kw * " +
              IntLiteral(dilation[1]) + ";");
  c.code.Line("if (iw < 0 || iw >= " + w + ") continue;");
  c.code.Line("int64_t at = (plane * " + h + " + ih) * " + w + " + iw;");
  c.code.Line("if (best < 0 || " + c.inputs[0] + "[at] > " + c.inputs[0] + "[best]) best = at;");
  c.code.Close();
  c.code.Close();
  c.code.Line("int64_t o = (plane * " + IntLiteral(out[2]) + " + oh) * " + IntLiteral(out[3]) + " + ow;");
  c.code.Line(c.outputs[0] + "[o] = best < 0 ? -INFINITY : " + c.inputs[0] + "[best];");
  if (column_major) {
    c.code.Line(c.outputs[1] + "[o] = best < 0 ? -1 : (best / (" + h + " * " + w + ")) * " + h + " * " + w + " + (best % " +
                w + ") * " + h + " + (best / " + w + ") % " + h + ";");
  } else {
    c.code.Line(c.outputs[1] + "[o] = best;");
  }
  c.code.Close();
  c.code.Close();
  c.code.Close();
}

}  // namespace kiln::backend
