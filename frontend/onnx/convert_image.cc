// ONNX image ops: Resize (opsets 10 to 19) and Upsample as image.resize, GridSample as
// image.grid_sample, RoiAlign as vision.roi_align, AffineGrid as a batched product with a
// constant grid, DepthToSpace and SpaceToDepth as reshape-transpose-reshape. Resize's roi, scales
// and sizes given at run time make dyn.resize (ir/ops/run_time_sized.cc).
#include <algorithm>
#include <cmath>
#include <iterator>

#include "frontend/onnx/converter.h"
#include "runtime/error.h"

namespace kiln::frontend {

using namespace ir;
using runtime::StrCat;

namespace {

const OpRef kBatchMatmul("nn.batch_matmul");
const OpRef kCast("cast");
const OpRef kGridSample("image.grid_sample");
const OpRef kResize("image.resize");
const OpRef kReshape("reshape");
const OpRef kRoiAlign("vision.roi_align");
const OpRef kTranspose("transpose");
const OpRef kDynResizeShape("dyn.resize_shape");
const OpRef kDynResize("dyn.resize");
const OpRef kDynAffineGridShape("dyn.affine_grid_shape");
const OpRef kDynAffineGrid("dyn.affine_grid");

using Outputs = std::vector<Expr>;
using Ints = std::vector<int64_t>;
using Floats = std::vector<double>;

// An optional constant input, empty when it is absent or holds no values (opset 11 passes an
// empty scales next to sizes).
Floats OptionalFloats(const NodeContext& c, size_t i) {
  if (!c.has_input(i) || c.input_type(i).NumElements() == 0) return {};
  return c.ConstantFloats(i);
}

// What Resize's inputs and attributes say, per axis of the data.
struct ResizeShape {
  Ints size;
  Floats scales;
  Floats roi;
};

// From scales or sizes given for `axes` (all axes unless opset 18's attribute says otherwise).
ResizeShape OutputShape(const NodeContext& c, const Floats& scales, const Ints& sizes, const Floats& roi,
                        const Ints& axes) {
  const auto& in = c.input_type(0).shape;
  size_t rank = in.size();
  ResizeShape shape{in, Floats(rank, 1.0), {}};
  if (!roi.empty()) {
    if (roi.size() != 2 * axes.size()) {
      c.FailAt("input 1", StrCat("roi holds ", roi.size(), " values; it needs a start and an end for each of ",
                                 axes.size(), " axes"));
    }
    shape.roi = Floats(rank, 0.0);
    shape.roi.resize(2 * rank, 1.0);
    for (size_t i = 0; i < axes.size(); ++i) {
      shape.roi[axes[i]] = roi[i];
      shape.roi[rank + axes[i]] = roi[axes.size() + i];
    }
  }
  if (scales.empty() == sizes.empty()) c.Fail("Resize needs scales or sizes, exactly one of them");
  const char* where = scales.empty() ? "input 3" : "input 2";
  size_t given = scales.empty() ? sizes.size() : scales.size();
  if (given != axes.size()) {
    c.FailAt(where, StrCat("holds ", given, " values for ", axes.size(), " axes"));
  }
  if (!scales.empty()) {
    for (size_t i = 0; i < axes.size(); ++i) {
      double s = scales[i];
      if (!(s > 0) || !std::isfinite(s)) c.FailAt(where, StrCat("scale ", s, " must be positive"));
      double length = std::floor(static_cast<double>(in[axes[i]]) * s);
      if (length > double{1LL << 40}) c.FailAt(where, StrCat("scale ", s, " makes an axis of ", length, " elements"));
      shape.scales[axes[i]] = s;
      shape.size[axes[i]] = static_cast<int64_t>(length);
    }
    return shape;
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    if (sizes[i] <= 0 || sizes[i] > (int64_t{1} << 40)) c.FailAt(where, StrCat("size ", sizes[i], " must be in [1, 2^40]"));
    if (in[axes[i]] == 0) c.FailAt(where, StrCat("axis ", axes[i], " is empty: it cannot be resized"));
  }
  std::string policy = c.opset() >= 18 ? c.attr_string("keep_aspect_ratio_policy", "stretch") : "stretch";
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller") {
    c.FailAt("attribute 'keep_aspect_ratio_policy'", StrCat("'", policy, "' is not stretch, not_larger or not_smaller"));
  }
  if (policy == "stretch") {
    for (size_t i = 0; i < axes.size(); ++i) {
      shape.size[axes[i]] = sizes[i];
      shape.scales[axes[i]] = static_cast<double>(sizes[i]) / static_cast<double>(in[axes[i]]);
    }
    return shape;
  }
  if (policy != "not_larger" && policy != "not_smaller") {
    c.FailAt("attribute 'keep_aspect_ratio_policy'", StrCat("'", policy, "' is not stretch, not_larger or not_smaller"));
  }
  // One scale for every axis: the largest that fits in sizes, or the smallest that covers them.
  double scale = policy == "not_larger" ? INFINITY : 0;
  for (size_t i = 0; i < axes.size(); ++i) {
    double s = static_cast<double>(sizes[i]) / static_cast<double>(in[axes[i]]);
    scale = policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
  }
  for (int64_t axis : axes) {
    double length = scale * static_cast<double>(in[axis]) + 0.5;
    if (!(length >= 1 && length <= double{1LL << 40})) {
      c.FailAt("input 3", StrCat("keep_aspect_ratio_policy makes axis ", axis, " ", length, " long"));
    }
    shape.scales[axis] = scale;
    shape.size[axis] = static_cast<int64_t>(length);
  }
  return shape;
}

// mode: nearest, linear or cubic.
std::string Method(const NodeContext& c, const std::string& mode) {
  if (mode == "nearest") return "nearest_neighbor";
  if (mode == "linear" || mode == "cubic") return mode;
  c.FailAt("attribute 'mode'", StrCat("'", mode, "' is not nearest, linear or cubic"));
}

Expr MakeResize(const NodeContext& c, const ResizeShape& shape, Attrs attrs) {
  attrs.Set("size", shape.size);
  attrs.Set("scales", shape.scales);
  attrs.Set("roi", shape.roi);
  return c.Op(kResize, {c.input(0)}, std::move(attrs));
}

Ints AllAxes(const NodeContext& c) {
  Ints axes;
  for (int64_t d = 0; d < c.input_type(0).ndim(); ++d) axes.push_back(d);
  return axes;
}

// Input `i` when the node has it with values, else an empty vector of `dtype`.
Expr GivenOrEmpty(const NodeContext& c, size_t i, DLDataType dtype) {
  if (c.has_input(i) && c.input_type(i).NumElements() > 0) return c.input(i);
  return Constant(runtime::NDArray::Empty({0}, dtype));
}

// Whether input `i` holds values the model gives only at run time.
bool GivenAtRunTime(const NodeContext& c, size_t i) {
  return c.has_input(i) && c.input_type(i).NumElements() > 0 && !c.IsConstant(i);
}

// Resize with its roi, scales or sizes given at run time (ir/ops/run_time_sized.cc).
Expr ResizeAtRunTime(const NodeContext& c, const Expr& roi, const Expr& scales, const Expr& sizes, const Ints& axes,
                     Attrs attrs) {
  std::string policy = c.opset() >= 18 ? c.attr_string("keep_aspect_ratio_policy", "stretch") : "stretch";
  Attrs shape_attrs = MakeAttrs({{"axes", axes}, {"keep_aspect_ratio_policy", policy}});
  attrs.Set("axes", axes);
  attrs.Set("keep_aspect_ratio_policy", policy);
  Expr shape = c.Op(kDynResizeShape, {c.input(0), roi, scales, sizes}, shape_attrs);
  return TupleGetItem(c.Op(kDynResize, {c.input(0), roi, scales, sizes, shape}, attrs), 0);
}

// Resize 11 on: its method's attributes, checked.
Attrs ResizeAttrs(const NodeContext& c, const std::string& mode) {
  static const char* kModes[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                 "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (std::find(std::begin(kModes), std::end(kModes), mode) == std::end(kModes)) {
    c.FailAt("attribute 'coordinate_transformation_mode'", StrCat("'", mode, "' is not one of ONNX's"));
  }
  std::string rounding = c.attr_string("nearest_mode", "round_prefer_floor");
  if (rounding != "round_prefer_floor" && rounding != "round_prefer_ceil" && rounding != "floor" && rounding != "ceil") {
    c.FailAt("attribute 'nearest_mode'", StrCat("'", rounding, "' is not round_prefer_floor, round_prefer_ceil, ",
                                                "floor or ceil"));
  }
  return MakeAttrs({{"method", Method(c, c.attr_string("mode", "nearest"))},
                    {"coordinate_transformation_mode", mode},
                    {"rounding_method", rounding},
                    {"cubic_alpha", double{c.attr_float("cubic_coeff_a", -0.75f)}},
                    {"cubic_exclude", c.attr_int("exclude_outside", 0)},
                    {"extrapolation_value", double{c.attr_float("extrapolation_value", 0.0f)}},
                    {"antialias", c.opset() >= 18 ? c.attr_int("antialias", 0) : int64_t{0}}});
}

// Resize 10 and Upsample: scales only, output coordinates mapped asymmetrically, nearest rounding
// down when enlarging and up when shrinking (ONNX Runtime's behaviour for these opsets).
Attrs ScalesOnlyAttrs(const NodeContext& c) {
  return MakeAttrs({{"method", Method(c, c.attr_string("mode", "nearest"))},
                    {"coordinate_transformation_mode", std::string("asymmetric")},
                    {"rounding_method", std::string("simple")}});
}

Expr ResizeByScales(const NodeContext& c, const Floats& scales) {
  ResizeShape shape = OutputShape(c, scales, {}, {}, AllAxes(c));
  return MakeResize(c, shape, ScalesOnlyAttrs(c));
}

// Resize 10 and Upsample 9: scales from input 1, constant or given at run time.
Expr ResizeByScalesInput(const NodeContext& c) {
  if (!GivenAtRunTime(c, 1)) return ResizeByScales(c, c.ConstantFloats(1));
  Expr none = Constant(runtime::NDArray::Empty({0}, runtime::kFloat32));
  return ResizeAtRunTime(c, none, c.input(1), Constant(runtime::NDArray::Empty({0}, DLDataType{kDLInt, 64, 1})),
                         AllAxes(c), ScalesOnlyAttrs(c));
}

Outputs Resize(const NodeContext& c) {
  if (c.opset() < 11) return {ResizeByScalesInput(c)};
  Ints axes = AllAxes(c);
  if (c.opset() >= 18 && c.has_attr("axes")) {
    axes.clear();
    for (int64_t axis : c.attr_ints("axes")) {
      int64_t a = NormalizeAxis(axis, c.input_type(0).ndim(), c);
      for (int64_t seen : axes) {
        if (seen == a) c.FailAt("attribute 'axes'", StrCat("axis ", axis, " is given twice"));
      }
      axes.push_back(a);
    }
  }
  std::string mode = c.attr_string("coordinate_transformation_mode", "half_pixel");
  bool crop = mode == "tf_crop_and_resize";
  if ((crop && GivenAtRunTime(c, 1)) || GivenAtRunTime(c, 2) || GivenAtRunTime(c, 3)) {
    if (crop && !(c.has_input(1) && c.input_type(1).NumElements() > 0)) {
      c.FailAt("input 1", "tf_crop_and_resize needs a roi");
    }
    Expr roi = crop ? GivenOrEmpty(c, 1, runtime::kFloat32) : Constant(runtime::NDArray::Empty({0}, runtime::kFloat32));
    return {ResizeAtRunTime(c, roi, GivenOrEmpty(c, 2, runtime::kFloat32),
                            GivenOrEmpty(c, 3, DLDataType{kDLInt, 64, 1}), axes, ResizeAttrs(c, mode))};
  }
  Floats roi = crop ? OptionalFloats(c, 1) : Floats{};
  if (mode == "tf_crop_and_resize" && roi.empty()) c.FailAt("input 1", "tf_crop_and_resize needs a roi");
  Ints sizes;
  if (c.has_input(3) && c.input_type(3).NumElements() > 0) sizes = c.ConstantInts(3);
  ResizeShape shape = OutputShape(c, OptionalFloats(c, 2), sizes, roi, axes);
  return {MakeResize(c, shape, ResizeAttrs(c, mode))};
}

// Upsample: scales an attribute (opset 7) or an input (opset 9).
Outputs Upsample(const NodeContext& c) {
  if (c.opset() < 9) {
    std::vector<float> scales = c.attr_floats("scales");
    return {ResizeByScales(c, Floats(scales.begin(), scales.end()))};
  }
  return {ResizeByScalesInput(c)};
}

// RoiAlign: coordinate_transformation_mode from opset 16 (half_pixel by default); before,
// output_half_pixel (no shift).
Outputs RoiAlign(const NodeContext& c) {
  std::string mode = c.attr_string("coordinate_transformation_mode", c.opset() >= 16 ? "half_pixel" : "output_half_pixel");
  if (mode != "half_pixel" && mode != "output_half_pixel") {
    c.FailAt("attribute 'coordinate_transformation_mode'", "must be half_pixel or output_half_pixel, got '" + mode + "'");
  }
  Attrs attrs = MakeAttrs({{"pooled_size", Ints{c.attr_int("output_height", 1), c.attr_int("output_width", 1)}},
                           {"spatial_scale", double{c.attr_float("spatial_scale", 1.0f)}},
                           {"sample_ratio", c.attr_int("sampling_ratio", 0)},
                           {"mode", c.attr_string("mode", "avg")},
                           {"aligned", int64_t{mode == "half_pixel"}}});
  return {c.Op(kRoiAlign, {c.input(0), c.input(1), c.input(2)}, attrs)};
}

// GridSample: 2-D images; mode bilinear / nearest / bicubic (linear / nearest / cubic from opset 20).
Outputs GridSample(const NodeContext& c) {
  if (c.input_type(0).ndim() != 4) {
    c.FailAt("input 0", StrCat("only 2-D images (NCHW) are supported; the input has ", c.input_type(0).ndim(),
                               " dimensions"));
  }
  std::string mode = c.attr_string("mode", c.opset() >= 20 ? "linear" : "bilinear");
  if (mode == "linear") mode = "bilinear";
  if (mode == "cubic") mode = "bicubic";
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") {
    c.FailAt("attribute 'mode'", StrCat("'", mode, "' is not a GridSample mode"));
  }
  return {c.Op(kGridSample, {c.input(0), c.input(1)},
               MakeAttrs({{"method", mode}, {"padding_mode", c.attr_string("padding_mode", "zeros")},
                          {"align_corners", c.attr_int("align_corners", 0)}}))};
}

