// 3x3 stride-1 convolutions in blocked layouts by Winograd's minimal filtering F(4x4, 3x3) (Lavin
// and Gray, "Fast Algorithms for Convolutional Neural Networks", 2015): the output in tiles of 4x4
// positions, each computed from a 6x6 window of the input as A^T [(G g G^T) . (B^T d B)] A: 36
// products per tile and pair of channels where the direct convolution has 144. Each image is
// taken in strips of rows of tiles whose transformed inputs and sums stay in cache
// (kStripBytes), three passes per strip, each split across threads:
//   1. each 6x6 window of each input channel block becomes 36 vectors (B^T d B), stored as 36
//      blocked planes whose positions are the strip's tiles;
//   2. the 36 sums over input channels are one grouped 1x1 convolution (the Conv2DNCHWc variant the
//      call names, of Conv2DWinogradProduct's parameters: 36 groups, the tiles as positions);
//   3. each tile's 36 sums become its 4x4 outputs (A^T m A), then the epilogue runs over the rows.
// (Whole images at once, a text detector's 96 -> 24 channels on 160x160 wrote 22 MB of transformed
// input and read it back from memory: 5.8 ms on one Intel Xeon core, where 80x80 took 1.0.)
// The weights are transformed once, when the library is built (WinogradWeight, winograd.h).
#include <algorithm>

#include "kernels/backend_api.h"
#include "kernels/epilogue.h"
#include "kernels/conv/winograd.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"

