// 3x3 stride-1 convolutions in blocked layouts by Winograd's minimal filtering F(4x4, 3x3) (Lavin
// and Gray, "Fast Algorithms for Convolutional Neural Networks", 2015): the output in tiles of 4x4
// positions, each computed from a 6x6 window of the input as A^T [(G g G^T) . (B^T d B)] A: 36
// products per tile and pair of channels where the direct convolution has 144. Three passes, each
// split across threads:
//   1. each 6x6 window of each input channel block becomes 36 vectors (B^T d B), stored as 36
//      blocked planes whose positions are the tiles;
//   2. the 36 sums over input channels are one grouped 1x1 convolution (the Conv2DNCHWc variant the
//      call names, of Conv2DWinogradProduct's parameters: 36 groups, the tiles as positions);
//   3. each tile's 36 sums become its 4x4 outputs (A^T m A), then the epilogue runs over the rows.
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

// The sizes the three passes share.
struct Plan {
  const Conv2DWinogradParams* p;
  int64_t in_blocks, out_blocks;  // C / ib, O / ob
  int64_t tile_rows, tile_cols, tiles;
};

Plan PlanOf(const Conv2DWinogradParams& p) {
  int64_t rows = (p.out_height + kTile - 1) / kTile, cols = (p.out_width + kTile - 1) / kTile;
  return {&p, p.in_channels / p.in_block, p.out_channels / p.out_block, rows, cols, WinogradTiles(p.out_height, p.out_width)};
}

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
  float* points;  // [N, 36, C / ib, tiles, ib]
};

// Work item: (image, input channel block, row of tiles).
template <int B>
void TransformInputs(int64_t begin, int64_t end, void* context) {
  using V = Vec<B>;
  const auto& job = *static_cast<const InputJob*>(context);
  const Plan& plan = job.plan;
  const Conv2DWinogradParams& p = *plan.p;
  const int64_t point_stride = plan.in_blocks * plan.tiles * B;  // between the planes of two points
  for (int64_t item = begin; item < end; ++item) {
    int64_t row = item % plan.tile_rows, icb = item / plan.tile_rows % plan.in_blocks;
    int64_t n = item / plan.tile_rows / plan.in_blocks;
    const float* plane = job.data + (n * plan.in_blocks + icb) * p.in_height * p.in_width * B;
    float* points = job.points + (n * kPoints * plan.in_blocks + icb) * plan.tiles * B;
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
      float* tile = points + (row * plan.tile_cols + col) * B;
#pragma GCC unroll 36
      for (int e = 0; e < kPoints; ++e) d[e].Store(tile + e * point_stride);
    }
  }
}

struct OutputJob {
  Plan plan;
  const float* sums;  // [N, 36, O / ob, tiles, ob]
  float* out;
  const EpilogueStep* epilogue;
  int epilogue_size;
};

// Work item: (image, output channel block, row of tiles): its up to four rows of outputs.
template <int B>
void TransformOutputs(int64_t begin, int64_t end, void* context) {
  using V = Vec<B>;
  const auto& job = *static_cast<const OutputJob*>(context);
  const Plan& plan = job.plan;
  const Conv2DWinogradParams& p = *plan.p;
  const int64_t point_stride = plan.out_blocks * plan.tiles * B;
  for (int64_t item = begin; item < end; ++item) {
    int64_t row = item % plan.tile_rows, ocb = item / plan.tile_rows % plan.out_blocks;
    int64_t n = item / plan.tile_rows / plan.out_blocks;
    const float* sums = job.sums + (n * kPoints * plan.out_blocks + ocb) * plan.tiles * B;
    float* plane = job.out + (n * plan.out_blocks + ocb) * p.out_height * p.out_width * B;
    int64_t y0 = row * kTile, rows = std::min<int64_t>(kTile, p.out_height - y0);
    for (int64_t col = 0; col < plan.tile_cols; ++col) {
      const float* tile = sums + (row * plan.tile_cols + col) * B;
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
  Plan plan = PlanOf(p);
  Workspace points(static_cast<uint64_t>(p.batch * kPoints * p.in_channels * plan.tiles) * sizeof(float));
  Workspace sums(static_cast<uint64_t>(p.batch * kPoints * p.out_channels * plan.tiles) * sizeof(float));
  if (!points.ok() || !sums.ok()) return Fail("Conv2DWinograd: out of workspace memory");
  InputJob input{plan, data, points.as<float>()};
  ParallelFor(p.batch * plan.in_blocks * plan.tile_rows, p.in_block == 16 ? TransformInputs<16> : TransformInputs<8>,
              &input);
  if (product(Conv2DWinogradProduct(p), points.as<float>(), weight, sums.as<float>(), nullptr, 0) != 0) return -1;
  OutputJob output{plan, sums.as<float>(), out, epilogue, epilogue_size};
  ParallelFor(p.batch * plan.out_blocks * plan.tile_rows,
              p.out_block == 16 ? TransformOutputs<16> : TransformOutputs<8>, &output);
  return 0;
}

}  // namespace kiln::kernels
