// An ElementwiseLoop step as a loop over its output shape: one flat loop when every buffer is
// read as the output is laid out, otherwise nested loops with per-buffer strides (0 on broadcast
// dimensions), a concatenation read in place choosing its part by the index along its axis. Each
// element goes through every member in registers.
#include "backend/codegen/lowering.h"
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
  std::vector<int64_t> in_strides = ir::RowStrides(in);
  size_t offset = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    strides[offset + d] = (in[d] == 1 && out[offset + d] != 1) ? 0 : in_strides[d];
  }
  return strides;
}

// A parallel flat loop is split in chunks of this many elements; a parallel nested loop in tasks of
// its inner dimensions (SplitIntoTasks).
constexpr int64_t kChunk = 4096;

// Opens the parallel loop's function over the buffers its members read and write.
void OpenParallelLoop(CodeWriter& code, const ElementwiseLoop& loop, const Plan& plan, const std::string& tasks,
                      int64_t elements) {
  std::vector<ParallelBuffer> buffers;
  for (const ElementwiseLoop::Member& member : loop.members) {
    for (const ElementwiseLoop::Operand& operand : member.operands) {
      if (operand.member >= 0) continue;
      std::vector<BufferId> read = operand.buffer >= 0 ? std::vector<BufferId>{operand.buffer} : operand.parts;
      for (BufferId b : read) AddParallelBuffer(&buffers, BufferName(plan.buffers[b]), plan.buffers[b].type, false);
    }
    if (member.output) {
      AddParallelBuffer(&buffers, BufferName(plan.buffers[*member.output]), plan.buffers[*member.output].type, true);
    }
  }
  OpenParallelFor(code, buffers, tasks, elements);
}

}  // namespace

