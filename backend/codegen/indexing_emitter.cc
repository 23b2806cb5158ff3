// Ops that read or write at positions held in a tensor of indices, as loops: gather (ONNX's
// GatherElements), gather_nd, scatter_elements, scatter_nd and one_hot. gather_nd's and
// scatter_nd's indices hold one index tuple per column (ir/ops/indexing.cc).
#include "backend/codegen/emitter.h"
#include "ir/type.h"

namespace kiln::backend {
namespace {

int64_t Product(std::vector<int64_t>::const_iterator begin, std::vector<int64_t>::const_iterator end) {
  int64_t product = 1;
  for (auto it = begin; it != end; ++it) product *= *it;
  return product;
}

// The offset of data's element at (i0, i1, ...) with the index read from `index` in place of i<axis>.
std::string ElementOffset(const std::vector<int64_t>& data, int axis, const std::string& index) {
  std::vector<int64_t> strides = ir::RowStrides(data);
  std::string offset = index + " * " + IntLiteral(strides[axis]);
  for (size_t d = 0; d < data.size(); ++d) {
    if (static_cast<int>(d) != axis) offset += " + i" + std::to_string(d) + " * " + IntLiteral(strides[d]);
  }
  return offset;
}

// `target` = `update` combined by a scatter's reduction.
std::string Combine(const std::string& reduction, const std::string& target, const std::string& update,
                    const std::string& type) {
  if (reduction == "add") return target + " += " + update + ";";
  if (reduction == "mul") return target + " *= " + update + ";";
  if (reduction == "min") return target + " = std::min<" + type + ">(" + target + ", " + update + ");";
  if (reduction == "max") return target + " = std::max<" + type + ">(" + target + ", " + update + ");";
  return target + " = " + update + ";";
}

// Declares `offset`: the data offset of index tuple `tuple` (a variable) of the column-wise
// indices, after `base`, over the data dims from `first`.
void TupleOffset(EmitContext& c, const std::string& offset, const std::string& base, const std::string& tuple,
                 int64_t tuples, int64_t length, const std::vector<int64_t>& data, int64_t first) {
  std::vector<int64_t> strides = ir::RowStrides(data);
  c.code.Line("int64_t " + offset + " = " + base + ";");
  for (int64_t j = 0; j < length; ++j) {
    c.code.Open("");
    ReadIndex(c, "index", c.inputs[1] + "[" + IntLiteral(j * tuples) + " + " + tuple + "]", data[first + j]);
    c.code.Line(offset + " += index * " + IntLiteral(strides[first + j]) + ";");
    c.code.Close();
  }
}

}  // namespace

// gather: out[i...] = data[i... with i<axis> replaced by indices[i...]].
void EmitGather(EmitContext& c) {
  const auto& data = c.input_types[0].shape;
  int axis = ViewAroundAxis(c.call, data).axis;
  std::string counter = c.code.Fresh("o");
  c.code.Line("int64_t " + counter + " = 0;");
  int open = OpenLoops(c.code, c.input_types[1].shape);
  ReadIndex(c, "index", c.inputs[1] + "[" + counter + "]", data[axis]);
  c.code.Line(c.outputs[0] + "[" + counter + "++] = " + c.inputs[0] + "[" + ElementOffset(data, axis, "index") + "];");
  CloseLoops(c.code, open);
}

// scatter_elements: out = data, then out[i... with i<axis> replaced by indices[i...]] (reduced
// with) updates[i...], in order.
void EmitScatterElements(EmitContext& c) {
  const auto& data = c.input_types[0].shape;
  int axis = ViewAroundAxis(c.call, data).axis;
  std::string type = CType(c.input_types[0].dtype);
  c.code.Line("std::memcpy(" + c.outputs[0] + ", " + c.inputs[0] + ", " + IntLiteral(c.input_types[0].NumElements()) +
              " * sizeof(" + type + "));");
  std::string counter = c.code.Fresh("o");
  c.code.Line("int64_t " + counter + " = 0;");
  int open = OpenLoops(c.code, c.input_types[1].shape);
  ReadIndex(c, "index", c.inputs[1] + "[" + counter + "]", data[axis]);
  c.code.Line(Combine(c.call.attrs.GetString("reduction"), c.outputs[0] + "[" + ElementOffset(data, axis, "index") + "]",
                      c.inputs[2] + "[" + counter + "++]", type));
  CloseLoops(c.code, open);
}

// gather_nd: each index tuple (a column of indices) picks a slice of data within its batch.
void EmitGatherNd(EmitContext& c) {
  const auto& data = c.input_types[0].shape;
  const auto& indices = c.input_types[1].shape;
  int64_t batch_dims = c.call.attrs.GetInt("batch_dims"), length = indices[0];
  int64_t tuples = Product(indices.begin() + 1, indices.end());
  int64_t per_batch = Product(indices.begin() + 1 + batch_dims, indices.end());
  int64_t batch_size = Product(data.begin() + batch_dims, data.end());
  int64_t slice = Product(data.begin() + batch_dims + length, data.end());
  c.code.Open("for (int64_t t = 0; t < " + IntLiteral(tuples) + "; ++t)");
  TupleOffset(c, "at", "t / " + IntLiteral(std::max<int64_t>(per_batch, 1)) + " * " + IntLiteral(batch_size), "t",
              tuples, length, data, batch_dims);
  c.code.Line("std::memcpy(" + c.outputs[0] + " + t * " + IntLiteral(slice) + ", " + c.inputs[0] + " + at, " +
              IntLiteral(slice) + " * sizeof(" + CType(c.input_types[0].dtype) + "));");
  c.code.Close();
}

// scatter_nd: out = data, then each index tuple's slice of out (reduced with) its update slice, in order.
void EmitScatterNd(EmitContext& c) {
  const auto& data = c.input_types[0].shape;
  const auto& indices = c.input_types[1].shape;
  int64_t length = indices[0], tuples = Product(indices.begin() + 1, indices.end());
  int64_t slice = Product(data.begin() + length, data.end());
  std::string type = CType(c.input_types[0].dtype);
  c.code.Line("std::memcpy(" + c.outputs[0] + ", " + c.inputs[0] + ", " + IntLiteral(c.input_types[0].NumElements()) +
              " * sizeof(" + type + "));");
  c.code.Open("for (int64_t t = 0; t < " + IntLiteral(tuples) + "; ++t)");
  TupleOffset(c, "at", "0", "t", tuples, length, data, 0);
  c.code.Open("for (int64_t e = 0; e < " + IntLiteral(slice) + "; ++e)");
  c.code.Line(Combine(c.call.attrs.GetString("mode"), c.outputs[0] + "[at + e]",
                      c.inputs[2] + "[t * " + IntLiteral(slice) + " + e]", type));
  c.code.Close();
  c.code.Close();
}

// one_hot: an index outside [-depth, depth) leaves its row all off_value (ONNX's rule).
void EmitOneHot(EmitContext& c) {
  const auto& indices = c.input_types[0].shape;
  int64_t depth = c.call.attrs.GetInt("depth");
  int axis = static_cast<int>(c.call.attrs.GetInt("axis"));
  if (axis < 0) axis += static_cast<int>(indices.size()) + 1;
  int64_t outer = Product(indices.begin(), indices.begin() + axis), inner = Product(indices.begin() + axis, indices.end());
  c.code.Open("for (int64_t o = 0; o < " + IntLiteral(outer) + "; ++o)");
  c.code.Open("for (int64_t i = 0; i < " + IntLiteral(inner) + "; ++i)");
  c.code.Line("int64_t index = " + c.inputs[0] + "[o * " + IntLiteral(inner) + " + i];");
  c.code.Line("if (index < 0) index += " + IntLiteral(depth) + ";");
  c.code.Line("for (int64_t k = 0; k < " + IntLiteral(depth) + "; ++k) " + c.outputs[0] + "[(o * " + IntLiteral(depth) +
              " + k) * " + IntLiteral(inner) + " + i] = k == index ? " + c.inputs[1] + "[0] : " + c.inputs[2] + "[0];");
  c.code.Close();
  c.code.Close();
}

}  // namespace kiln::backend
