// ONNX Resize with its sizes, scales or roi given at run time: the output's shape as the inputs
// and keep_aspect_ratio_policy say (ResizeShapeAtRunTime), then each axis's taps computed as the
// compiler would tabulate them (image/resize_taps.h) and applied to every output element
// (ResizeAtRunTime).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/backend_api.h"
#include "kernels/image/resize_taps.h"
#include "kernels/kernels.h"

namespace kiln::kernels {
namespace {

int FailWith(const char* where, const std::string& what) {
  std::string message = std::string(where) + ": " + what;
  return Fail(message.c_str());
}

constexpr double kLongest = 1099511627776.0;  // 2^40 elements along an axis

}  // namespace

int ResizeShapeAtRunTime(const int64_t* in, int64_t rank, const double* roi, int64_t num_roi, const double* scales,
                         int64_t num_scales, const int64_t* sizes, int64_t num_sizes, const int64_t* axes,
                         int64_t num_axes, const char* policy, int64_t* out, double* out_scales, double* out_roi,
                         const char* where) {
  for (int64_t d = 0; d < rank; ++d) {
    out[d] = in[d];
    out_scales[d] = 1;
    out_roi[d] = 0;
    out_roi[rank + d] = 1;
  }
  if (num_roi != 0 && num_roi != 2 * num_axes) {
    return FailWith(where, "the roi holds " + std::to_string(num_roi) + " values; it needs a start and an end for " +
                               "each of " + std::to_string(num_axes) + " axes");
  }
  for (int64_t i = 0; i < num_axes && num_roi != 0; ++i) {
    out_roi[axes[i]] = roi[i];
    out_roi[rank + axes[i]] = roi[num_axes + i];
  }
  if ((num_scales == 0) == (num_sizes == 0)) return FailWith(where, "Resize needs scales or sizes, exactly one of them");
  int64_t given = num_scales == 0 ? num_sizes : num_scales;
  if (given != num_axes) {
    return FailWith(where, (num_scales == 0 ? "the sizes hold " : "the scales hold ") + std::to_string(given) +
                               " values for " + std::to_string(num_axes) + " axes");
  }
  if (num_scales != 0) {
    for (int64_t i = 0; i < num_axes; ++i) {
      double s = scales[i], length = std::floor(static_cast<double>(in[axes[i]]) * s);
      if (!(s > 0) || !std::isfinite(s)) return FailWith(where, "scale " + std::to_string(s) + " must be positive");
      if (length > kLongest) return FailWith(where, "scale " + std::to_string(s) + " makes an axis too long");
      out_scales[axes[i]] = s;
      out[axes[i]] = static_cast<int64_t>(length);
    }
    return 0;
  }
  for (int64_t i = 0; i < num_axes; ++i) {
    if (sizes[i] <= 0 || static_cast<double>(sizes[i]) > kLongest) {
      return FailWith(where, "size " + std::to_string(sizes[i]) + " must be in [1, 2^40]");
    }
    if (in[axes[i]] == 0) return FailWith(where, "axis " + std::to_string(axes[i]) + " is empty: it cannot be resized");
  }
  std::string keep = policy;
  if (keep == "stretch") {
    for (int64_t i = 0; i < num_axes; ++i) {
      out[axes[i]] = sizes[i];
      out_scales[axes[i]] = static_cast<double>(sizes[i]) / static_cast<double>(in[axes[i]]);
    }
    return 0;
  }
  // One scale for every axis: the largest that fits in the sizes, or the smallest that covers them.
  double scale = keep == "not_larger" ? INFINITY : 0;
  for (int64_t i = 0; i < num_axes; ++i) {
    double s = static_cast<double>(sizes[i]) / static_cast<double>(in[axes[i]]);
    scale = keep == "not_larger" ? std::min(scale, s) : std::max(scale, s);
  }
  for (int64_t i = 0; i < num_axes; ++i) {
    double length = scale * static_cast<double>(in[axes[i]]) + 0.5;
    if (!(length >= 1 && length <= kLongest)) {
      return FailWith(where, "keep_aspect_ratio_policy makes axis " + std::to_string(axes[i]) + " too long or empty");
    }
    out_scales[axes[i]] = scale;
    out[axes[i]] = static_cast<int64_t>(length);
  }
  return 0;
}

// Every output element is the sum over its taps along each axis of the weights' product times the
// input there; an element outside the roi along any axis is the extrapolation value.
int ResizeAtRunTime(const float* data, const int64_t* in, int64_t rank, const int64_t* out, const double* scales,
                    const double* roi, const char* method, const char* mode, const char* rounding, double cubic_alpha,
                    bool exclude_outside, bool antialias, float extrapolation, float* result) {
  ResizeMethod how{method, mode, rounding, cubic_alpha, exclude_outside, antialias};
  std::vector<ResizeAxis> taps;
  std::vector<int64_t> strides(static_cast<size_t>(rank), 1), at(static_cast<size_t>(rank), 0);
  int64_t elements = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (d + 1 < rank) strides[d] = strides[d + 1] * in[d + 1];
    elements *= out[d];
  }
  for (int64_t d = 0; d < rank; ++d) {
    taps.push_back(ComputeResizeAxis(in[d], out[d], scales[d], roi[d], roi[rank + d], how));
  }
  std::vector<int64_t> tap(static_cast<size_t>(rank), 0);
  for (int64_t i = 0; i < elements; ++i) {
    bool outside = false;
    for (int64_t d = 0; d < rank; ++d) outside = outside || (!taps[d].outside.empty() && taps[d].outside[at[d]]);
    double sum = 0;
    if (!outside) {
      std::fill(tap.begin(), tap.end(), 0);
      for (bool more = true; more;) {  // every combination of one tap per axis
        double weight = 1;
        int64_t source = 0;
        for (int64_t d = 0; d < rank; ++d) {
          int64_t k = at[d] * taps[d].taps + tap[d];
          weight *= taps[d].weight[k];
          source += taps[d].index[k] * strides[d];
        }
        if (weight != 0) sum += weight * data[source];
        more = false;
        for (int64_t d = rank - 1; d >= 0 && !more; --d) {
          more = ++tap[d] < taps[d].taps;
          if (!more) tap[d] = 0;
        }
      }
    }
    result[i] = outside ? extrapolation : static_cast<float>(sum);
    for (int64_t d = rank - 1; d >= 0 && ++at[d] == out[d]; --d) at[d] = 0;
  }
  return 0;
}

}  // namespace kiln::kernels
