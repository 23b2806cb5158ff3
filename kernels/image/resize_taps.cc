// ONNX Resize's taps along one axis (ComputeResizeAxis). The window of each output coordinate is
// laid out as ONNX's reference lays it: the input coordinate x it maps to splits into f and a
// ratio r in (0, 1] (x = f + r; an integral x is f = x - 1, r = 1), and tap i reads input f + i,
// clamped to the input (edge padding).
#include "kernels/image/resize_taps.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace kiln::kernels {
namespace {

// The input coordinate output coordinate `o` maps to, or NaN when it lies outside the input
// under tf_crop_and_resize (the mode's: any but the others).
double SourceCoordinate(int64_t o, int64_t in, int64_t out, double scale, double roi_start, double roi_end,
                        const std::string& mode) {
  // ONNX's reference measures the output as scale * in; that is `out` when the model gave sizes.
  double width = scale * static_cast<double>(in);
  if (std::abs(width - static_cast<double>(out)) <= 1e-9 * std::max<double>(1, out)) width = static_cast<double>(out);
  double x = static_cast<double>(o);
  if (mode == "align_corners") return width == 1 ? 0 : x * static_cast<double>(in - 1) / (width - 1);
  if (mode == "asymmetric") return x / scale;
  if (mode == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0;
  if (mode == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (mode == "tf_half_pixel_for_nn") return (x + 0.5) / scale;  // opsets 11 and 12
  if (mode == "half_pixel_symmetric") {
    double offset = static_cast<double>(in) / 2 * (1 - static_cast<double>(out) / width);
    return offset + (x + 0.5) / scale - 0.5;
  }
  double span = (roi_end - roi_start) * static_cast<double>(in - 1);
  double source = (width == 1 ? span / 2 : x * span / (width - 1)) + roi_start * static_cast<double>(in - 1);
  return source < 0 || source > static_cast<double>(in - 1) ? NAN : source;
}

double Cubic(double x, double a) {
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Tap offsets from f (the first) and their weights for ratio r.
void Kernel(double r, double scale, const ResizeMethod& m, int64_t& first, std::vector<double>& weights) {
  weights.clear();
  if (m.method == "nearest_neighbor") {
    first = 0;
    bool ceil = false;
    if (r == 1) ceil = true;
    else if (m.rounding == "round_prefer_floor") ceil = r > 0.5;
    else if (m.rounding == "round_prefer_ceil") ceil = r >= 0.5;
    else if (m.rounding == "ceil") ceil = true;
    else if (m.rounding == "simple") ceil = scale < 1;
    weights = {ceil ? 0.0 : 1.0, ceil ? 1.0 : 0.0};
    return;
  }
  // Antialiasing widens the kernel by 1 / scale when shrinking; without it the kernel is the
  // plain one (scale 1).
  double s = m.antialias ? std::min(scale, 1.0) : 1.0;
  bool linear = m.method == "linear";
  first = static_cast<int64_t>(std::floor((linear ? -1 : -2) / s) + 1);
  int64_t count = 2 - 2 * first;
  double total = 0;
  for (int64_t i = first; i < first + count; ++i) {
    double arg = (static_cast<double>(i) - r) * s;
    double w = linear ? std::clamp(1 - std::abs(arg), 0.0, 1.0) : Cubic(arg, m.cubic_alpha);
    weights.push_back(w);
    total += w;
  }
  if (m.antialias) {
    for (double& w : weights) w /= total;
  }
}

}  // namespace

ResizeAxis ComputeResizeAxis(int64_t in, int64_t out, double scale, double roi_start, double roi_end,
                             const ResizeMethod& method) {
  std::vector<std::map<int64_t, double>> rows(out);  // input coordinate -> weight, per output coordinate
  std::vector<bool> outside(out, false);
  bool any_outside = false;
  std::vector<double> weights;
  for (int64_t o = 0; o < out; ++o) {
    double x = SourceCoordinate(o, in, out, scale, roi_start, roi_end, method.mode);
    if (std::isnan(x)) {
      outside[o] = any_outside = true;
      rows[o][0] = 0;
      continue;
    }
    double f = std::floor(x), r = x - f;
    if (r == 0) f -= 1, r = 1;
    int64_t first = 0;
    Kernel(r, scale, method, first, weights);
    auto base = static_cast<int64_t>(f) + first;
    if (method.cubic_exclude) {
      double total = 0;
      for (size_t i = 0; i < weights.size(); ++i) {
        int64_t at = base + static_cast<int64_t>(i);
        if (at < 0 || at >= in) weights[i] = 0;
        total += weights[i];
      }
      if (total != 0) {
        for (double& w : weights) w /= total;
      }
    }
    for (size_t i = 0; i < weights.size(); ++i) {
      int64_t at = std::clamp<int64_t>(base + static_cast<int64_t>(i), 0, in - 1);
      if (weights[i] != 0) rows[o][at] += weights[i];
    }
    if (rows[o].empty()) rows[o][std::clamp<int64_t>(static_cast<int64_t>(f), 0, in - 1)] = 0;
  }
  // Taps of weight 0 are dropped; shorter rows are padded with weight-0 taps of their first input.
  ResizeAxis axis;
  for (const auto& row : rows) axis.taps = std::max<int64_t>(axis.taps, static_cast<int64_t>(row.size()));
  bool identity = in == out && axis.taps == 1 && !any_outside;
  for (int64_t o = 0; o < out; ++o) {
    int64_t written = 0;
    for (const auto& [at, w] : rows[o]) {
      axis.index.push_back(at);
      axis.weight.push_back(w);
      identity = identity && at == o && w == 1;
      ++written;
    }
    for (; written < axis.taps; ++written) {
      axis.index.push_back(rows[o].begin()->first);
      axis.weight.push_back(0);
    }
  }
  axis.identity = identity;
  if (any_outside) axis.outside = std::move(outside);
  return axis;
}

}  // namespace kiln::kernels
