// Data-movement ops: reshape, transpose, concatenate, squeeze, expand_dims, strided_slice,
// take, split, broadcast_to, tile, trilu, layout_transform.
#include <cstring>
#include <numeric>

#include "ir/layout.h"
#include "ir/op.h"
#include "ir/ops/eval_util.h"
#include "ir/ops/infer_util.h"

namespace kiln::ir {
namespace {

using runtime::Check;
using runtime::NDArray;
using Args = std::vector<NDArray>;

Type Reshape(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  const auto& shape = attrs.GetInts("newshape");
  int64_t count = 1;
  for (int64_t d : shape) {
    Check(d >= 0, "newshape ", AttrValueText(shape), " must be static and non-negative");
    Check(!__builtin_mul_overflow(count, d, &count), "newshape ", AttrValueText(shape),
          " has more elements than a 64-bit count holds");
  }
  Check(count == data.NumElements(), "cannot reshape ", ShapeText(data.shape), " (", data.NumElements(),
        " elements) to ", ShapeText(shape), " (", count, ")");
  return Type::Tensor(shape, data.dtype);
}

Type Transpose(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  std::vector<int64_t> axes = attrs.GetInts("axes");
  if (axes.empty()) {  // reverse the dimensions
    axes.resize(data.shape.size());
    std::iota(axes.rbegin(), axes.rend(), 0);
  }
  Check(axes.size() == data.shape.size(), "axes ", AttrValueText(axes), " do not match ", data.ndim(), " dimensions");
  std::vector<bool> seen(axes.size(), false);
  std::vector<int64_t> shape;
  for (int64_t axis : axes) {
    int a = NormalizeAxis(axis, data.ndim());
    Check(!seen[a], "axes ", AttrValueText(axes), " repeat an axis");
    seen[a] = true;
    shape.push_back(data.shape[a]);
  }
  return Type::Tensor(shape, data.dtype);
}

Type Concatenate(const std::vector<Type>& args, const Attrs& attrs) {
  CheckSameDType(args);
  const TensorType& first = TensorArg(args, 0);
  int axis = NormalizeAxis(attrs.GetInt("axis"), first.ndim());
  std::vector<int64_t> shape = first.shape;
  for (size_t i = 1; i < args.size(); ++i) {
    const TensorType& t = TensorArg(args, i);
    Check(t.ndim() == first.ndim(), "argument ", i, " has ", t.ndim(), " dimensions, argument 0 has ", first.ndim());
    for (int d = 0; d < first.ndim(); ++d) {
      Check(d == axis || t.shape[d] == first.shape[d], "argument ", i, " ", ShapeText(t.shape),
            " differs from ", ShapeText(first.shape), " outside axis ", axis);
    }
    shape[axis] += t.shape[axis];
  }
  return Type::Tensor(shape, first.dtype);
}

Type Squeeze(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  std::vector<bool> drop(data.shape.size(), false);
  const auto& axes = attrs.GetInts("axis");
  for (int64_t axis : axes) {
    int a = NormalizeAxis(axis, data.ndim());
    Check(data.shape[a] == 1, "cannot squeeze axis ", axis, " of size ", data.shape[a]);
    drop[a] = true;
  }
  std::vector<int64_t> shape;
  for (size_t d = 0; d < data.shape.size(); ++d) {
    bool squeeze = axes.empty() ? data.shape[d] == 1 : drop[d];
    if (!squeeze) shape.push_back(data.shape[d]);
  }
  return Type::Tensor(shape, data.dtype);
}

Type ExpandDims(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  int64_t count = attrs.GetInt("num_newaxis");
  Check(count >= 0, "num_newaxis must not be negative");
  int axis = NormalizeAxis(attrs.GetInt("axis"), data.ndim() + 1);
  std::vector<int64_t> shape = data.shape;
  shape.insert(shape.begin() + axis, count, 1);
  return Type::Tensor(shape, data.dtype);
}

Type StridedSlice(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  std::vector<int64_t> shape = data.shape;
  for (const SlicedAxis& s : SlicedAxes(data.shape, attrs)) shape[s.axis] = s.length;
  return Type::Tensor(shape, data.dtype);
}

Type Take(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  const TensorType& indices = TensorArg(args, 1);
  Check(indices.dtype.code == kDLInt, "indices must be integers, got ", DTypeToString(indices.dtype));
  int axis = NormalizeAxis(attrs.GetInt("axis"), data.ndim());
  std::vector<int64_t> shape(data.shape.begin(), data.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  return Type::Tensor(shape, data.dtype);
}

Type Split(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  int axis = NormalizeAxis(attrs.GetInt("axis"), data.ndim());
  const auto& sizes = attrs.GetInts("sections");
  int64_t total = 0;
  std::vector<Type> fields;
  for (int64_t size : sizes) {
    Check(size >= 0, "negative section size");
    std::vector<int64_t> shape = data.shape;
    shape[axis] = size;
    fields.push_back(Type::Tensor(shape, data.dtype));
    total += size;
  }
  Check(!sizes.empty() && total == data.shape[axis], "sections ", AttrValueText(sizes), " do not add up to ",
        data.shape[axis], " on axis ", axis);
  return Type::Tuple(fields);
}

Type BroadcastTo(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  const auto& shape = attrs.GetInts("shape");
  Check(BroadcastShapes(data.shape, shape) == shape, "cannot broadcast ", ShapeText(data.shape), " to ", ShapeText(shape));
  return Type::Tensor(shape, data.dtype);
}

// The same primal axes in another order or blocking (ir/layout.h).
Type LayoutTransform(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  Layout src = Layout::Parse(attrs.GetString("src_layout"));
  Layout dst = Layout::Parse(attrs.GetString("dst_layout"));
  std::string src_axes = src.primal(), dst_axes = dst.primal();
  bool same = src_axes.size() == dst_axes.size();
  for (char c : dst_axes) same = same && src_axes.find(c) != std::string::npos;
  Check(same, "layouts ", src.name(), " and ", dst.name(), " have different primal axes");
  std::vector<int64_t> src_primal = src.ToPrimal(data.shape);
  std::vector<int64_t> dst_primal;
  for (char c : dst_axes) dst_primal.push_back(src_primal[src_axes.find(c)]);
  return Type::Tensor(dst.FromPrimal(dst_primal), data.dtype);
}

// tile: data repeated reps[d] times along each axis d (reps has one entry per axis).
Type Tile(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  const auto& reps = attrs.GetInts("reps");
  Check(static_cast<int>(reps.size()) == data.ndim(), "reps ", AttrValueText(reps), " must have one entry per axis of ",
        ShapeText(data.shape));
  std::vector<int64_t> shape = data.shape;
  for (size_t d = 0; d < reps.size(); ++d) {
    Check(reps[d] >= 0, "reps ", AttrValueText(reps), " must not be negative");
    Check(!__builtin_mul_overflow(shape[d], reps[d], &shape[d]), "tiling ", ShapeText(data.shape), " by ",
          AttrValueText(reps), " overflows");
  }
  return Type::Tensor(shape, data.dtype);
}

// Reference semantics: each evaluator runs after type inference accepted the call, so axes and
// shapes are valid.

// reshape, squeeze, expand_dims: the same elements in the result's shape.
std::optional<NDArray> EvaluateReshape(const Args& args, const Attrs&, const TensorType& result) {
  return args[0].Clone().CreateView(result.shape, result.dtype);
}

std::optional<NDArray> EvaluateTranspose(const Args& args, const Attrs& attrs, const TensorType& result) {
  const std::vector<int64_t>& shape = args[0].shape();
  int ndim = static_cast<int>(shape.size());
  std::vector<int64_t> axes = attrs.GetInts("axes");
  if (axes.empty()) {
    axes.resize(ndim);
    std::iota(axes.rbegin(), axes.rend(), 0);
  }
  std::vector<int64_t> in_strides = RowStrides(shape), strides;
  for (int64_t axis : axes) strides.push_back(in_strides[NormalizeAxis(axis, ndim)]);
  return GatherStrided(args[0], result.shape, strides, 0);
}

std::optional<NDArray> EvaluateBroadcastTo(const Args& args, const Attrs&, const TensorType& result) {
  return BroadcastArray(args[0], result.shape).Clone();
}

std::optional<NDArray> EvaluateStridedSlice(const Args& args, const Attrs& attrs, const TensorType& result) {
  std::vector<int64_t> in_strides = RowStrides(args[0].shape()), strides = in_strides;
  int64_t base = 0;
  for (const SlicedAxis& s : SlicedAxes(args[0].shape(), attrs)) {
    base += s.first * in_strides[s.axis];
    strides[s.axis] = s.step * in_strides[s.axis];
  }
  return GatherStrided(args[0], result.shape, strides, base);
}

std::optional<NDArray> EvaluateConcatenate(const Args& args, const Attrs& attrs, const TensorType& result) {
  NDArray out = NDArray::Empty(result.shape, result.dtype);
  int axis = NormalizeAxis(attrs.GetInt("axis"), result.ndim());
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= result.shape[d];
  for (int d = axis + 1; d < result.ndim(); ++d) inner *= result.shape[d];
  int64_t element = static_cast<int64_t>(runtime::DTypeBytes(result.dtype));
  int64_t row = result.shape[axis] * inner * element, offset = 0;
  for (const NDArray& a : args) {
    int64_t block = a.shape()[axis] * inner * element;
    for (int64_t j = 0; j < outer; ++j) {
      std::memcpy(static_cast<char*>(out.data()) + j * row + offset, static_cast<const char*>(a.data()) + j * block,
                  block);
    }
    offset += block;
  }
  return out;
}

// Indices count from the end when negative; one out of range leaves the result undefined.
std::optional<NDArray> EvaluateTake(const Args& args, const Attrs& attrs, const TensorType& result) {
  const std::vector<int64_t>& shape = args[0].shape();
  int axis = NormalizeAxis(attrs.GetInt("axis"), static_cast<int>(shape.size()));
  int64_t outer = 1, inner = 1, n = shape[axis];
  for (int d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  int64_t count = 1;
  for (int64_t d : args[1].shape()) count *= d;
  std::vector<int64_t> indices(count);
  bool in_range = WithCType(args[1].dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t k = 0; k < count; ++k) {
      int64_t index = static_cast<int64_t>(DataOf<T>(args[1])[k]);
      indices[k] = index < 0 ? index + n : index;
      if (indices[k] < 0 || indices[k] >= n) return false;
    }
    return true;
  });
  if (!in_range) return std::nullopt;
  NDArray out = NDArray::Empty(result.shape, result.dtype);
  int64_t slice = inner * static_cast<int64_t>(runtime::DTypeBytes(result.dtype));
  for (int64_t j = 0; j < outer; ++j) {
    for (int64_t k = 0; k < count; ++k) {
      std::memcpy(static_cast<char*>(out.data()) + (j * count + k) * slice,
                  static_cast<const char*>(args[0].data()) + (j * n + indices[k]) * slice, slice);
    }
  }
  return out;
}

std::optional<NDArray> EvaluateTile(const Args& args, const Attrs&, const TensorType& result) {
  const std::vector<int64_t>& in = args[0].shape();
  std::vector<int64_t> in_strides = RowStrides(in), out_strides = RowStrides(result.shape);
  NDArray out = NDArray::Empty(result.shape, result.dtype);
  int64_t element = static_cast<int64_t>(runtime::DTypeBytes(result.dtype)), count = result.NumElements();
  for (int64_t o = 0; o < count; ++o) {
    int64_t from = 0;
    for (size_t d = 0; d < in.size(); ++d) from += (o / out_strides[d] % result.shape[d] % in[d]) * in_strides[d];
    std::memcpy(static_cast<char*>(out.data()) + o * element, static_cast<const char*>(args[0].data()) + from * element,
                element);
  }
  return out;
}

std::optional<NDArray> EvaluateLayoutTransform(const Args& args, const Attrs& attrs, const TensorType&) {
  return TransformLayout(args[0], Layout::Parse(attrs.GetString("src_layout")),
                         Layout::Parse(attrs.GetString("dst_layout")));
}

// trilu: the matrices of the last two dimensions with the elements below (upper) or above (lower)
// the k-th diagonal set to zero.
Type Trilu(const std::vector<Type>& args, const Attrs&) {
  const TensorType& data = TensorArg(args, 0);
  runtime::Check(data.ndim() >= 2, "needs a tensor of at least two dimensions, got ", data.ndim());
  return Type::Tensor(data);
}

void Add(OpTable& table, OpDef op) { table[op.name] = std::move(op); }

}  // namespace

void RegisterTransformOps(OpTable& table) {
  Add(table, {"trilu", 1, 1,
              {{"upper", AttrKind::kInt, int64_t{1}, "keep the upper triangle (else the lower)"},
               {"k", AttrKind::kInt, int64_t{0}, "the diagonal: 0 main, > 0 above, < 0 below"}},
              OpPattern::kInjective, Trilu, "upper or lower triangle of the last two dimensions", nullptr});
  Add(table, {"reshape", 1, 1, {{"newshape", AttrKind::kInts, {}, "the static output shape"}}, OpPattern::kInjective,
              Reshape, "same elements, new shape", EvaluateReshape});
  Add(table, {"transpose", 1, 1, {{"axes", AttrKind::kInts, std::vector<int64_t>{}, "permutation; empty reverses"}},
              OpPattern::kInjective, Transpose, "permutes dimensions", EvaluateTranspose});
  Add(table, {"concatenate", 1, 1 << 16, {{"axis", AttrKind::kInt, int64_t{0}, "joined axis"}}, OpPattern::kInjective,
              Concatenate, "joins tensors along an axis", EvaluateConcatenate, LayoutRule::kConcatenate});
  Add(table, {"squeeze", 1, 1, {{"axis", AttrKind::kInts, std::vector<int64_t>{}, "axes of size 1; empty: all"}},
              OpPattern::kInjective, Squeeze, "removes axes of size 1", EvaluateReshape});
  Add(table, {"expand_dims", 1, 1,
              {{"axis", AttrKind::kInt, {}, "where to insert"}, {"num_newaxis", AttrKind::kInt, int64_t{1}, "how many"}},
              OpPattern::kInjective, ExpandDims, "inserts axes of size 1", EvaluateReshape});
  Add(table, {"strided_slice", 1, 1,
              {{"begin", AttrKind::kInts, {}, "first index per axis"},
               {"end", AttrKind::kInts, {}, "end index per axis (exclusive)"},
               {"strides", AttrKind::kInts, std::vector<int64_t>{}, "step per axis; empty: 1"},
               {"axes", AttrKind::kInts, std::vector<int64_t>{}, "sliced axes; empty: the first ones"}},
              OpPattern::kInjective, StridedSlice, "numpy-style slice with clamping", EvaluateStridedSlice});
  Add(table, {"take", 2, 2, {{"axis", AttrKind::kInt, int64_t{0}, "gathered axis"}}, OpPattern::kInjective, Take,
              "gathers slices by integer indices (negative indices count from the end)", EvaluateTake});
  Add(table, {"split", 1, 1,
              {{"sections", AttrKind::kInts, {}, "sizes of the pieces"}, {"axis", AttrKind::kInt, int64_t{0}, "split axis"}},
              OpPattern::kInjective, Split, "splits into a tuple of pieces"});
  Add(table, {"layout_transform", 1, 1,
              {{"src_layout", AttrKind::kString, {}, "layout of the input, e.g. NCHW"},
               {"dst_layout", AttrKind::kString, {}, "layout of the result, e.g. NCHW16c"}},
              OpPattern::kInjective, LayoutTransform, "moves data between layouts of the same primal axes",
              EvaluateLayoutTransform, LayoutRule::kLayoutTransform});
  Add(table, {"tile", 1, 1, {{"reps", AttrKind::kInts, {}, "repetitions per axis"}}, OpPattern::kInjective, Tile,
              "data repeated along each axis", EvaluateTile});
  Add(table, {"broadcast_to", 1, 1, {{"shape", AttrKind::kInts, {}, "target shape"}}, OpPattern::kBroadcast,
              BroadcastTo, "numpy broadcast to a shape", EvaluateBroadcastTo});
}

}  // namespace kiln::ir
