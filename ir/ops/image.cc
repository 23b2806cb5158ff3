// Image ops: image.grid_sample (ONNX's GridSample on 2-D images) and image.resize, ONNX's Resize over any rank (Relay's image.resize1d/2d/3d without a
// layout: every axis may be resized). The output size and the per-axis scales that map output
// coordinates back to input ones are both attributes: ONNX derives one from the other, but a
// scale given with the model is not always the output's length over the input's, and its
// coordinate mapping uses the given one.
#include <cmath>

#include "ir/op.h"
#include "ir/ops/infer_util.h"

namespace kiln::ir {
namespace {

using runtime::Check;

bool OneOf(const std::string& value, std::initializer_list<const char*> allowed) {
  for (const char* a : allowed) {
    if (value == a) return true;
  }
  return false;
}

Type Resize(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  const auto& size = attrs.GetInts("size");
  const auto& scales = attrs.GetFloats("scales");
  const auto& roi = attrs.GetFloats("roi");
  Check(static_cast<int>(size.size()) == data.ndim(), "size ", AttrValueText(size), " must give each of the ",
        data.ndim(), " dimensions of ", ShapeText(data.shape));
  Check(scales.size() == size.size(), "scales ", AttrValueText(scales), " must give each of the ", data.ndim(),
        " dimensions");
  for (size_t d = 0; d < size.size(); ++d) {
    Check(size[d] >= 0, "size ", AttrValueText(size), " must not be negative");
    Check(data.shape[d] > 0 || size[d] == 0, "dimension ", d, " of ", ShapeText(data.shape),
          " is empty: there is nothing to resize it from");
    Check(std::isfinite(scales[d]) && scales[d] > 0, "scales ", AttrValueText(scales), " must be positive");
  }
  Check(roi.empty() || roi.size() == 2 * size.size(), "roi ", AttrValueText(roi), " must hold a start and an end for",
        " each dimension (", 2 * size.size(), " values) or nothing");
  const std::string& method = attrs.GetString("method");
  Check(OneOf(method, {"nearest_neighbor", "linear", "cubic"}), "method '", method,
        "' is not nearest_neighbor, linear or cubic");
  const std::string& mode = attrs.GetString("coordinate_transformation_mode");
  Check(OneOf(mode, {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                     "tf_crop_and_resize", "tf_half_pixel_for_nn"}),
        "coordinate_transformation_mode '", mode, "' is not half_pixel, half_pixel_symmetric, pytorch_half_pixel, ",
        "align_corners, asymmetric, tf_crop_and_resize or tf_half_pixel_for_nn");
  Check(mode != "tf_crop_and_resize" || !roi.empty(), "tf_crop_and_resize needs a roi");
  const std::string& rounding = attrs.GetString("rounding_method");
  Check(OneOf(rounding, {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple"}), "rounding_method '",
        rounding, "' is not round_prefer_floor, round_prefer_ceil, floor, ceil or simple");
  Check(method == "nearest_neighbor" || data.dtype.code == kDLFloat, method, " resizing needs floats, got ",
        DTypeToString(data.dtype));
  return Type::Tensor(size, data.dtype);
}

// image.grid_sample: data [N, C, H, W] read at grid [N, Ho, Wo, 2] gives [N, C, Ho, Wo].
Type GridSample(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  const TensorType& grid = TensorArg(args, 1);
  Check(data.ndim() == 4, "data must be NCHW (2-D images), got ", ShapeText(data.shape));
  Check(data.shape[2] > 0 && data.shape[3] > 0, "the images ", ShapeText(data.shape), " are empty: nothing to sample");
  Check(grid.ndim() == 4 && grid.shape[3] == 2 && grid.shape[0] == data.shape[0], "the grid must be [N, H, W, 2] with",
        " the data's N = ", data.shape[0], ", got ", ShapeText(grid.shape));
  Check(data.dtype == grid.dtype && data.dtype.code == kDLFloat, "data and grid must be floats of one type, got ",
        DTypeToString(data.dtype), " and ", DTypeToString(grid.dtype));
  Check(OneOf(attrs.GetString("method"), {"nearest", "bilinear", "bicubic"}), "method '", attrs.GetString("method"),
        "' is not nearest, bilinear or bicubic");
  Check(OneOf(attrs.GetString("padding_mode"), {"zeros", "border", "reflection"}), "padding_mode '",
        attrs.GetString("padding_mode"), "' is not zeros, border or reflection");
  return Type::Tensor({data.shape[0], data.shape[1], grid.shape[1], grid.shape[2]}, data.dtype);
}

// vision.roi_align(data [N, C, H, W], rois [R, 4], batch_indices [R]): [R, C, pooled_size].
Type RoiAlign(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  const TensorType& rois = TensorArg(args, 1);
  const TensorType& batch = TensorArg(args, 2);
  Check(data.ndim() == 4 && data.dtype == runtime::kFloat32, "data must be float32 [N, C, H, W], got ",
        ShapeText(data.shape));
  Check(rois.ndim() == 2 && rois.shape[1] == 4 && rois.dtype == runtime::kFloat32, "rois must be float32 [rois, 4], got ",
        ShapeText(rois.shape));
  Check(batch.ndim() == 1 && batch.shape[0] == rois.shape[0] && batch.dtype == DLDataType{kDLInt, 64, 1},
        "batch_indices must be int64 [", rois.shape[0], "], got ", ShapeText(batch.shape));
  const auto& pooled = attrs.GetInts("pooled_size");
  Check(pooled.size() == 2 && pooled[0] > 0 && pooled[1] > 0, "pooled_size ", AttrValueText(pooled),
        " must be two positive values");
  Check(attrs.GetInt("sample_ratio") >= 0 && attrs.GetInt("sample_ratio") <= 1024, "sample_ratio ",
        attrs.GetInt("sample_ratio"), " must be in [0, 1024]");
  const std::string& mode = attrs.GetString("mode");
  Check(mode == "avg" || mode == "max", "mode '", mode, "' is not avg or max");
  return Type::Tensor({rois.shape[0], data.shape[1], pooled[0], pooled[1]}, data.dtype);
}

}  // namespace

void RegisterImageOps(OpTable& table) {
  table["vision.roi_align"] = {
      "vision.roi_align", 3, 3,
      {{"pooled_size", AttrKind::kInts, {}, "the output's height and width per region"},
       {"spatial_scale", AttrKind::kFloat, 1.0, "from the regions' coordinates to the data's"},
       {"sample_ratio", AttrKind::kInt, int64_t{0}, "samples per bin along each axis (0: as many as it is wide)"},
       {"mode", AttrKind::kString, std::string("avg"), "avg or max"},
       {"aligned", AttrKind::kInt, int64_t{1}, "half-pixel coordinates (ONNX's half_pixel; else output_half_pixel)"}},
      OpPattern::kOpaque,
      RoiAlign,
      "each region of interest pooled to a fixed grid from bilinear samples (ONNX RoiAlign)"};
  table["image.grid_sample"] = {
      "image.grid_sample", 2, 2,
      {{"method", AttrKind::kString, std::string("bilinear"), "nearest, bilinear or bicubic"},
       {"padding_mode", AttrKind::kString, std::string("zeros"), "outside the input: zeros, border or reflection"},
       {"align_corners", AttrKind::kInt, int64_t{0}, "-1 and 1 are the corner pixels' centers (else their edges)"}},
      OpPattern::kOpaque,
      GridSample,
      "data sampled at the grid's normalized coordinates (ONNX GridSample)"};
  table["image.resize"] = {
      "image.resize", 1, 1,
      {{"size", AttrKind::kInts, {}, "the output's shape"},
       {"scales", AttrKind::kFloats, {}, "per axis, output length over input length as the coordinate mapping uses it"},
       {"roi", AttrKind::kFloats, std::vector<double>{}, "tf_crop_and_resize's region: all starts, then all ends"},
       {"method", AttrKind::kString, std::string("nearest_neighbor"), "nearest_neighbor, linear or cubic"},
       {"coordinate_transformation_mode", AttrKind::kString, std::string("half_pixel"),
        "how an output coordinate maps to an input one (ONNX's modes)"},
       {"rounding_method", AttrKind::kString, std::string("round_prefer_floor"),
        "nearest_neighbor's rounding: round_prefer_floor, round_prefer_ceil, floor, ceil, or simple (floor when "
        "enlarging, ceil when shrinking: ONNX Upsample's)"},
       {"cubic_alpha", AttrKind::kFloat, -0.75, "the cubic kernel's a"},
       {"cubic_exclude", AttrKind::kInt, int64_t{0}, "taps outside the input get weight 0 and the rest are rescaled"},
       {"extrapolation_value", AttrKind::kFloat, 0.0, "tf_crop_and_resize's value outside the input"},
       {"antialias", AttrKind::kInt, int64_t{0}, "widen linear and cubic kernels by the inverse scale when shrinking"}},
      OpPattern::kInjective,
      Resize,
      "data resampled to `size` by nearest, linear or cubic interpolation along every axis (ONNX Resize)",
      nullptr,
      LayoutRule::kSpatialResize};
}

}  // namespace kiln::ir
