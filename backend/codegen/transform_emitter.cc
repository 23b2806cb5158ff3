// Data-movement ops as loops: transpose, concatenate, strided slice, take (gather), split, pad,
// tile, trilu and layout_transform.
#include <algorithm>

#include "backend/codegen/emitter.h"
#include "ir/layout.h"
#include "ir/ops/infer_util.h"
#include "runtime/error.h"

namespace kiln::backend {
namespace {

// out[o++] = in[offset] over the output's elements in order; `offset` is the sum of `terms`,
// expressions in the output's loop indices i0, i1, ...
void CopyByOffset(EmitContext& c, const std::vector<std::string>& terms) {
  std::string counter = c.code.Fresh("o");
  OutputLoops loops = OpenOutputLoops(c, counter);
  std::string offset;
  for (const std::string& term : terms) offset += (offset.empty() ? "" : " + ") + term;
  c.code.Line(c.outputs[0] + "[" + counter + "++] = " + c.inputs[0] + "[" + (offset.empty() ? "0" : offset) + "];");
  CloseOutputLoops(c, loops);
}

std::string Index(size_t d) { return "i" + std::to_string(d); }

}  // namespace

// A transpose whose output rows read the input at a stride (its last axis is not the input's):
// blocks of kTransposeBlock x kTransposeBlock elements between the output axis that reads the
// input's rows (`rows`) and the last, so that each block's reads and writes stay in L1 (element by
// element in output order, BERT's key transpose [128, 12, 64] -> [12, 64, 128] missed the cache on
// every read: 150 us on one core). A task is a block of rows at each index of the other axes (or
// one block, where that leaves too few tasks). Both axes of the block at least kMinTransposeBlock
// long: blocks of a few elements cost more in index arithmetic than they save (the element loops
// of EmitTranspose instead).
constexpr int64_t kTransposeBlock = 16;
constexpr int64_t kMinTransposeBlock = 8;
constexpr int64_t kMinTransposeTasks = 16;

void EmitBlockedTranspose(EmitContext& c, const std::vector<int64_t>& axes, size_t rows) {
  const auto& in = c.input_types[0].shape;
  const auto& out = c.output_types[0].shape;
  const size_t last = out.size() - 1;
  std::vector<int64_t> in_strides = ir::RowStrides(in), out_strides = ir::RowStrides(out);
  // Block counts are printed as rounded-up quotients of the extents' literals (CeilDivText).
  const int64_t row_blocks = (out[rows] + kTransposeBlock - 1) / kTransposeBlock;
  const std::string row_blocks_text = CeilDivText(c.code, out[rows], kTransposeBlock);
  int64_t others = 1;
  for (size_t d = 0; d < last; ++d) others *= d == rows ? 1 : out[d];
  // A task is a block of rows, whole, unless that leaves too few tasks: then a block (BERT's key
  // transpose in tasks of single blocks took 130 us instead of 45).
  // (Where extents vary, whole rows: the split cannot depend on their values.)
  const bool column_tasks = !c.code.extents_vary() && row_blocks * others < kMinTransposeTasks &&
                            (out[last] + kTransposeBlock - 1) / kTransposeBlock > 1;
  const std::string column_blocks_text = CeilDivText(c.code, out[last], kTransposeBlock);
  std::string tasks = IntLiteral(row_blocks * others * (column_tasks ? (out[last] + kTransposeBlock - 1) / kTransposeBlock : 1));
  if (c.code.extents_vary()) {
    tasks = "(" + row_blocks_text + " * " + IntLiteral(others) + (column_tasks ? " * " + column_blocks_text : "") + ")";
  }
  if (c.parallel) {
    std::vector<ParallelBuffer> buffers;
    AddParallelBuffer(&buffers, c.inputs[0], c.input_types[0], false);
    AddParallelBuffer(&buffers, c.outputs[0], c.output_types[0], true);
    c.code.Open("");  // a scope of its own (context_)
    OpenParallelFor(c.code, buffers, tasks, c.output_types[0].NumElements());
    c.code.Open("for (int64_t task_ = begin_; task_ < end_; ++task_)");
  } else {
    c.code.Open("for (int64_t task_ = 0; task_ < " + tasks + "; ++task_)");
  }
  c.code.Line("int64_t rest_ = task_;");
  if (column_tasks) {
    c.code.Line("const int64_t column_ = rest_ % " + column_blocks_text + " * " + IntLiteral(kTransposeBlock) + ";");
    c.code.Line("rest_ /= " + column_blocks_text + ";");
  }
  c.code.Line("const int64_t block_ = rest_ % " + row_blocks_text + ";");
  c.code.Line("rest_ /= " + row_blocks_text + ";");
  std::string from = c.inputs[0], to = c.outputs[0];
  for (size_t d = last; d-- > 0;) {
    if (d == rows) continue;
    std::string i = Index(d);
    c.code.Line("const int64_t " + i + " = rest_ % " + IntLiteral(out[d]) + ";");
    c.code.Line("rest_ /= " + IntLiteral(out[d]) + ";");
    from += " + " + i + " * " + IntLiteral(in_strides[axes[d]]);
    to += " + " + i + " * " + IntLiteral(out_strides[d]);
  }
  c.code.Line("const auto* from_ = " + from + ";");
  c.code.Line("auto* to_ = " + to + ";");
  c.code.Line("const int64_t r0_ = block_ * " + IntLiteral(kTransposeBlock) + ", r1_ = std::min<int64_t>(r0_ + " +
              IntLiteral(kTransposeBlock) + ", " + IntLiteral(out[rows]) + ");");
  if (column_tasks) {  // the task's block of columns
    c.code.Open("");
    c.code.Line("const int64_t l0_ = column_;");
  } else {
    c.code.Open("for (int64_t l0_ = 0; l0_ < " + IntLiteral(out[last]) + "; l0_ += " + IntLiteral(kTransposeBlock) + ")");
  }
  c.code.Line("const int64_t l1_ = std::min<int64_t>(l0_ + " + IntLiteral(kTransposeBlock) + ", " +
              IntLiteral(out[last]) + ");");
  c.code.Open("for (int64_t r_ = r0_; r_ < r1_; ++r_)");
  c.code.Open("for (int64_t l_ = l0_; l_ < l1_; ++l_)");
  c.code.Line("to_[r_ * " + IntLiteral(out_strides[rows]) + " + l_] = from_[r_ + l_ * " +
              IntLiteral(in_strides[axes[last]]) + "];");
  c.code.Close();
  c.code.Close();
  c.code.Close();
  c.code.Close();  // the task loop
  if (c.parallel) {
    CloseParallelFor(c.code);
    c.code.Close();
  }
}

void EmitTranspose(EmitContext& c) {
  const auto& in = c.input_types[0].shape;
  std::vector<int64_t> axes = ir::TransposeAxes(c.call.attrs, in.size());
  const size_t last = in.size() - 1;
  // (Where extents vary, blocked whatever their values: the choice cannot depend on them.)
  bool long_axes = c.code.extents_vary() || (in[last] >= kMinTransposeBlock && in[axes[last]] >= kMinTransposeBlock);
  if (in.size() >= 2 && axes[last] != static_cast<int64_t>(last) && long_axes && c.output_types[0].NumElements() > 0) {
    // The output axis that runs along the input's rows.
    size_t rows = std::find(axes.begin(), axes.end(), static_cast<int64_t>(last)) - axes.begin();
    return EmitBlockedTranspose(c, axes, rows);
  }
  std::vector<int64_t> in_strides = ir::RowStrides(in);
  std::vector<std::string> terms;
  for (size_t d = 0; d < axes.size(); ++d) terms.push_back(Index(d) + " * " + IntLiteral(in_strides[axes[d]]));
  CopyByOffset(c, terms);
}

void EmitConcatenate(EmitContext& c) {
  const auto& out = c.output_types[0].shape;
  auto [axis, outer, inner] = ViewAroundAxis(c.call, out);
  std::string elem = "sizeof(" + CType(c.output_types[0].dtype) + ")";
  int64_t offset = 0;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    int64_t block = c.input_types[k].shape[axis] * inner;
    c.code.Line("for (int64_t j = 0; j < " + IntLiteral(outer) + "; ++j) std::memcpy(" + c.outputs[0] + " + j * " +
                IntLiteral(out[axis] * inner) + " + " + IntLiteral(offset) + ", " + c.inputs[k] + " + j * " +
                IntLiteral(block) + ", " + IntLiteral(block) + " * " + elem + ");");
    offset += block;
  }
}