namespace kiln::kernels {
namespace {

constexpr int kTile = kWinogradTile, kWindow = kWinogradWindow, kPoints = kWinogradPoints;

// A strip's transformed inputs and sums together, at most (one row of tiles always). ResNet's
// layers (3.6 MB at most, for 64 channels on 56x56) stay whole: in strips of 1 MB ResNet-18 ran
// 5-7% slower; the text detector's 160x160 layers go in strips of 5 rows of tiles (3.4 MB; strips
// of one row, 0.7 MB, were no faster).
constexpr int64_t kStripBytes = 4 << 20;

// The sizes the three passes share: the image's tiles, and the strip of rows of tiles
// [first_row, first_row + rows) of image n that the passes compute, whose tiles are the positions
// of the transformed planes (`tiles` of them).
struct Plan {
  const Conv2DWinogradParams* p;
  int64_t in_blocks, out_blocks;  // C / ib, O / ob
  int64_t tile_rows, tile_cols;   // of the image
  int64_t n, first_row, rows, tiles;
};

// y = B^T x for the six values x[0], x[s], ..., x[5s] (B^T of F(4x4, 3x3), points 0, +-1, +-2).
template <int N>
KILN_ALWAYS_INLINE void InputTransform(const Vec<N>* x, int s, Vec<N>* y, int t) {
  using V = Vec<N>;
  const V two = scalar::Splat<V>::Of(2.0), four = scalar::Splat<V>::Of(4.0), minus_five = scalar::Splat<V>::Of(-5.0);
  V x0 = x[0], x1 = x[s], x2 = x[2 * s], x3 = x[3 * s], x4 = x[4 * s], x5 = x[5 * s];
  V a = V::Fma(x2, -four, x4), b = V::Fma(x1, -four, x3);  // x4 - 4 x2, x3 - 4 x1
  V c = x4 - x2, d = V::Mul(x3 - x1, two);
  y[0] = V::Fma(x0, four, V::Fma(x2, minus_five, x4));
  y[t] = a + b;
  y[2 * t] = a - b;
  y[3 * t] = c + d;
  y[4 * t] = c - d;
  y[5 * t] = V::Fma(x1, four, V::Fma(x3, minus_five, x5));
}

// y = A^T m for the six values m[0], m[s], ..., m[5s]: four values y[0], y[t], y[2t], y[3t].
template <int N>
KILN_ALWAYS_INLINE void OutputTransform(const Vec<N>* m, int s, Vec<N>* y, int t) {
  using V = Vec<N>;
  V s12 = m[s] + m[2 * s], d12 = m[s] - m[2 * s], s34 = m[3 * s] + m[4 * s], d34 = m[3 * s] - m[4 * s];
  y[0] = m[0] + s12 + s34;
  y[t] = V::Fma(d34, scalar::Splat<V>::Of(2.0), d12);
  y[2 * t] = V::Fma(s34, scalar::Splat<V>::Of(4.0), s12);
  y[3 * t] = V::Fma(d34, scalar::Splat<V>::Of(8.0), d12) + m[5 * s];
}

struct InputJob {
  Plan plan;
  const float* data;
  float* points;  // [36, C / ib, tiles, ib] of the strip
};

// Work item: (input channel block, row of tiles of the strip).
template <int B>
void TransformInputs(int64_t begin, int64_t end, void* context) {
  using V = Vec<B>;
  const auto& job = *static_cast<const InputJob*>(context);
  const Plan& plan = job.plan;
  const Conv2DWinogradParams& p = *plan.p;
  const int64_t point_stride = plan.in_blocks * plan.tiles * B;  // between the planes of two points
  for (int64_t item = begin; item < end; ++item) {
    int64_t strip_row = item % plan.rows, icb = item / plan.rows, row = plan.first_row + strip_row;
    const float* plane = job.data + (plan.n * plan.in_blocks + icb) * p.in_height * p.in_width * B;
    float* points = job.points + icb * plan.tiles * B;
    int64_t y0 = row * kTile - p.pad_top;
    for (int64_t col = 0; col < plan.tile_cols; ++col) {
      int64_t x0 = col * kTile - p.pad_left;
      V d[kPoints], u[kPoints];
      bool inside = y0 >= 0 && x0 >= 0 && y0 + kWindow <= p.in_height && x0 + kWindow <= p.in_width;
#pragma GCC unroll 36
      for (int i = 0; i < kPoints; ++i) {
        int64_t y = y0 + i / kWindow, x = x0 + i % kWindow;
        bool in = inside || (y >= 0 && y < p.in_height && x >= 0 && x < p.in_width);
        d[i] = in ? V::Load(plane + (y * p.in_width + x) * B) : V::Zero();
      }
      // Down each column, then along each row of the result.
#pragma GCC unroll 6
      for (int j = 0; j < kWindow; ++j) InputTransform<B>(d + j, kWindow, u + j, kWindow);
#pragma GCC unroll 6
      for (int i = 0; i < kWindow; ++i) InputTransform<B>(u + i * kWindow, 1, d + i * kWindow, 1);
      float* tile = points + (strip_row * plan.tile_cols + col) * B;
#pragma GCC unroll 36
      for (int e = 0; e < kPoints; ++e) d[e].Store(tile + e * point_stride);
    }
  }
}

struct OutputJob {
  Plan plan;
  const float* sums;  // [36, O / ob, tiles, ob] of the strip
  float* out;
  const EpilogueStep* epilogue;
  int epilogue_size;
};

// Work item: (output channel block, row of tiles of the strip): its up to four rows of outputs.
template <int B>
void TransformOutputs(int64_t begin, int64_t end, void* context) {
  using V = Vec<B>;
  const auto& job = *static_cast<const OutputJob*>(context);
  const Plan& plan = job.plan;
  const Conv2DWinogradParams& p = *plan.p;
  const int64_t point_stride = plan.out_blocks * plan.tiles * B;
  for (int64_t item = begin; item < end; ++item) {
    int64_t strip_row = item % plan.rows, ocb = item / plan.rows, row = plan.first_row + strip_row;
    const float* sums = job.sums + ocb * plan.tiles * B;
    float* plane = job.out + (plan.n * plan.out_blocks + ocb) * p.out_height * p.out_width * B;
    int64_t y0 = row * kTile, rows = std::min<int64_t>(kTile, p.out_height - y0);
    for (int64_t col = 0; col < plan.tile_cols; ++col) {
      const float* tile = sums + (strip_row * plan.tile_cols + col) * B;
      V m[kPoints], t[kTile * kWindow], y[kTile * kTile];
#pragma GCC unroll 36
      for (int e = 0; e < kPoints; ++e) m[e] = V::Load(tile + e * point_stride);
#pragma GCC unroll 6
      for (int j = 0; j < kWindow; ++j) OutputTransform<B>(m + j, kWindow, t + j, kWindow);
#pragma GCC unroll 4
      for (int i = 0; i < kTile; ++i) OutputTransform<B>(t + i * kWindow, 1, y + i * kTile, 1);
      int64_t x0 = col * kTile, cols = std::min<int64_t>(kTile, p.out_width - x0);
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) y[i * kTile + j].Store(plane + ((y0 + i) * p.out_width + x0 + j) * B);
      }
    }
    float* first = plane + y0 * p.out_width * B;
    ApplySteps<B>(job.epilogue, job.epilogue_size, ocb, first, rows * p.out_width, first - job.out);
  }
}

}  // namespace

