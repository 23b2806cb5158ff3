// Ops whose shape-deciding input is given at run time and whose result no input's size bounds:
// Expand's shape, Tile's repeats, Pad's pads, ConstantOfShape's shape, Range's start, limit and
// delta, Resize's roi, scales and sizes, OneHot's depth, the windows' sizes, CenterCropPad's
// lengths and AffineGrid's size. Each is two ops: dyn.<op>_shape computes the result's shape (an
// int64 [rank] tensor), and dyn.<op> takes it and returns (data, shape), its data typed as a flat tensor of no elements
// (OpDef::sized_by_input): the executor gives it storage for that shape before the call
// (docs/architecture.md, "Inputs that ONNX lets decide shapes, given at run time").
#include <algorithm>

#include "ir/op.h"
#include "ir/ops/infer_util.h"

namespace kiln::ir {
namespace {

using runtime::Check;

constexpr DLDataType kInt64{kDLInt, 64, 1};

Type Shape(int64_t rank) { return Type::Tensor({rank}, kInt64); }

// The length of a 1-D int64 input.
int64_t Length(const std::vector<Type>& args, size_t i, const char* what) {
  const TensorType& t = TensorArg(args, i);
  Check(t.ndim() == 1 && t.dtype == kInt64, what, " must be a 1-D int64 tensor, got ", runtime::DTypeToString(t.dtype),
        ShapeText(t.shape));
  return t.shape[0];
}

Type ExpandShape(const std::vector<Type>& args, const Attrs&) {
  return Shape(std::max<int64_t>(TensorArg(args, 0).ndim(), Length(args, 1, "the shape")));
}

Type TileShape(const std::vector<Type>& args, const Attrs&) {
  int64_t rank = TensorArg(args, 0).ndim();
  Check(Length(args, 1, "the repeats") == rank, "the repeats must hold one value per axis (", rank, ")");
  return Shape(rank);
}

// (data, pads [2 * count], axes [count]).
Type PadShape(const std::vector<Type>& args, const Attrs&) {
  int64_t count = Length(args, 2, "the axes");
  Check(Length(args, 1, "the pads") == 2 * count, "the pads must hold two values per axis (", 2 * count, ")");
  return Shape(TensorArg(args, 0).ndim());
}

Type ValuesShape(const std::vector<Type>& args, const Attrs&) { return Shape(Length(args, 0, "the shape")); }

Type RangeShape(const std::vector<Type>& args, const Attrs&) {
  for (size_t i = 0; i < 3; ++i) {
    Check(TensorArg(args, i).NumElements() == 1 && TensorArg(args, i).dtype == TensorArg(args, 0).dtype,
          "start, limit and delta must be scalars of one dtype");
  }
  return Shape(1);
}

// (data of `dtype`, flat and of no elements: sized at run time; the shape, input `shape_input`).
Type Sized(const std::vector<Type>& args, size_t shape_input, DLDataType dtype) {
  const TensorType& shape = TensorArg(args, shape_input);
  Check(shape.ndim() == 1 && shape.dtype == kInt64, "the result's shape must be a 1-D int64 tensor");
  return Type::Tuple({Type::Tensor({0}, dtype), Type::Tensor(shape)});
}

Type Expand(const std::vector<Type>& args, const Attrs&) { return Sized(args, 1, TensorArg(args, 0).dtype); }
// (data, repeats, shape).
Type Tile(const std::vector<Type>& args, const Attrs& attrs) {
  TileShape({args[0], args[1]}, attrs);
  return Sized(args, 2, TensorArg(args, 0).dtype);
}
// (data, pads, axes, value, shape).
Type Pad(const std::vector<Type>& args, const Attrs&) {
  Check(TensorArg(args, 3).NumElements() == 1 && TensorArg(args, 3).dtype == TensorArg(args, 0).dtype,
        "the pad value must be one value of the data's dtype");
  return Sized(args, 4, TensorArg(args, 0).dtype);
}
// (value, shape).
Type ConstantOfShape(const std::vector<Type>& args, const Attrs&) {
  Check(TensorArg(args, 0).NumElements() == 1, "the value must be one value");
  return Sized(args, 1, TensorArg(args, 0).dtype);
}
// (start, limit, delta, shape).
Type Range(const std::vector<Type>& args, const Attrs&) { return Sized(args, 3, TensorArg(args, 0).dtype); }

// Resize's inputs: (data, roi, scales, sizes), the last three float32, float32 and int64 vectors
// (empty when absent).
Type ResizeShape(const std::vector<Type>& args, const Attrs&) {
  const TensorType& data = TensorArg(args, 0);
  Check(data.dtype == runtime::kFloat32, "Resize of ", runtime::DTypeToString(data.dtype), " data with its sizes or ",
        "scales given at run time is not supported (float32 only)");
  const char* names[] = {"the roi", "the scales"};
  for (size_t i = 1; i < 3; ++i) {
    const TensorType& t = TensorArg(args, i);
    Check(t.ndim() == 1 && t.dtype == runtime::kFloat32, names[i - 1], " must be a 1-D float32 tensor, got ",
          runtime::DTypeToString(t.dtype), ShapeText(t.shape));
  }
  Length(args, 3, "the sizes");
  return Shape(data.ndim());
}
// (data, roi, scales, sizes, shape).
Type Resize(const std::vector<Type>& args, const Attrs& attrs) {
  ResizeShape(args, attrs);
  return Sized(args, 4, TensorArg(args, 0).dtype);
}

// A scalar int64 input.
void ScalarInt64(const std::vector<Type>& args, size_t i, const char* what) {
  const TensorType& t = TensorArg(args, i);
  Check(t.NumElements() == 1 && t.dtype == kInt64, what, " must be one int64 value");
}

// (indices, depth).
Type OneHotShape(const std::vector<Type>& args, const Attrs& attrs) {
  ScalarInt64(args, 1, "the depth");
  int64_t rank = TensorArg(args, 0).ndim() + 1;
  Check(attrs.GetInt("axis") >= 0 && attrs.GetInt("axis") < rank, "axis ", attrs.GetInt("axis"), " is not an axis of ",
        "the result (rank ", rank, ")");
  return Shape(rank);
}
// (indices, values [off, on], depth, shape).
Type OneHot(const std::vector<Type>& args, const Attrs& attrs) {
  OneHotShape({args[0], args[2]}, attrs);
  Check(TensorArg(args, 1).NumElements() == 2, "the values must be [off, on]");
  Check(TensorArg(args, 0).dtype == kInt64, "the indices must be int64");
  return Sized(args, 3, TensorArg(args, 1).dtype);
}

// (size): one int64 value.
Type WindowShape(const std::vector<Type>& args, const Attrs&) {
  ScalarInt64(args, 0, "the size");
  return Shape(1);
}
// (size, shape).
Type Window(const std::vector<Type>& args, const Attrs& attrs) {
  std::string kind = attrs.GetString("kind");
  Check(kind == "hann" || kind == "hamming" || kind == "blackman", "unknown window '", kind, "'");
  return Sized(args, 1, runtime::ParseDType(attrs.GetString("dtype")));
}

// (data, lengths).
Type CenterCropPadShape(const std::vector<Type>& args, const Attrs& attrs) {
  Check(Length(args, 1, "the lengths") == static_cast<int64_t>(attrs.GetInts("axes").size()),
        "the lengths must hold one value per axis");
  return Shape(TensorArg(args, 0).ndim());
}
// (data, shape).
Type CenterCropPad(const std::vector<Type>& args, const Attrs&) { return Sized(args, 1, TensorArg(args, 0).dtype); }

// (theta [N, 2, 3] or [N, 3, 4], size [4] or [5]).
Type AffineGridShape(const std::vector<Type>& args, const Attrs&) {
  const TensorType& theta = TensorArg(args, 0);
  int64_t count = Length(args, 1, "the size");
  Check(count == 4 || count == 5, "the size must be [N, C, H, W] or [N, C, D, H, W]");
  Check(theta.ndim() == 3 && theta.shape[1] == count - 2 && theta.shape[2] == count - 1, "theta must be [N, ",
        count - 2, ", ", count - 1, "] for a size of ", count, " values");
  return Shape(count);
}
// (theta, size, shape).
Type AffineGrid(const std::vector<Type>& args, const Attrs& attrs) {
  AffineGridShape({args[0], args[1]}, attrs);
  return Sized(args, 2, TensorArg(args, 0).dtype);
}

std::vector<int> DataShapedByField1(const Attrs&, const Type&) { return {ShapeGivenBy(1), -1}; }

void AddShape(OpTable& table, OpDef op) { table[op.name] = std::move(op); }

void AddSized(OpTable& table, OpDef op, int shape_input) {
  op.ragged_axes = DataShapedByField1;
  op.sized_by_input = shape_input;
  table[op.name] = std::move(op);
}

const AttrSchema kMode{"mode", AttrKind::kString, std::string("constant"), "constant, edge, reflect or wrap"};
const AttrSchema kAxes{"axes", AttrKind::kInts, {}, "the axes the roi, scales or sizes are for"};
const AttrSchema kPolicy{"keep_aspect_ratio_policy", AttrKind::kString, std::string("stretch"),
                         "stretch, not_larger or not_smaller"};

}  // namespace

void RegisterRunTimeSizedOps(OpTable& table) {
  AddShape(table, {"dyn.expand_shape", 2, 2, {}, OpPattern::kOpaque, ExpandShape, "Expand's result shape"});
  AddShape(table, {"dyn.tile_shape", 2, 2, {}, OpPattern::kOpaque, TileShape, "Tile's result shape"});
  AddShape(table, {"dyn.pad_shape", 3, 3, {kMode}, OpPattern::kOpaque, PadShape, "Pad's result shape"});
  AddShape(table, {"dyn.values_shape", 1, 1, {}, OpPattern::kOpaque, ValuesShape, "a shape given as values, checked"});
  AddShape(table, {"dyn.range_shape", 3, 3, {}, OpPattern::kOpaque, RangeShape, "Range's result length"});
  AddSized(table, {"dyn.expand", 2, 2, {}, OpPattern::kOpaque, Expand, "broadcast to a shape given at run time"}, 1);
  AddSized(table, {"dyn.tile", 3, 3, {}, OpPattern::kOpaque, Tile, "repeats given at run time"}, 2);
  AddSized(table, {"dyn.pad", 5, 5, {kMode}, OpPattern::kOpaque, Pad, "pads given at run time"}, 4);
  AddSized(table, {"dyn.constant_of_shape", 2, 2, {}, OpPattern::kOpaque, ConstantOfShape,
                   "one value in a shape given at run time"}, 1);
  AddSized(table, {"dyn.range", 4, 4, {}, OpPattern::kOpaque, Range, "start, start + delta, ... below limit"}, 3);
  const AttrSchema axis{"axis", AttrKind::kInt, {}, "the result's axis of the depth"};
  AddShape(table, {"dyn.one_hot_shape", 2, 2, {axis}, OpPattern::kOpaque, OneHotShape, "OneHot's result shape"});
  AddSized(table, {"dyn.one_hot", 4, 4, {axis}, OpPattern::kOpaque, OneHot, "OneHot of a depth given at run time"}, 3);
  AddShape(table, {"dyn.window_shape", 1, 1, {}, OpPattern::kOpaque, WindowShape, "a window's length, checked"});
  AddSized(table,
           {"dyn.window", 2, 2,
            {{"kind", AttrKind::kString, {}, "hann, hamming or blackman"},
             {"periodic", AttrKind::kInt, int64_t{1}, "periodic (else symmetric)"},
             {"dtype", AttrKind::kString, {}, "the result's dtype"}},
            OpPattern::kOpaque, Window, "a window of a size given at run time"},
           1);
  const AttrSchema all_axes{"axes", AttrKind::kInts, {}, "the axes the lengths are for"};
  AddShape(table, {"dyn.center_crop_pad_shape", 2, 2, {all_axes}, OpPattern::kOpaque, CenterCropPadShape,
                   "CenterCropPad's result shape"});
  AddSized(table, {"dyn.center_crop_pad", 2, 2, {}, OpPattern::kOpaque, CenterCropPad,
                   "centered crop or zero pad to lengths given at run time"}, 1);
  AddShape(table, {"dyn.affine_grid_shape", 2, 2, {}, OpPattern::kOpaque, AffineGridShape, "AffineGrid's result shape"});
  AddSized(table,
           {"dyn.affine_grid", 3, 3,
            {{"align_corners", AttrKind::kInt, int64_t{0}, "-1 and 1 at the corner pixels' centers"}},
            OpPattern::kOpaque, AffineGrid, "AffineGrid of a size given at run time"},
           2);
  AddShape(table, {"dyn.resize_shape", 4, 4, {kAxes, kPolicy}, OpPattern::kOpaque, ResizeShape,
                   "Resize's result shape from its roi, scales or sizes"});
  AddSized(table,
           {"dyn.resize", 5, 5,
            {kAxes, kPolicy,
             {"method", AttrKind::kString, {}, "nearest_neighbor, linear or cubic"},
             {"coordinate_transformation_mode", AttrKind::kString, {}, "ONNX's"},
             {"rounding_method", AttrKind::kString, {}, "nearest_neighbor's rounding"},
             {"cubic_alpha", AttrKind::kFloat, -0.75, "cubic's coefficient"},
             {"cubic_exclude", AttrKind::kInt, int64_t{0}, "exclude taps outside the input"},
             {"extrapolation_value", AttrKind::kFloat, 0.0, "outside tf_crop_and_resize's roi"},
             {"antialias", AttrKind::kInt, int64_t{0}, "widen the kernel when shrinking"}},
            OpPattern::kOpaque, Resize, "Resize with its roi, scales or sizes given at run time"},
           4);
}

}  // namespace kiln::ir
