// Softmax and LayerNorm against their definitions computed in double: softmax over an axis with
// values before and after it (outer, inner > 1), large inputs (the max is subtracted first, so
// nothing overflows), an axis of one; layer norm with gamma and beta, a constant row (variance
// 0: only epsilon divides), rows of one; serial and on the thread pool.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace kiln::kernels {
namespace {

struct SoftmaxShape {
  int64_t outer, axis_size, inner;
};

std::vector<double> SoftmaxReference(const SoftmaxShape& s, const std::vector<float>& data) {
  std::vector<double> out(data.size());
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      auto at = [&](int64_t a) { return (o * s.axis_size + a) * s.inner + i; };
      double max_value = -INFINITY, sum = 0;
      for (int64_t a = 0; a < s.axis_size; ++a) max_value = std::max<double>(max_value, data[at(a)]);
      for (int64_t a = 0; a < s.axis_size; ++a) sum += std::exp(data[at(a)] - max_value);
      for (int64_t a = 0; a < s.axis_size; ++a) out[at(a)] = std::exp(data[at(a)] - max_value) / sum;
    }
  }
  return out;
}

TEST(Softmax, MatchesTheDefinition) {
  std::mt19937 rng(7);
  for (bool threads : {false, true}) {
    UseThreads(threads);
    // Rows whole vectors and not, inner positions in whole vectors of 8 or 16 lanes and a part.
    for (const SoftmaxShape& s : {SoftmaxShape{1, 10, 1}, SoftmaxShape{3, 7, 5}, SoftmaxShape{64, 1000, 1},
                                  SoftmaxShape{2, 1, 9}, SoftmaxShape{5, 33, 17}, SoftmaxShape{12, 197, 1},
                                  SoftmaxShape{4, 128, 1}, SoftmaxShape{2, 5, 32}, SoftmaxShape{3, 6, 40}}) {
      for (float scale : {1.0f, 200.0f}) {  // 200: exp would overflow without subtracting the max
        std::vector<float> data = Random(s.outer * s.axis_size * s.inner, rng);
        for (float& x : data) x *= scale;
        std::vector<float> out(data.size(), NAN);
        Softmax(s.outer, s.axis_size, s.inner, data.data(), out.data());
        std::vector<double> want = SoftmaxReference(s, data);
        std::string what = std::to_string(s.outer) + "x" + std::to_string(s.axis_size) + "x" + std::to_string(s.inner) +
                           " scale " + std::to_string(scale) + (threads ? " threads" : " serial");
        for (size_t k = 0; k < out.size(); ++k) {
          ASSERT_NEAR(out[k], want[k], 1e-6 + 1e-5 * want[k]) << what << " at " << k;
        }
      }
    }
  }
  UseThreads(true);
}

TEST(LayerNorm, MatchesTheDefinition) {
  std::mt19937 rng(8);
  for (bool threads : {false, true}) {
    UseThreads(threads);
    for (int64_t rows : {1, 4, 300}) {
      for (int64_t size : {1, 7, 768}) {
        std::vector<float> data = Random(rows * size, rng), gamma = Random(size, rng), beta = Random(size, rng);
        for (int64_t j = 0; j < size; ++j) data[j] = 0.5f;  // row 0 constant: variance 0
        const float epsilon = 1e-5f;
        std::vector<float> out(data.size(), NAN);
        LayerNorm(rows, size, epsilon, data.data(), gamma.data(), beta.data(), out.data());
        for (int64_t r = 0; r < rows; ++r) {
          double mean = 0, variance = 0;
          for (int64_t j = 0; j < size; ++j) mean += data[r * size + j];
          mean /= size;
          for (int64_t j = 0; j < size; ++j) variance += (data[r * size + j] - mean) * (data[r * size + j] - mean);
          variance /= size;
          for (int64_t j = 0; j < size; ++j) {
            double want = (data[r * size + j] - mean) / std::sqrt(variance + epsilon) * gamma[j] + beta[j];
            ASSERT_NEAR(out[r * size + j], want, 1e-4 * (1 + std::abs(want)))
                << rows << "x" << size << (threads ? " threads" : " serial") << " at " << r << ", " << j;
          }
        }
      }
    }
  }
  UseThreads(true);
}

}  // namespace
}  // namespace kiln::kernels
