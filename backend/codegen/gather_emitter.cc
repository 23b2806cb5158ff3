// A GatherLoop step as one loop over its root's output in runs: for each run, the flat index of its
// first element is carried from the root down the tree, each op turning the index of its output
// into that of its input (a reshape keeps it, a transpose and a slice map it through their axes, a
// concatenation picks the input whose part the run lies in), and the run is copied from the leaf
// it reaches.
#include <numeric>

#include "backend/codegen/lowering.h"
#include "ir/layout.h"
#include "ir/ops/infer_util.h"
#include "runtime/error.h"

namespace kiln::backend {
namespace {

const ir::OpRef kTranspose("transpose");
const ir::OpRef kStridedSlice("strided_slice");
const ir::OpRef kConcatenate("concatenate");

const std::vector<int64_t>& ShapeOf(const ir::Expr& e) { return e->type().tensor().shape; }

int64_t Product(const std::vector<int64_t>& shape, size_t from = 0) {
  int64_t n = 1;
  for (size_t d = from; d < shape.size(); ++d) n *= shape[d];
  return n;
}

// The index along each axis of the element at flat index `flat` of a tensor of `shape`, as C++
// expressions (axes of extent 1: "0").
std::vector<std::string> AxisIndices(const std::vector<int64_t>& shape, const std::string& flat) {
  std::vector<int64_t> strides = ir::RowStrides(shape);
  std::vector<std::string> indices;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) {
      indices.push_back("0");
      continue;
    }
    std::string index = strides[d] == 1 ? flat : "(" + flat + " / " + IntLiteral(strides[d]) + ")";
    if (d > 0) index = "(" + index + " % " + IntLiteral(shape[d]) + ")";
    indices.push_back(index);
  }
  return indices;
}

class GatherWriter {
 public:
  GatherWriter(CodeWriter& code, const GatherLoop& loop, const Plan& plan) : code_(code), loop_(loop), plan_(plan) {}

  // Copies the run whose first element is at `flat` in node `n`'s output to the root's output at
  // `out_flat`.
  void Node(int n, const std::string& flat, const std::string& out_flat) {
    const GatherLoop::Node& node = loop_.nodes[n];
    if (node.call == nullptr) {
      const PlanBuffer& out = plan_.buffers[loop_.output];
      std::string leaf = BufferName(plan_.buffers[node.leaf]);
      code_.Line("std::memcpy(" + BufferName(out) + " + " + out_flat + ", " + leaf + " + " + flat + ", " +
                 IntLiteral(loop_.run) + " * sizeof(" + CType(out.type.dtype) + "));");
      return;
    }
    const ir::CallNode& call = *node.call;
    if (FindLowering(*call.op)->copy) return Node(node.inputs[0], flat, out_flat);
    if (kConcatenate.Is(call.op)) return Concatenate(node, flat, out_flat);
    std::vector<int64_t> in = ShapeOf(call.args[0]), in_strides = ir::RowStrides(in);
    std::vector<std::string> index = AxisIndices(call.type().tensor().shape, flat);
    std::string source;
    auto add = [&](const std::string& term) { source += (source.empty() ? "" : " + ") + term; };
    if (kTranspose.Is(call.op)) {
      std::vector<int64_t> axes = ir::TransposeAxes(call.attrs, in.size());
      for (size_t d = 0; d < axes.size(); ++d) {
        if (index[d] != "0") add(index[d] + " * " + IntLiteral(in_strides[axes[d]]));
      }
    } else {
      runtime::CheckInternal(kStridedSlice.Is(call.op), "gather loop: no index mapping for ", call.op->name);
      SliceGeometry slice = SliceGeometryOf(call, in);
      int64_t base = 0;
      for (size_t d = 0; d < in.size(); ++d) {
        base += slice.start[d] * in_strides[d];
        if (index[d] != "0") add(index[d] + " * " + IntLiteral(slice.step[d] * in_strides[d]));
      }
      if (base != 0) add(IntLiteral(base));
    }
    std::string name = code_.Fresh("f");
    code_.Line("const int64_t " + name + " = " + (source.empty() ? "0" : source) + ";");
    Node(node.inputs[0], name, out_flat);
  }

