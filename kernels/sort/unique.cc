// Unique: the distinct slices of a tensor along an axis, with first indices, inverse indices and
// counts (ONNX Unique, numpy's unique with return_index, return_inverse, return_counts).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

#include "kernels/kernels.h"

namespace kiln::kernels {
namespace {

// A strict weak order on values: NaN above every number and equal to NaN.
template <typename T>
bool Less(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

// The slices of one tensor and how to compare two of them: negative, zero or positive as slice a
// orders before, with or after slice b. Only the comparison depends on the dtype, so that the
// sorting below is compiled once.
struct Slices {
  const UniqueShape& s;
  const void* data;
  size_t element_size;
  int (*compare)(const Slices& slices, int64_t a, int64_t b);
};

template <typename T>
int CompareSlices(const Slices& v, int64_t a, int64_t b) {
  const T* data = static_cast<const T*>(v.data);
  for (int64_t o = 0; o < v.s.outer; ++o) {
    const T* x = data + (o * v.s.axis_size + a) * v.s.inner;
    const T* z = data + (o * v.s.axis_size + b) * v.s.inner;
    for (int64_t i = 0; i < v.s.inner; ++i) {
      if (Less(x[i], z[i])) return -1;
      if (Less(z[i], x[i])) return 1;
    }
  }
  return 0;
}

void UniqueSlices(const Slices& v, char* y, int64_t* indices, int64_t* inverse, int64_t* counts, int64_t* count) {
  const UniqueShape& s = v.s;
  // Equal slices next to each other, each run in order of occurrence.
  std::vector<int64_t> order(s.axis_size);
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return v.compare(v, a, b) < 0; });
  std::vector<int64_t> firsts;  // per distinct slice, its first occurrence
  std::vector<int64_t> group(s.axis_size);
  for (size_t j = 0; j < order.size(); ++j) {
    if (j == 0 || v.compare(v, order[j - 1], order[j]) != 0) firsts.push_back(order[j]);
    group[order[j]] = static_cast<int64_t>(firsts.size()) - 1;
  }
  int64_t n = static_cast<int64_t>(firsts.size());
  // rank[g]: where distinct slice g (in sorted order) goes in the output.
  std::vector<int64_t> rank(n);
  std::iota(rank.begin(), rank.end(), int64_t{0});
  if (!s.sorted) {
    std::vector<int64_t> by_first(n);
    std::iota(by_first.begin(), by_first.end(), int64_t{0});
    std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return firsts[a] < firsts[b]; });
    for (int64_t r = 0; r < n; ++r) rank[by_first[r]] = r;
  }
  std::fill(counts, counts + s.axis_size, int64_t{0});
  std::fill(indices, indices + s.axis_size, int64_t{0});
  for (int64_t k = 0; k < s.axis_size; ++k) {
    inverse[k] = rank[group[k]];
    ++counts[inverse[k]];
  }
  size_t row = s.inner * v.element_size;
  const char* data = static_cast<const char*>(v.data);
  for (int64_t g = 0; g < n; ++g) {
    int64_t r = rank[g];
    indices[r] = firsts[g];
    for (int64_t o = 0; o < s.outer; ++o) {
      std::memcpy(y + (o * n + r) * row, data + (o * s.axis_size + firsts[g]) * row, row);
    }
  }
  std::memset(y + s.outer * n * row, 0, s.outer * (s.axis_size - n) * row);
  *count = n;
}

}  // namespace

#define KILN_UNIQUE(T)                                                                                   \
  void Unique(const UniqueShape& s, const T* data, T* y, int64_t* indices, int64_t* inverse,            \
              int64_t* counts, int64_t* count) {                                                       \
    UniqueSlices({s, data, sizeof(T), CompareSlices<T>}, reinterpret_cast<char*>(y), indices, inverse, \
                 counts, count);                                                                       \
  }
KILN_UNIQUE(float)
KILN_UNIQUE(double)
KILN_UNIQUE(int8_t)
KILN_UNIQUE(int16_t)
KILN_UNIQUE(int32_t)
KILN_UNIQUE(int64_t)
KILN_UNIQUE(uint8_t)
KILN_UNIQUE(uint16_t)
KILN_UNIQUE(uint32_t)
KILN_UNIQUE(uint64_t)
#undef KILN_UNIQUE

}  // namespace kiln::kernels