int Conv2DWinograd(const Conv2DWinogradParams& p, const float* data, const float* weight, float* out,
                   const EpilogueStep* epilogue, int epilogue_size, Conv2DNCHWcKernel product) {
  bool blocks_ok = (p.in_block == 8 || p.in_block == 16) && (p.out_block == 8 || p.out_block == 16) &&
                   p.in_channels % p.in_block == 0 && p.out_channels % p.out_block == 0;
  if (!blocks_ok) return Fail("Conv2DWinograd: channels must fill blocks of 8 or 16, in and out");
  bool shape_ok = p.batch >= 1 && p.in_height >= 1 && p.in_width >= 1 && p.out_height >= 1 && p.out_width >= 1 &&
                  p.pad_top >= 0 && p.pad_left >= 0;
  if (!shape_ok) return Fail("Conv2DWinograd: sizes must be positive and the padding not negative");
  const int64_t tile_rows = (p.out_height + kTile - 1) / kTile, tile_cols = (p.out_width + kTile - 1) / kTile;
  const int64_t row_bytes = kPoints * (p.in_channels + p.out_channels) * tile_cols * static_cast<int64_t>(sizeof(float));
  const int64_t strip_rows = std::min(tile_rows, std::max<int64_t>(1, kStripBytes / row_bytes));
  Workspace points(static_cast<uint64_t>(kPoints * p.in_channels * strip_rows * tile_cols) * sizeof(float));
  Workspace sums(static_cast<uint64_t>(kPoints * p.out_channels * strip_rows * tile_cols) * sizeof(float));
  if (!points.ok() || !sums.ok()) return Fail("Conv2DWinograd: out of workspace memory");
  Plan plan{&p, p.in_channels / p.in_block, p.out_channels / p.out_block, tile_rows, tile_cols, 0, 0, 0, 0};
  for (plan.n = 0; plan.n < p.batch; ++plan.n) {
    for (plan.first_row = 0; plan.first_row < tile_rows; plan.first_row += strip_rows) {
      plan.rows = std::min(strip_rows, tile_rows - plan.first_row);
      plan.tiles = plan.rows * tile_cols;
      InputJob input{plan, data, points.as<float>()};
      if (ParallelFor(plan.in_blocks * plan.rows, p.in_block == 16 ? TransformInputs<16> : TransformInputs<8>,
                      &input) != 0) {
        return -1;
      }
      // The product of one image's strip: its tiles as the positions of one row.
      Conv2DNCHWcParams strip = Conv2DWinogradProduct(p);
      strip.batch = 1;
      strip.in_width = strip.out_width = plan.tiles;
      if (product(strip, points.as<float>(), weight, sums.as<float>(), nullptr, 0) != 0) return -1;
      OutputJob output{plan, sums.as<float>(), out, epilogue, epilogue_size};
      if (ParallelFor(plan.out_blocks * plan.rows, p.out_block == 16 ? TransformOutputs<16> : TransformOutputs<8>,
                      &output) != 0) {
        return -1;
      }
    }
  }
  return 0;
}

}  // namespace kiln::kernels