 private:
  // The input whose part of the joined axis holds the run, by ranges of that axis.
  void Concatenate(const GatherLoop::Node& node, const std::string& flat, const std::string& out_flat) {
    const ir::CallNode& call = *node.call;
    AxisView view = ViewAroundAxis(call, call.type().tensor().shape);
    int64_t extent = call.type().tensor().shape[view.axis];
    std::string outer = code_.Fresh("outer"), at = code_.Fresh("at"), rest = code_.Fresh("rest");
    code_.Line("const int64_t " + outer + " = " + flat + " / " + IntLiteral(extent * view.inner) + ";");
    code_.Line("const int64_t " + at + " = " + flat + " / " + IntLiteral(view.inner) + " % " + IntLiteral(extent) +
               ";");
    code_.Line("const int64_t " + rest + " = " + flat + " % " + IntLiteral(view.inner) + ";");
    int64_t first = 0;
    for (size_t k = 0; k < call.args.size(); ++k) {
      int64_t part = ShapeOf(call.args[k])[view.axis];
      if (part == 0) continue;
      bool last = first + part == extent;
      std::string condition = last ? "" : "if (" + at + " < " + IntLiteral(first + part) + ")";
      code_.Open(std::string(first == 0 ? "" : "else ") + condition);
      std::string name = code_.Fresh("f");
      code_.Line("const int64_t " + name + " = " + outer + " * " + IntLiteral(part * view.inner) + " + (" + at + " - " +
                 IntLiteral(first) + ") * " + IntLiteral(view.inner) + " + " + rest + ";");
      Node(node.inputs[k], name, out_flat);
      code_.Close();
      first += part;
    }
  }

  CodeWriter& code_;
  const GatherLoop& loop_;
  const Plan& plan_;
};

}  // namespace

int64_t GatherRunBound(const ir::CallNode& call) {
  const Lowering* lowering = FindLowering(*call.op);
  if (lowering == nullptr || !call.type().is_tensor()) return 0;
  const std::vector<int64_t>& out = call.type().tensor().shape;
  if (lowering->copy) return Product(out);
  if (kTranspose.Is(call.op)) {
    std::vector<int64_t> axes = ir::TransposeAxes(call.attrs, out.size());
    int64_t run = 1;
    for (int64_t d = static_cast<int64_t>(out.size()) - 1; d >= 0 && axes[d] == d; --d) run *= out[d];
    return run;
  }
  if (kStridedSlice.Is(call.op)) {
    const std::vector<int64_t>& in = ShapeOf(call.args[0]);
    SliceGeometry slice = SliceGeometryOf(call, in);
    std::vector<int64_t> in_strides = ir::RowStrides(in);
    // The axes at the back that are taken whole, and the one before them when its step is 1.
    int64_t run = 1, d = static_cast<int64_t>(out.size()) - 1;
    for (; d >= 0 && slice.step[d] == 1; --d) {
      run *= out[d];
      if (out[d] != in[d]) {
        --d;
        break;
      }
    }
    // Every input offset a run starts at is a multiple of the run: the slice's start on each axis,
    // and its steps on the axes before those.
    for (size_t a = 0; a < in.size(); ++a) {
      run = std::gcd(run, std::abs(slice.start[a] * in_strides[a]));
      if (static_cast<int64_t>(a) <= d) run = std::gcd(run, std::abs(slice.step[a] * in_strides[a]));
    }
    return run;
  }
  if (kConcatenate.Is(call.op)) {
    AxisView view = ViewAroundAxis(call, out);
    int64_t parts = 0;
    for (const ir::Expr& arg : call.args) parts = std::gcd(parts, ShapeOf(arg)[view.axis]);
    return view.inner * parts;
  }
  return 0;
}

void EmitGatherLoop(CodeWriter& code, const GatherLoop& loop, const Plan& plan) {
  const PlanBuffer& out = plan.buffers[loop.output];
  int64_t runs = out.type.NumElements() / loop.run;
  GatherWriter writer(code, loop, plan);
  if (!loop.parallel) {
    code.Open("for (int64_t run_ = 0; run_ < " + IntLiteral(runs) + "; ++run_)");
  } else {
    std::vector<ParallelBuffer> buffers;
    AddParallelBuffer(&buffers, BufferName(out), out.type, true);
    for (const GatherLoop::Node& node : loop.nodes) {
      if (node.call == nullptr) AddParallelBuffer(&buffers, BufferName(plan.buffers[node.leaf]), out.type, false);
    }
    OpenParallelFor(code, buffers, runs, out.type.NumElements());
    code.Open("for (int64_t run_ = begin_; run_ < end_; ++run_)");
  }
  code.Line("const int64_t out_ = run_ * " + IntLiteral(loop.run) + ";");
  writer.Node(0, "out_", "out_");
  code.Close();
  if (loop.parallel) CloseParallelFor(code);
}

}  // namespace kiln::backend