void EmitElementwiseLoop(CodeWriter& code, const ElementwiseLoop& loop, const Plan& plan) {
  const std::vector<ElementwiseLoop::Member>& members = loop.members;
  const std::vector<int64_t>& shape = members.front().call->type().tensor().shape;
  int ndim = static_cast<int>(shape.size());
  std::vector<int64_t> out_strides = ir::RowStrides(shape);
  // Read strides of every buffer input (of each part of a concatenation read in place); one flat
  // loop when all are read as the output is laid out.
  std::vector<std::vector<std::vector<int64_t>>> strides(members.size());
  std::vector<std::vector<std::vector<std::vector<int64_t>>>> part_strides(members.size());
  bool flat = true;
  for (size_t m = 0; m < members.size(); ++m) {
    const ElementwiseLoop::Member& member = members[m];
    runtime::CheckInternal(member.call->type().tensor().shape == shape, "elementwise loop: member shapes differ");
    int param_axis = -1;
    size_t first_param = member.operands.size();
    if (FindLowering(*member.call->op)->params_along_axis) {
      param_axis = static_cast<int>(member.call->attrs.GetInt("axis"));
      if (param_axis < 0) param_axis += ndim;
      first_param = 1;
    }
    part_strides[m].resize(member.operands.size());
    for (size_t k = 0; k < member.operands.size(); ++k) {
      if (member.operands[k].member >= 0) {
        strides[m].push_back(out_strides);
        continue;
      }
      if (member.operands[k].buffer < 0) {  // a concatenation: each part read along the output
        for (BufferId part : member.operands[k].parts) {
          part_strides[m][k].push_back(ir::RowStrides(plan.buffers[part].type.shape));
        }
        strides[m].push_back(out_strides);
        flat = false;
        continue;
      }
      const ir::TensorType& read = plan.buffers[member.operands[k].buffer].type;
      strides[m].push_back(ReadStrides(read.shape, shape, k >= first_param ? param_axis : -1));
      flat = flat && strides[m].back() == out_strides;
    }
  }
  // The index of the element read at strides `s`, its index along `axis` less `offset`.
  auto index_of = [&](const std::vector<int64_t>& s, int axis = -1, int64_t offset = 0) {
    if (flat || ndim == 0) return std::string("i");
    std::string index;
    for (int d = 0; d < ndim; ++d) {
      if (s[d] == 0) continue;
      std::string i = "i" + std::to_string(d);
      if (d == axis && offset != 0) i = "(" + i + " - " + std::to_string(offset) + "LL)";
      index += (index.empty() ? "" : " + ") + i + " * " + std::to_string(s[d]) + "LL";
    }
    return index.empty() ? std::string("0") : index;
  };
  // A concatenation read in place: once the loops reach its axis, the pointer `j<m>_<k>` to the
  // part whose slice along the axis holds the elements, at that part's offset of the axes up to
  // the axis; its elements at the offset of the axes after it, the same in every part. (The part
  // chosen with each element, in a chain of conditions, the loop was scalar: DenseNet's joins of up
  // to 24 parts 5x slower than a copy.)
  auto joined_name = [](size_t m, size_t k) { return "j" + std::to_string(m) + "_" + std::to_string(k); };
  auto choose_parts = [&](int axis) {
    for (size_t m = 0; m < members.size(); ++m) {
      for (size_t k = 0; k < members[m].operands.size(); ++k) {
        const ElementwiseLoop::Operand& operand = members[m].operands[k];
        if (operand.member >= 0 || operand.buffer >= 0 || operand.axis != axis) continue;
        std::string chosen;
        int64_t offset = 0;
        for (size_t p = 0; p < operand.parts.size(); ++p) {
          const PlanBuffer& part = plan.buffers[operand.parts[p]];
          std::vector<int64_t> outer = part_strides[m][k][p];
          for (int d = axis + 1; d < ndim; ++d) outer[d] = 0;
          std::string at = BufferName(part) + " + " + index_of(outer, axis, offset);
          offset += part.type.shape[axis];
          chosen += p + 1 < operand.parts.size()
                        ? "i" + std::to_string(axis) + " < " + std::to_string(offset) + "LL ? " + at + " : "
                        : at;
        }
        const std::string type = CType(plan.buffers[operand.parts[0]].type.dtype);
        code.Line("const " + type + "* " + joined_name(m, k) + " = " + chosen + ";");
      }
    }
  };
  auto joined_value = [&](size_t m, size_t k) {
    const ElementwiseLoop::Operand& operand = members[m].operands[k];
    std::vector<int64_t> inner = part_strides[m][k][0];
    for (int d = 0; d <= operand.axis; ++d) inner[d] = 0;
    return joined_name(m, k) + "[" + index_of(inner) + "]";
  };
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  bool parallel = loop.parallel;
  int loops = flat || ndim == 0 ? 1 : ndim;
  if (parallel && (flat || ndim == 0)) OpenParallelLoop(code, loop, plan, CeilDivText(code, count, kChunk), count);
  if (flat || ndim == 0) {
    if (parallel) {
      code.Open("for (int64_t i = begin_ * " + std::to_string(kChunk) + "LL; i < std::min<int64_t>(end_ * " +
                std::to_string(kChunk) + "LL, " + std::to_string(count) + "LL); ++i)");
    } else {
      code.Open("for (int64_t i = 0; i < " + std::to_string(count) + "LL; ++i)");
    }
  } else if (parallel) {
    TaskSplit split = SplitIntoTasks(code, shape);
    OpenParallelLoop(code, loop, plan, IntLiteral(split.tasks), count);
    loops = OpenTaskLoops(code, shape, split, "", choose_parts);
  } else {
    for (int d = 0; d < ndim; ++d) {
      std::string i = "i" + std::to_string(d);
      code.Open("for (int64_t " + i + " = 0; " + i + " < " + std::to_string(shape[d]) + "LL; ++" + i + ")");
      choose_parts(d);
    }
  }
  for (size_t m = 0; m < members.size(); ++m) {
    const ElementwiseLoop::Member& member = members[m];
    std::vector<std::string> values;
    for (size_t k = 0; k < member.operands.size(); ++k) {
      const ElementwiseLoop::Operand& operand = member.operands[k];
      if (operand.member >= 0) {
        values.push_back("v" + std::to_string(operand.member));
      } else if (operand.buffer < 0) {
        values.push_back(joined_value(m, k));
      } else {
        values.push_back(BufferName(plan.buffers[operand.buffer]) + "[" + index_of(strides[m][k]) + "]");
      }
    }
    std::string expr = ElementExpression(*FindLowering(*member.call->op), *member.call, values,
                                         CType(member.call->args[0]->type().tensor().dtype));
    const ir::TensorType& out = member.call->type().tensor();
    if (out.dtype.code == kDLUInt && out.dtype.bits == 1) expr = "(" + expr + ") != 0";  // bool is 0 or 1
    std::string to = CType(out.dtype);
    std::string value = "v" + std::to_string(m);
    code.Line("const " + to + " " + value + " = static_cast<" + to + ">(" + expr + ");");
    if (member.output) {
      code.Line(BufferName(plan.buffers[*member.output]) + "[" + index_of(out_strides) + "] = " + value + ";");
    }
  }
  for (int d = 0; d < loops; ++d) code.Close();
  if (parallel) CloseParallelFor(code);
}

}  // namespace kiln::backend
