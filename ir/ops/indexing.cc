// Ops that read or write elements at positions held in a tensor of indices: gather (ONNX's
// GatherElements), gather_nd, scatter_elements, scatter_nd and one_hot. Names, attributes and
// index layouts are Relay's: gather_nd's and scatter_nd's indices hold one index tuple per column
// (their first dimension is the tuple's length). Indices may be negative (counted from the end);
// one out of range is an error when the op runs.
#include "ir/op.h"
#include "ir/ops/infer_util.h"

namespace kiln::ir {
namespace {

using runtime::Check;

const TensorType& IndicesArg(const std::vector<Type>& args, size_t i) {
  const TensorType& indices = TensorArg(args, i);
  Check(indices.dtype.code == kDLInt, "indices must be integers, got ", DTypeToString(indices.dtype));
  return indices;
}

AttrSchema ReductionAttr(const char* name) {
  return {name, AttrKind::kString, std::string("update"), "how an update meets the value: update, add, mul, min, max"};
}

void CheckReduction(const Attrs& attrs, const char* name) {
  const std::string& reduction = attrs.GetString(name);
  Check(reduction == "update" || reduction == "add" || reduction == "mul" || reduction == "min" || reduction == "max",
        name, " '", reduction, "' is not update, add, mul, min or max");
}

// gather and scatter_elements: indices of data's rank whose dims fit in data's, except along the axis.
void CheckElementIndices(const TensorType& data, const TensorType& indices, int axis) {
  Check(indices.ndim() == data.ndim(), "indices ", ShapeText(indices.shape), " must have the rank of data ",
        ShapeText(data.shape));
  for (int d = 0; d < data.ndim(); ++d) {
    Check(d == axis || indices.shape[d] <= data.shape[d], "indices ", ShapeText(indices.shape), " exceed data ",
          ShapeText(data.shape), " on axis ", d);
  }
  Check(data.shape[axis] > 0 || indices.NumElements() == 0, "the axis of data is empty: no index is in range");
}

Type Gather(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  const TensorType& indices = IndicesArg(args, 1);
  Check(data.ndim() > 0, "data must have at least one dimension");
  CheckElementIndices(data, indices, NormalizeAxis(attrs.GetInt("axis"), data.ndim()));
  return Type::Tensor(indices.shape, data.dtype);
}

Type ScatterElements(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  const TensorType& indices = IndicesArg(args, 1);
  const TensorType& updates = TensorArg(args, 2);
  Check(data.ndim() > 0, "data must have at least one dimension");
  Check(updates.shape == indices.shape, "updates ", ShapeText(updates.shape), " must have the shape of indices ",
        ShapeText(indices.shape));
  Check(updates.dtype == data.dtype, "updates are ", DTypeToString(updates.dtype), " but data is ",
        DTypeToString(data.dtype));
  CheckElementIndices(data, indices, NormalizeAxis(attrs.GetInt("axis"), data.ndim()));
  CheckReduction(attrs, "reduction");
  return Type::Tensor(data);
}

// gather_nd: data (B..., X...), indices (M, B..., Y...) with b = batch_dims batch dims; the
// result (B..., Y..., X[b + M]...).
Type GatherNd(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  const TensorType& indices = IndicesArg(args, 1);
  int64_t batch = attrs.GetInt("batch_dims");
  Check(indices.ndim() >= 1, "indices must have at least one dimension (the index tuples' length first)");
  int64_t m = indices.shape[0];
  Check(batch >= 0 && batch < indices.ndim(), "batch_dims ", batch, " must be in [0, ", indices.ndim(), ")");
  Check(m >= 1 && batch + m <= data.ndim(), "index tuples of length ", m, " after ", batch,
        " batch dims do not fit data ", ShapeText(data.shape));
  for (int64_t d = 0; d < batch; ++d) {
    Check(indices.shape[1 + d] == data.shape[d], "batch dim ", d, " of indices ", ShapeText(indices.shape),
          " differs from data ", ShapeText(data.shape));
  }
  std::vector<int64_t> shape(indices.shape.begin() + 1, indices.shape.end());
  shape.insert(shape.end(), data.shape.begin() + batch + m, data.shape.end());
  return Type::Tensor(shape, data.dtype);
}

// scatter_nd: data (X...), indices (M, Y...), updates (Y..., X[M]...).
Type ScatterNd(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  const TensorType& indices = IndicesArg(args, 1);
  const TensorType& updates = TensorArg(args, 2);
  Check(indices.ndim() >= 1, "indices must have at least one dimension (the index tuples' length first)");
  int64_t m = indices.shape[0];
  Check(m >= 1 && m <= data.ndim(), "index tuples of length ", m, " do not fit data ", ShapeText(data.shape));
  std::vector<int64_t> expected(indices.shape.begin() + 1, indices.shape.end());
  expected.insert(expected.end(), data.shape.begin() + m, data.shape.end());
  Check(updates.shape == expected, "updates ", ShapeText(updates.shape), " must have shape ", ShapeText(expected),
        " for data ", ShapeText(data.shape), " and indices ", ShapeText(indices.shape));
  Check(updates.dtype == data.dtype, "updates are ", DTypeToString(updates.dtype), " but data is ",
        DTypeToString(data.dtype));
  CheckReduction(attrs, "mode");
  return Type::Tensor(data);
}

// one_hot: a new axis of `depth` values, on_value where it equals the index, off_value elsewhere.
Type OneHot(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& indices = IndicesArg(args, 0);
  const TensorType& on = TensorArg(args, 1);
  const TensorType& off = TensorArg(args, 2);
  Check(on.NumElements() == 1 && off.NumElements() == 1, "on_value and off_value must hold one value each");
  Check(on.dtype == off.dtype, "on_value is ", DTypeToString(on.dtype), " but off_value is ", DTypeToString(off.dtype));
  int64_t depth = attrs.GetInt("depth");
  Check(depth >= 0, "depth must not be negative, got ", depth);
  int axis = NormalizeAxis(attrs.GetInt("axis"), indices.ndim() + 1);
  std::vector<int64_t> shape = indices.shape;
  shape.insert(shape.begin() + axis, depth);
  return Type::Tensor(shape, on.dtype);
}

void Add(OpTable& table, OpDef op) { table[op.name] = std::move(op); }

}  // namespace

void RegisterIndexingOps(OpTable& table) {
  Add(table, {"gather", 2, 2, {{"axis", AttrKind::kInt, int64_t{0}, "the axis the indices index"}},
              OpPattern::kInjective, Gather, "data's elements at indices along an axis (ONNX GatherElements)"});
  Add(table, {"gather_nd", 2, 2, {{"batch_dims", AttrKind::kInt, int64_t{0}, "leading dims shared by data and indices"}},
              OpPattern::kInjective, GatherNd, "slices of data at index tuples (the columns of indices)"});
  Add(table, {"scatter_elements", 3, 3,
              {{"axis", AttrKind::kInt, int64_t{0}, "the axis the indices index"}, ReductionAttr("reduction")},
              OpPattern::kOpaque, ScatterElements, "data with updates written at indices along an axis"});
  Add(table, {"scatter_nd", 3, 3, {ReductionAttr("mode")}, OpPattern::kOpaque, ScatterNd,
              "data with update slices written at index tuples (the columns of indices)"});
  Add(table, {"one_hot", 3, 3,
              {{"depth", AttrKind::kInt, {}, "the new axis' length"},
               {"axis", AttrKind::kInt, int64_t{-1}, "where the new axis goes"}},
              OpPattern::kInjective, OneHot, "on_value where the new axis equals the index, off_value elsewhere"});
}

}  // namespace kiln::ir