// AffineGrid: the normalized coordinates of every output pixel, (x, y[, z], 1) in [-1, 1], times
// theta [N, 2, 3] (or [N, 3, 4] in 3-D) transposed: a constant grid and one batched product.
Outputs AffineGrid(const NodeContext& c) {
  const TensorType& theta = c.input_type(0);
  if (!c.IsConstant(1)) {  // a size given at run time (ir/ops/run_time_sized.cc)
    Attrs align = MakeAttrs({{"align_corners", c.attr_int("align_corners", 0)}});
    return {SizedAtRunTime(c, kDynAffineGridShape, kDynAffineGrid, {c.input(0), c.input(1)}, {c.input(0), c.input(1)},
                           align, Attrs{})};
  }
  Ints size = c.ConstantInts(1);
  if (size.size() != 4 && size.size() != 5) c.FailAt("input 1", "the size must be [N, C, H, W] or [N, C, D, H, W]");
  auto spatial = static_cast<int64_t>(size.size()) - 2;
  if (theta.shape != Ints{size[0], spatial, spatial + 1}) {
    c.FailAt("input 0", StrCat("theta must be [N, ", spatial, ", ", spatial + 1, "] for size ", ShapeText(size)));
  }
  bool align = c.attr_int("align_corners", 0) != 0;
  // With align_corners an axis of one pixel is at -1, as in ONNX's reference, ONNX Runtime and
  // PyTorch (linspace(-1, 1, 1)).
  auto coordinate = [&](int64_t i, int64_t length) {
    if (align) return length == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(length - 1);
    return (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(length) - 1.0;
  };
  int64_t points = 1;
  for (int64_t d = 0; d < spatial; ++d) {
    if (size[2 + d] < 1 || size[2 + d] > (int64_t{1} << 20)) c.FailAt("input 1", StrCat("size ", ShapeText(size), " is out of range"));
    points *= size[2 + d];
  }
  CheckConstantElements(c, points * (spatial + 1), "the sampling grid");
  runtime::NDArray base = runtime::NDArray::Empty({1, points, spatial + 1}, DLDataType{kDLFloat, 64, 1});
  auto* values = static_cast<double*>(base.data());
  for (int64_t p = 0; p < points; ++p) {
    int64_t rest = p;
    // The last spatial axis (width) varies fastest and comes first in the point: (x, y[, z]).
    for (int64_t d = spatial - 1; d >= 0; --d) {
      int64_t length = size[2 + d];
      values[p * (spatial + 1) + (spatial - 1 - d)] = coordinate(rest % length, length);
      rest /= length;
    }
    values[p * (spatial + 1) + spatial] = 1.0;
  }
  Expr grid = c.Op(kCast, {Constant(base)}, MakeAttrs({{"dtype", runtime::DTypeToString(theta.dtype)}}));
  Expr y = c.Op(kBatchMatmul, {grid, c.input(0)}, MakeAttrs({{"transpose_b", int64_t{1}}}));
  Ints shape = {size[0]};
  for (int64_t d = 0; d < spatial; ++d) shape.push_back(size[2 + d]);
  shape.push_back(spatial);
  return {c.Op(kReshape, {y}, MakeAttrs({{"newshape", shape}}))};
}

// The NCHW input's blocksize, checked.
int64_t BlockSize(const NodeContext& c) {
  if (c.input_type(0).ndim() != 4) c.FailAt("input 0", StrCat("must be NCHW, it has ", c.input_type(0).ndim(), " dimensions"));
  int64_t b = c.attr_int("blocksize");
  if (b <= 0 || b > (int64_t{1} << 15)) c.FailAt("attribute 'blocksize'", StrCat(b, " must be in [1, 32768]"));
  return b;
}

Expr Rearrange(const NodeContext& c, const Ints& split, const Ints& perm, const Ints& result) {
  Expr x = c.Op(kReshape, {c.input(0)}, MakeAttrs({{"newshape", split}}));
  x = c.Op(kTranspose, {x}, MakeAttrs({{"axes", perm}}));
  return c.Op(kReshape, {x}, MakeAttrs({{"newshape", result}}));
}

// DepthToSpace: channel blocks to b x b pixels, the block index first (DCR) or last (CRD).
Outputs DepthToSpace(const NodeContext& c) {
  int64_t b = BlockSize(c);
  Ints s = c.input_type(0).shape;
  if (s[1] % (b * b) != 0) c.FailAt("input 0", StrCat(s[1], " channels do not divide into blocks of ", b, " x ", b));
  int64_t n = s[0], ch = s[1] / (b * b), h = s[2], w = s[3];
  if (h > (int64_t{1} << 40) / b || w > (int64_t{1} << 40) / b) c.FailAt("input 0", "the output would be too large");
  std::string mode = c.attr_string("mode", "DCR");
  Ints result = {n, ch, h * b, w * b};
  if (mode == "DCR") return {Rearrange(c, {n, b, b, ch, h, w}, {0, 3, 4, 1, 5, 2}, result)};
  if (mode == "CRD") return {Rearrange(c, {n, ch, b, b, h, w}, {0, 1, 4, 2, 5, 3}, result)};
  c.FailAt("attribute 'mode'", StrCat("'", mode, "' is not DCR or CRD"));
}

// SpaceToDepth: b x b pixel blocks to channels, the block index first.
Outputs SpaceToDepth(const NodeContext& c) {
  int64_t b = BlockSize(c);
  Ints s = c.input_type(0).shape;
  if (s[2] % b != 0 || s[3] % b != 0) {
    c.FailAt("input 0", StrCat("height ", s[2], " and width ", s[3], " must be multiples of the blocksize ", b));
  }
  int64_t n = s[0], ch = s[1], h = s[2] / b, w = s[3] / b;
  if (ch > (int64_t{1} << 40) / (b * b)) c.FailAt("input 0", "the output would have too many channels");
  return {Rearrange(c, {n, ch, h, b, w, b}, {0, 3, 5, 1, 2, 4}, {n, ch * b * b, h, w})};
}

}  // namespace

void AddImageConverters(ConverterTable& table) {
  Register(table, "Resize", Resize, 10);
  Register(table, "Upsample", Upsample, 7);
  Register(table, "DepthToSpace", DepthToSpace, 1);
  Register(table, "GridSample", GridSample, 16);
  Register(table, "RoiAlign", RoiAlign, 10);
  Register(table, "AffineGrid", AffineGrid, 20);
  Register(table, "SpaceToDepth", SpaceToDepth, 1);
}

}  // namespace kiln::frontend