void EmitSplit(EmitContext& c) {
  const auto& in = c.input_types[0].shape;
  auto [axis, outer, inner] = ViewAroundAxis(c.call, in);
  std::string elem = "sizeof(" + CType(c.input_types[0].dtype) + ")";
  int64_t offset = 0;
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    int64_t block = c.output_types[k].shape[axis] * inner;
    c.code.Line("for (int64_t j = 0; j < " + IntLiteral(outer) + "; ++j) std::memcpy(" + c.outputs[k] + " + j * " +
                IntLiteral(block) + ", " + c.inputs[0] + " + j * " + IntLiteral(in[axis] * inner) + " + " +
                IntLiteral(offset) + ", " + IntLiteral(block) + " * " + elem + ");");
    offset += block;
  }
}

SliceGeometry SliceGeometryOf(const ir::CallNode& call, const std::vector<int64_t>& in) {
  SliceGeometry g{std::vector<int64_t>(in.size(), 0), std::vector<int64_t>(in.size(), 1)};
  for (const ir::SlicedAxis& s : ir::SlicedAxes(in, call.attrs)) {
    g.start[s.axis] = s.first;
    g.step[s.axis] = s.step;
  }
  return g;
}

void EmitStridedSlice(EmitContext& c) {
  const auto& in = c.input_types[0].shape;
  auto [start, step] = SliceGeometryOf(c.call, in);
  std::vector<int64_t> in_strides = ir::RowStrides(in);
  std::vector<std::string> terms;
  for (size_t d = 0; d < in.size(); ++d) {
    terms.push_back("(" + IntLiteral(start[d]) + " + " + Index(d) + " * " + IntLiteral(step[d]) + ") * " +
                    IntLiteral(in_strides[d]));
  }
  CopyByOffset(c, terms);
}

