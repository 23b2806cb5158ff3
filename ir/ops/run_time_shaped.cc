// Ops whose shape-deciding input is given at run time (ONNX lets Reshape's shape, Squeeze's and
// Unsqueeze's axes, a reduction's axes, Slice's starts, ends, axes and steps, TopK's K and Split's
// sizes be any tensor): dyn.reshape, dyn.squeeze, dyn.unsqueeze, dyn.reduce, dyn.strided_slice,
// dyn.topk and dyn.split. Each returns its data compactly at the shape its inputs' values give,
// flat, in storage of the largest size it can have, and that shape as an int64 [rank] tensor
// (ShapeGivenBy in ir/op.h). The rank follows from the inputs' types; the extents are the kernels'
// (kernels/shape/run_time_shapes.cc). dyn.cumsum takes its axis at run time; its shape is fixed.
#include <algorithm>
#include <set>
#include <string>

#include "ir/op.h"
#include "ir/ops/infer_util.h"

namespace kiln::ir {
namespace {

using runtime::Check;

constexpr DLDataType kInt64{kDLInt, 64, 1};

// The values of a shape-deciding input: a 1-D int64 (or, for slices, int32) tensor.
int64_t Values(const std::vector<Type>& args, size_t i, const char* what, bool int32_too = false) {
  const TensorType& t = TensorArg(args, i);
  bool integer = t.dtype == kInt64 || (int32_too && t.dtype == DLDataType{kDLInt, 32, 1});
  Check(t.ndim() == 1 && integer, what, " must be a 1-D ", int32_too ? "int32 or int64" : "int64", " tensor, got ",
        runtime::DTypeToString(t.dtype), ShapeText(t.shape));
  return t.shape[0];
}

// (data [elements] of `data`'s dtype, shape [rank] int64).
Type Result(const TensorType& data, int64_t elements, int64_t rank) {
  return Type::Tuple({Type::Tensor({elements}, data.dtype), Type::Tensor({rank}, kInt64)});
}

Type DynReshape(const std::vector<Type>& args, const Attrs&) {
  const TensorType& data = TensorArg(args, 0);
  return Result(data, data.NumElements(), Values(args, 1, "the shape"));
}

Type DynSqueeze(const std::vector<Type>& args, const Attrs&) {
  const TensorType& data = TensorArg(args, 0);
  int64_t axes = Values(args, 1, "the axes");
  Check(axes <= data.ndim(), axes, " axes to squeeze, but the data has ", data.ndim());
  return Result(data, data.NumElements(), data.ndim() - axes);
}

Type DynUnsqueeze(const std::vector<Type>& args, const Attrs&) {
  const TensorType& data = TensorArg(args, 0);
  return Result(data, data.NumElements(), data.ndim() + Values(args, 1, "the axes"));
}

// The result is largest when nothing is reduced, or, for an empty input, when its zero extents are.
Type DynReduce(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  int64_t axes = Values(args, 1, "the axes");
  Check(axes <= data.ndim(), axes, " axes to reduce, but the data has ", data.ndim());
  std::string reducer = attrs.GetString("reducer");
  static const std::set<std::string> kReducers = {"sum", "mean", "max",     "min",        "prod",
                                                  "l1",  "l2",   "sum_square", "log_sum", "log_sum_exp"};
  Check(kReducers.count(reducer) != 0, "unknown reducer '", reducer, "'");
  int64_t largest = 1;
  for (int64_t extent : data.shape) largest *= std::max<int64_t>(extent, 1);
  bool keepdims = attrs.GetInt("keepdims") != 0, noop = attrs.GetInt("noop_with_empty_axes") != 0;
  int64_t rank = keepdims ? data.ndim() : axes > 0 ? data.ndim() - axes : noop ? data.ndim() : 0;
  return Result(data, largest, rank);
}

Type DynStridedSlice(const std::vector<Type>& args, const Attrs&) {
  const TensorType& data = TensorArg(args, 0);
  int64_t count = Values(args, 1, "the starts", true);
  const char* names[] = {"the ends", "the axes", "the steps"};
  for (size_t i = 2; i < 5; ++i) {
    Check(Values(args, i, names[i - 2], true) == count, names[i - 2], " must hold ", count,
          " values, as the starts do");
  }
  Check(count <= data.ndim(), count, " axes to slice, but the data has ", data.ndim());
  return Result(data, data.NumElements(), data.ndim());
}

// (values [elements], indices [elements] int64, shape [rank]): the k first along `axis`.
Type DynTopk(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  Check(Values(args, 1, "k") == 1, "k must hold one value");
  Check(data.ndim() > 0, "needs a tensor of at least one dimension, got a scalar");
  NormalizeAxis(attrs.GetInt("axis"), data.ndim());
  return Type::Tuple({Type::Tensor({data.NumElements()}, data.dtype), Type::Tensor({data.NumElements()}, kInt64),
                      Type::Tensor({data.ndim()}, kInt64)});
}

// `pieces` pieces along `axis` of the sizes given, then their shapes: (data..., shape...).
Type DynSplit(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  int64_t pieces = attrs.GetInt("pieces");
  Check(Values(args, 1, "the sizes") == pieces, "the sizes must hold ", pieces, " values, one per piece");
  Check(data.ndim() > 0, "needs a tensor of at least one dimension, got a scalar");
  NormalizeAxis(attrs.GetInt("axis"), data.ndim());
  std::vector<Type> fields(pieces, Type::Tensor({data.NumElements()}, data.dtype));
  fields.resize(2 * pieces, Type::Tensor({data.ndim()}, kInt64));
  return Type::Tuple(fields);
}

// The data's type: the sums along an axis given at run time.
Type DynCumsum(const std::vector<Type>& args, const Attrs&) {
  const TensorType& data = TensorArg(args, 0);
  Check(TensorArg(args, 1).NumElements() == 1, "the axis must hold one value");
  Check(data.ndim() > 0, "needs a tensor of at least one dimension, got a scalar");
  return Type::Tensor(data);
}

std::vector<int> DataShapedByField1(const Attrs&, const Type&) { return {ShapeGivenBy(1), -1}; }
std::vector<int> TopkShapedByField2(const Attrs&, const Type&) { return {ShapeGivenBy(2), ShapeGivenBy(2), -1}; }
std::vector<int> PiecesShapedByTheirs(const Attrs& attrs, const Type&) {
  int pieces = static_cast<int>(attrs.GetInt("pieces"));
  std::vector<int> axes(2 * pieces, -1);
  for (int i = 0; i < pieces; ++i) axes[i] = ShapeGivenBy(pieces + i);
  return axes;
}

void Add(OpTable& table, OpDef op, RaggedAxesFn ragged_axes = DataShapedByField1) {
  op.ragged_axes = ragged_axes;
  table[op.name] = std::move(op);
}

}  // namespace

void RegisterRunTimeShapedOps(OpTable& table) {
  Add(table, {"dyn.reshape", 2, 2, {{"allowzero", AttrKind::kInt, int64_t{0}, "a 0 is an extent (else: the input's)"}},
              OpPattern::kOpaque, DynReshape, "reshape to a shape given at run time"});
  Add(table, {"dyn.squeeze", 2, 2, {}, OpPattern::kOpaque, DynSqueeze, "drop axes of extent 1 given at run time"});
  Add(table, {"dyn.unsqueeze", 2, 2, {}, OpPattern::kOpaque, DynUnsqueeze, "insert axes of extent 1 given at run time"});
  Add(table, {"dyn.reduce", 2, 2,
              {{"reducer", AttrKind::kString, {}, "sum, mean, max, min, prod, l1, l2, sum_square, log_sum, log_sum_exp"},
               {"keepdims", AttrKind::kInt, int64_t{1}, "keep reduced axes with extent 1"},
               {"noop_with_empty_axes", AttrKind::kInt, int64_t{0}, "no axes reduce none (else: all)"}},
              OpPattern::kOpaque, DynReduce, "a reduction over axes given at run time"});
  Add(table, {"dyn.strided_slice", 5, 5, {}, OpPattern::kOpaque, DynStridedSlice,
              "a slice by starts, ends, axes and steps given at run time"});
  Add(table,
      {"dyn.topk", 2, 2,
       {{"axis", AttrKind::kInt, int64_t{-1}, "the axis along which to take them"},
        {"largest", AttrKind::kInt, int64_t{1}, "the largest (else the smallest)"}},
       OpPattern::kOpaque, DynTopk, "the k largest or smallest along an axis, k given at run time, and their indices"},
      TopkShapedByField2);
  Add(table,
      {"dyn.split", 2, 2,
       {{"axis", AttrKind::kInt, {}, "the axis split"}, {"pieces", AttrKind::kInt, {}, "how many pieces"}},
       OpPattern::kOpaque, DynSplit, "pieces along an axis of sizes given at run time"},
      PiecesShapedByTheirs);
  Add(table,
      {"dyn.cumsum", 2, 2,
       {{"exclusive", AttrKind::kInt, int64_t{0}, "each sum without its own element"},
        {"reverse", AttrKind::kInt, int64_t{0}, "summed from the end"}},
       OpPattern::kOpaque, DynCumsum, "running sums along an axis given at run time"},
      nullptr);
}

}  // namespace kiln::ir
