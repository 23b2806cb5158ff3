// Softmax and layer normalization, row by row across threads.
#include <algorithm>
#include <cmath>

#include "kernels/kernels.h"

namespace kiln::kernels {
namespace {

struct SoftmaxJob {
  int64_t axis_size, inner;
  const float* data;
  float* out;
};

// Work item = one (outer, inner) position; its values are axis_size apart by `inner`.
void SoftmaxRows(int64_t begin, int64_t end, void* context) {
  const auto& job = *static_cast<const SoftmaxJob*>(context);
  for (int64_t item = begin; item < end; ++item) {
    int64_t outer = item / job.inner, inner = item % job.inner;
    const float* in = job.data + outer * job.axis_size * job.inner + inner;
    float* o = job.out + outer * job.axis_size * job.inner + inner;
    float max_value = -INFINITY;
    for (int64_t i = 0; i < job.axis_size; ++i) max_value = std::max(max_value, in[i * job.inner]);
    double sum = 0;
    for (int64_t i = 0; i < job.axis_size; ++i) {
      float e = std::exp(in[i * job.inner] - max_value);
      o[i * job.inner] = e;
      sum += e;
    }
    float scale = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < job.axis_size; ++i) o[i * job.inner] *= scale;
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
  SoftmaxJob job{axis_size, inner, data, out};
  ParallelFor(outer * inner, SoftmaxRows, &job);
}

void LayerNorm(int64_t rows, int64_t size, float epsilon, const float* data, const float* gamma,
               const float* beta, float* out) {
  LayerNormJob job{size, epsilon, data, gamma, beta, out};
  ParallelFor(rows, LayerNormRows, &job);
}

}  // namespace kiln::kernels
