// The arithmetic of image.resize along one axis: for each output coordinate, the input
// coordinates it reads and their weights (ONNX Resize's reference semantics: coordinate
// transformation, then nearest, linear or cubic taps on the edge-padded input, optionally
// antialiased and with outside taps excluded). The compiler tabulates them once
// (backend/codegen/image_emitter.cc); Resize with sizes or scales given at run time computes them
// as it runs (image/resize.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::kernels {

struct ResizeMethod {
  std::string method;    // nearest_neighbor, linear, cubic
  std::string mode;      // ONNX's coordinate_transformation_mode (checked by the caller: one of ONNX's)
  std::string rounding;  // nearest_neighbor's rounding_method
  double cubic_alpha = -0.75;
  bool cubic_exclude = false;
  bool antialias = false;
};

struct ResizeAxis {
  int64_t taps = 1;               // per output coordinate
  std::vector<int64_t> index;     // output length * taps input coordinates, each in [0, input length)
  std::vector<double> weight;     // output length * taps; a coordinate's weights add up to 1
  std::vector<bool> outside;      // per output coordinate (tf_crop_and_resize): the result is the
                                  // extrapolation value; empty when no coordinate is outside
  bool identity = false;          // output coordinate o is input coordinate o, whole
};

// One axis of length `in` resized to `out` with `scale` (the coordinate mapping's; out / in when
// the model gave sizes) and tf_crop_and_resize's region [roi_start, roi_end] of the input.
ResizeAxis ComputeResizeAxis(int64_t in, int64_t out, double scale, double roi_start, double roi_end,
                             const ResizeMethod& method);

}  // namespace kiln::kernels
