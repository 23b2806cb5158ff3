// GridSample on 2-D images (ONNX's, with its reference's arithmetic): each output pixel reads the
// input at the grid's normalized (x, y), by nearest, bilinear or bicubic (a = -0.75) taps, with
// zeros, border or reflection padding. The taps of an output pixel are found once and read in
// every channel.
#include <algorithm>
#include <cmath>

#include "kernels/kernels.h"

namespace kiln::kernels {
namespace {

// Reflects x into [lo, hi] by its nearer border until it is inside (ONNX's _gs_reflect).
template <typename T>
T Reflect(T x, T lo, T hi) {
  T range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    T dx = lo - x;
    auto n = static_cast<int64_t>(dx / range);
    T r = dx - static_cast<T>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    T dx = x - hi;
    auto n = static_cast<int64_t>(dx / range);
    T r = dx - static_cast<T>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

template <typename T>
struct Axis {
  int64_t length;
  T lo, hi;  // the reflection borders

  // The coordinate of normalized n in [-1, 1], adjusted by the padding mode when it lies outside.
  T Coordinate(T n, const GridSampleShape& s) const {
    T x = s.align_corners ? (n + 1) / 2 * static_cast<T>(length - 1) : ((n + 1) * static_cast<T>(length) - 1) / 2;
    if (s.mode == 0) x = std::nearbyint(x);
    if (x < lo || x > hi) {
      if (s.padding_mode == 1) x = std::clamp<T>(x, 0, static_cast<T>(length - 1));
      if (s.padding_mode == 2) x = Reflect(x, lo, hi);
    }
    return x;
  }

  // Where tap i reads under the padding mode: an index in [0, length), or -1 for a zero.
  int64_t Index(int64_t i, const GridSampleShape& s) const {
    if (s.padding_mode == 1) return std::clamp<int64_t>(i, 0, length - 1);
    if (s.padding_mode == 2) return static_cast<int64_t>(Reflect(static_cast<T>(i), lo, hi));
    return i >= 0 && i < length ? i : -1;
  }

  // Up to 4 taps of coordinate x: their indices (-1: zero) and weights.
  int Taps(T x, const GridSampleShape& s, int64_t* index, T* weight) const {
    if (s.mode == 0) {
      index[0] = Index(static_cast<int64_t>(x), s);
      weight[0] = 1;
      return 1;
    }
    T first = std::floor(x), t = x - first;
    auto base = static_cast<int64_t>(first);
    if (s.mode == 1) {
      index[0] = Index(base, s), index[1] = Index(base + 1, s);
      weight[0] = 1 - t, weight[1] = t;
      return 2;
    }
    const T a = T(-0.75);
    T u = t + 1, v = 1 - t, w = 2 - t;
    weight[0] = ((a * u - 5 * a) * u + 8 * a) * u - 4 * a;
    weight[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
    weight[2] = ((a + 2) * v - (a + 3)) * v * v + 1;
    weight[3] = ((a * w - 5 * a) * w + 8 * a) * w - 4 * a;
    for (int k = 0; k < 4; ++k) index[k] = Index(base - 1 + k, s);
    return 4;
  }
};

template <typename T>
void Sample(const GridSampleShape& s, const T* data, const T* grid, T* out) {
  auto border = [&](int64_t length) {
    return s.align_corners ? Axis<T>{length, T(0), static_cast<T>(length - 1)}
                           : Axis<T>{length, T(-0.5), static_cast<T>(length) - T(0.5)};
  };
  Axis<T> rows = border(s.in_height), cols = border(s.in_width);
  int64_t plane = s.in_height * s.in_width, pixels = s.out_height * s.out_width;
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t p = 0; p < pixels; ++p) {
      const T* at = grid + (n * pixels + p) * 2;
      int64_t yi[4], xi[4];
      T yw[4], xw[4];
      int ny = rows.Taps(rows.Coordinate(at[1], s), s, yi, yw);
      int nx = cols.Taps(cols.Coordinate(at[0], s), s, xi, xw);
      for (int64_t c = 0; c < s.channels; ++c) {
        const T* image = data + (n * s.channels + c) * plane;
        T sum = 0;
        for (int i = 0; i < ny; ++i) {
          if (yi[i] < 0) continue;
          T row = 0;
          for (int j = 0; j < nx; ++j) {
            if (xi[j] >= 0) row += xw[j] * image[yi[i] * s.in_width + xi[j]];
          }
          sum += yw[i] * row;
        }
        out[(n * s.channels + c) * pixels + p] = sum;
      }
    }
  }
}

}  // namespace

void GridSample(const GridSampleShape& s, const float* data, const float* grid, float* out) {
  Sample(s, data, grid, out);
}
void GridSample(const GridSampleShape& s, const double* data, const double* grid, double* out) {
  Sample(s, data, grid, out);
}

}  // namespace kiln::kernels
