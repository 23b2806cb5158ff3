// TopK: the k largest or smallest elements of each row along an axis, sorted, with their indices.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <vector>

#include "kernels/kernels.h"

namespace kiln::kernels {
namespace {

// NaN orders above every number (as ONNX Runtime's TopK); equal values keep the lower index first.
template <typename T>
bool Above(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return !std::isnan(b);
  }
  return a > b;
}

template <typename T>
void TopKRows(const TopKShape& s, const T* data, T* values, int64_t* indices) {
  std::vector<int64_t> order(s.axis_size);
  for (int64_t outer = 0; outer < s.outer; ++outer) {
    for (int64_t inner = 0; inner < s.inner; ++inner) {
      const T* row = data + outer * s.axis_size * s.inner + inner;
      auto at = [&](int64_t i) { return row[i * s.inner]; };
      auto first = [&](int64_t a, int64_t b) {
        bool a_first = s.smallest ? Above(at(b), at(a)) : Above(at(a), at(b));
        bool b_first = s.smallest ? Above(at(a), at(b)) : Above(at(b), at(a));
        return a_first || (!b_first && a < b);
      };
      std::iota(order.begin(), order.end(), int64_t{0});
      std::partial_sort(order.begin(), order.begin() + s.k, order.end(), first);
      int64_t base = outer * s.k * s.inner + inner;
      for (int64_t j = 0; j < s.k; ++j) {
        values[base + j * s.inner] = at(order[j]);
        indices[base + j * s.inner] = order[j];
      }
    }
  }
}

}  // namespace

void TopK(const TopKShape& s, const float* data, float* values, int64_t* indices) { TopKRows(s, data, values, indices); }
void TopK(const TopKShape& s, const double* data, double* values, int64_t* indices) { TopKRows(s, data, values, indices); }
void TopK(const TopKShape& s, const int8_t* data, int8_t* values, int64_t* indices) { TopKRows(s, data, values, indices); }
void TopK(const TopKShape& s, const int16_t* data, int16_t* values, int64_t* indices) { TopKRows(s, data, values, indices); }
void TopK(const TopKShape& s, const int32_t* data, int32_t* values, int64_t* indices) { TopKRows(s, data, values, indices); }
void TopK(const TopKShape& s, const int64_t* data, int64_t* values, int64_t* indices) { TopKRows(s, data, values, indices); }
void TopK(const TopKShape& s, const uint8_t* data, uint8_t* values, int64_t* indices) { TopKRows(s, data, values, indices); }
void TopK(const TopKShape& s, const uint16_t* data, uint16_t* values, int64_t* indices) {
  TopKRows(s, data, values, indices);
}
void TopK(const TopKShape& s, const uint32_t* data, uint32_t* values, int64_t* indices) {
  TopKRows(s, data, values, indices);
}
void TopK(const TopKShape& s, const uint64_t* data, uint64_t* values, int64_t* indices) {
  TopKRows(s, data, values, indices);
}

}  // namespace kiln::kernels