void EmitTake(EmitContext& c) {
  const auto& data = c.input_types[0].shape;
  auto [axis, outer, inner] = ViewAroundAxis(c.call, data);
  int64_t count = c.input_types[1].NumElements(), n = data[axis];
  std::string elem = "sizeof(" + CType(c.input_types[0].dtype) + ")";
  c.code.Open("for (int64_t j = 0; j < " + IntLiteral(outer) + "; ++j)");
  c.code.Open("for (int64_t k = 0; k < " + IntLiteral(count) + "; ++k)");
  ReadIndex(c, "index", c.inputs[1] + "[k]", n);
  c.code.Line("std::memcpy(" + c.outputs[0] + " + (j * " + IntLiteral(count) + " + k) * " + IntLiteral(inner) + ", " +
              c.inputs[0] + " + (j * " + IntLiteral(n) + " + index) * " + IntLiteral(inner) + ", " + IntLiteral(inner) +
              " * " + elem + ");");
  c.code.Close();
  c.code.Close();
}

// tile: output element (i0, i1, ...) is input element (i0 % d0, i1 % d1, ...).
void EmitTile(EmitContext& c) {
  const auto& in = c.input_types[0].shape;
  std::vector<int64_t> in_strides = ir::RowStrides(in);
  std::vector<std::string> terms;
  for (size_t d = 0; d < in.size(); ++d) {
    terms.push_back(Index(d) + " % " + IntLiteral(in[d]) + " * " + IntLiteral(in_strides[d]));
  }
  CopyByOffset(c, terms);
}

// trilu: element (i, j) of each matrix kept when j - i >= k (upper) or j - i <= k (lower).
void EmitTrilu(EmitContext& c) {
  const auto& shape = c.input_types[0].shape;
  int64_t rows = shape[shape.size() - 2], cols = shape.back();
  int64_t k = c.call.attrs.GetInt("k");
  std::string keep = c.call.attrs.GetInt("upper") != 0 ? "j - i >= " + IntLiteral(k) : "j - i <= " + IntLiteral(k);
  std::string t = CType(c.input_types[0].dtype);
  c.code.Open("for (int64_t m = 0; m < " + IntLiteral(c.input_types[0].NumElements() / std::max<int64_t>(rows * cols, 1)) +
              "; ++m)");
  c.code.Open("for (int64_t i = 0; i < " + IntLiteral(rows) + "; ++i)");
  c.code.Open("for (int64_t j = 0; j < " + IntLiteral(cols) + "; ++j)");
  std::string at = "(m * " + IntLiteral(rows) + " + i) * " + IntLiteral(cols) + " + j";
  c.code.Line(c.outputs[0] + "[" + at + "] = " + keep + " ? " + c.inputs[0] + "[" + at + "] : " + t + "(0);");
  c.code.Close();
  c.code.Close();
  c.code.Close();
}

