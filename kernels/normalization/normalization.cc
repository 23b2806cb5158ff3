// Softmax and layer normalization, row by row across threads; softmax in vectors of kLanes floats
// (simd.h: its exp has about 2e-7 relative error), along a contiguous row or across neighbouring
// rows when the axis is not the last.
#include <algorithm>
#include <cmath>

#include "kernels/kernels.h"
#include "kernels/simd.h"

namespace kiln::kernels {
namespace {

struct SoftmaxJob {
  int64_t axis_size, inner;
  int64_t lane_blocks;  // items per outer index: blocks of kLanes inner positions (and a partial one)
  const float* data;
  float* out;
};

constexpr int kLanes = kCompiledConfig.vector_floats >= 16 ? 16 : 8;
using Lanes = Vec<kLanes>;

// The lanes' values combined by `f` (max, or a sum in double).
template <typename T, typename F>
T Reduce(Lanes v, T first, F f) {
  float lanes[kLanes];
  v.Store(lanes);
  T r = first;
  for (float x : lanes) r = f(r, x);
  return r;
}

// One contiguous row (inner == 1), kLanes values at a time: the max, exp(x - max) stored and
// summed in float lanes (added up in double), then scaled by 1 / sum.
void SoftmaxRow(const float* in, float* o, int64_t n) {
  int64_t vector_end = n - n % kLanes;
  float low = -INFINITY;
  Lanes lanes_max = Lanes::Broadcast(&low);
  for (int64_t i = 0; i < vector_end; i += kLanes) lanes_max = Lanes::Max(lanes_max, Lanes::Load(in + i));
  float max_value = Reduce(lanes_max, low, [](float a, float b) { return std::max(a, b); });
  for (int64_t i = vector_end; i < n; ++i) max_value = std::max(max_value, in[i]);
  Lanes shift = Lanes::Broadcast(&max_value), lanes_sum = Lanes::Zero();
  for (int64_t i = 0; i < vector_end; i += kLanes) {
    Lanes e = Lanes::Exp(Lanes::Sub(Lanes::Load(in + i), shift));
    e.Store(o + i);
    lanes_sum = Lanes::Add(lanes_sum, e);
  }
  // The last values in one vector too: a std::exp per value after the vectors was most of ViT's
  // softmax (rows of 197: 12 vectors and 5 calls; 168 us a layer on one Zen 5 core). Stored lanes
  // only, and read back with the others zero for the sum.
  const int tail = static_cast<int>(n - vector_end);
  if (tail > 0) {
    Lanes::Exp(Lanes::Sub(Lanes::LoadLanes(in + vector_end, 0, tail), shift)).StoreLanes(o + vector_end, tail);
    lanes_sum = Lanes::Add(lanes_sum, Lanes::LoadLanes(o + vector_end, 0, tail));
  }
  double sum = Reduce(lanes_sum, 0.0, [](double a, float b) { return a + b; });
  float scale = static_cast<float>(1.0 / sum);
  Lanes lanes_scale = Lanes::Broadcast(&scale);
  for (int64_t i = 0; i < vector_end; i += kLanes) Lanes::Mul(Lanes::Load(o + i), lanes_scale).Store(o + i);
  for (int64_t i = vector_end; i < n; ++i) o[i] *= scale;
}

// kLanes neighbouring inner positions at once: their values along the axis are `inner` apart.
void SoftmaxLanes(const float* in, float* o, int64_t axis_size, int64_t inner) {
  float low = -INFINITY;
  Lanes max_value = Lanes::Broadcast(&low), sum = Lanes::Zero();
  for (int64_t i = 0; i < axis_size; ++i) max_value = Lanes::Max(max_value, Lanes::Load(in + i * inner));
  for (int64_t i = 0; i < axis_size; ++i) {
    Lanes e = Lanes::Exp(Lanes::Sub(Lanes::Load(in + i * inner), max_value));
    e.Store(o + i * inner);
    sum = Lanes::Add(sum, e);
  }
  float one = 1.0f;
  Lanes scale = Lanes::Div(Lanes::Broadcast(&one), sum);
  for (int64_t i = 0; i < axis_size; ++i) Lanes::Mul(Lanes::Load(o + i * inner), scale).Store(o + i * inner);
}

// One inner position, its values `inner` apart.
void SoftmaxStrided(const float* in, float* o, int64_t axis_size, int64_t inner) {
  float max_value = -INFINITY;
  for (int64_t i = 0; i < axis_size; ++i) max_value = std::max(max_value, in[i * inner]);
  double sum = 0;
  for (int64_t i = 0; i < axis_size; ++i) {
    float e = std::exp(in[i * inner] - max_value);
    o[i * inner] = e;
    sum += e;
  }
  float scale = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < axis_size; ++i) o[i * inner] *= scale;
}

// Work item = (outer, a block of kLanes inner positions, or the last partial block).
void SoftmaxItems(int64_t begin, int64_t end, void* context) {
  const auto& job = *static_cast<const SoftmaxJob*>(context);
  for (int64_t item = begin; item < end; ++item) {
    int64_t outer = item / job.lane_blocks, first = item % job.lane_blocks * kLanes;
    const float* in = job.data + outer * job.axis_size * job.inner + first;
    float* o = job.out + outer * job.axis_size * job.inner + first;
    if (job.inner == 1) {
      SoftmaxRow(in, o, job.axis_size);
    } else if (first + kLanes <= job.inner) {
      SoftmaxLanes(in, o, job.axis_size, job.inner);
    } else {
      for (int64_t j = 0; j < job.inner - first; ++j) SoftmaxStrided(in + j, o + j, job.axis_size, job.inner);
    }
  }
}

struct LayerNormJob {
  int64_t size;
  float epsilon;
  const float *data, *gamma, *beta;
  float* out;
};

// The sum of f(x[i]) over a row, in kLanes independent float partial sums (which the compiler
// keeps in vector registers) added up in double: as accurate as a double loop over rows of a few
// thousand, without its chain of dependent scalar additions.
template <typename F>
double RowSum(const float* x, int64_t n, F f) {
  constexpr int kLanes = 16;
  float partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) partial[l] += f(x[i + l]);
  }
  double sum = 0;
  for (; i < n; ++i) sum += f(x[i]);
  for (float p : partial) sum += p;
  return sum;
}

void LayerNormRows(int64_t begin, int64_t end, void* context) {
  const auto& job = *static_cast<const LayerNormJob*>(context);
  for (int64_t row = begin; row < end; ++row) {
    const float* in = job.data + row * job.size;
    float* o = job.out + row * job.size;
    auto size = static_cast<double>(job.size);
    float m = static_cast<float>(RowSum(in, job.size, [](float v) { return v; }) / size);
    double variance = RowSum(in, job.size, [m](float v) { return (v - m) * (v - m); }) / size;
    float inv = static_cast<float>(1.0 / std::sqrt(variance + job.epsilon));
    for (int64_t i = 0; i < job.size; ++i) o[i] = (in[i] - m) * inv * job.gamma[i] + job.beta[i];
  }
}

}  // namespace

void Softmax(int64_t outer, int64_t axis_size, int64_t inner, const float* data, float* out) {
  SoftmaxJob job{axis_size, inner, (inner + kLanes - 1) / kLanes, data, out};
  ParallelFor(outer * job.lane_blocks, SoftmaxItems, &job);
}

void LayerNorm(int64_t rows, int64_t size, float epsilon, const float* data, const float* gamma,
               const float* beta, float* out) {
  LayerNormJob job{size, epsilon, data, gamma, beta, out};
  ParallelFor(rows, LayerNormRows, &job);
}

}  // namespace kiln::kernels