void EmitPad(EmitContext& c) {
  const auto& in = c.input_types[0].shape;
  const auto& pad = c.call.attrs.GetInts("pad_width");
  const std::string& mode = c.call.attrs.GetString("pad_mode");
  std::vector<int64_t> in_strides = ir::RowStrides(in);
  std::string counter = c.code.Fresh("o");
  OutputLoops loops = OpenOutputLoops(c, counter);
  c.code.Line("bool inside = true;");
  c.code.Line("int64_t index = 0;");
  for (size_t d = 0; d < in.size(); ++d) {
    std::string i = "i" + std::to_string(d);
    std::string j = "j" + std::to_string(d);
    c.code.Line("int64_t " + j + " = " + i + " - " + IntLiteral(pad[2 * d]) + ";");
    if (mode == "constant") {
      c.code.Line("inside = inside && " + j + " >= 0 && " + j + " < " + IntLiteral(in[d]) + ";");
    } else if (mode == "edge") {
      c.code.Line(j + " = " + j + " < 0 ? 0 : (" + j + " >= " + IntLiteral(in[d]) + " ? " + IntLiteral(in[d] - 1) +
                  " : " + j + ");");
    } else if (mode == "wrap") {  // the axis repeated: index modulo its length
      c.code.Line(j + " = ((" + j + " % " + IntLiteral(in[d]) + ") + " + IntLiteral(in[d]) + ") % " + IntLiteral(in[d]) +
                  ";");
    } else {  // reflect (without repeating the edge)
      c.code.Line("if (" + j + " < 0) " + j + " = -" + j + ";");
      c.code.Line("if (" + j + " >= " + IntLiteral(in[d]) + ") " + j + " = " + IntLiteral(2 * (in[d] - 1)) + " - " + j +
                  ";");
    }
    c.code.Line("index += " + j + " * " + IntLiteral(in_strides[d]) + ";");
  }
  std::string t = CType(c.input_types[0].dtype);
  c.code.Line(c.outputs[0] + "[" + counter + "++] = inside ? " + c.inputs[0] + "[index] : " + t + "(" +
              FloatLiteral(c.call.attrs.GetFloat("pad_value")) + ");");
  CloseOutputLoops(c, loops);
}

// Loops over the destination; each source index from the primal coordinates.
void EmitLayoutTransform(EmitContext& c) {
  using ir::Layout;
  Layout src = Layout::Parse(c.call.attrs.GetString("src_layout"));
  Layout dst = Layout::Parse(c.call.attrs.GetString("dst_layout"));
  std::vector<int64_t> src_strides = ir::RowStrides(c.input_types[0].shape);
  // The primal coordinate of each axis letter, in destination loop indices.
  auto coordinate = [&](char letter) {
    std::string text;
    for (int d = 0; d < dst.ndim(); ++d) {
      const Layout::Axis& a = dst.axes()[d];
      if (a.name == letter) {
        int64_t block = dst.BlockOf(letter);
        text = block == 0 ? "i" + std::to_string(d) : "i" + std::to_string(d) + " * " + IntLiteral(block);
      }
    }
    for (int d = 0; d < dst.ndim(); ++d) {
      const Layout::Axis& a = dst.axes()[d];
      if (a.factor != 0 && a.name == static_cast<char>(letter - 'A' + 'a'))
        text = "(" + text + " + i" + std::to_string(d) + ")";
    }
    return text;
  };
  std::string index;
  for (int d = 0; d < src.ndim(); ++d) {
    const Layout::Axis& a = src.axes()[d];
    char letter = a.factor != 0 ? static_cast<char>(a.name - 'a' + 'A') : a.name;
    int64_t block = a.factor != 0 ? a.factor : src.BlockOf(letter);
    std::string term = coordinate(letter);
    if (a.factor != 0)
      term = "(" + term + " % " + IntLiteral(block) + ")";
    else if (block != 0)
      term = "(" + term + " / " + IntLiteral(block) + ")";
    index += (index.empty() ? "" : " + ") + term + " * " + IntLiteral(src_strides[d]);
  }
  std::string counter = c.code.Fresh("o");
  OutputLoops loops = OpenOutputLoops(c, counter);
  c.code.Line(c.outputs[0] + "[" + counter + "++] = " + c.inputs[0] + "[" + index + "];");
  CloseOutputLoops(c, loops);
}

}  // namespace kiln::backend
