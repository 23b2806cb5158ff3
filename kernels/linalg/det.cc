// Det: the determinant of each n x n matrix by LU decomposition with partial pivoting, in double.
#include <cmath>
#include <utility>
#include <vector>

#include "kernels/kernels.h"

namespace kiln::kernels {
namespace {

template <typename T>
void Determinants(int64_t count, int64_t n, const T* data, T* out) {
  std::vector<double> a(static_cast<size_t>(n * n));
  for (int64_t m = 0; m < count; ++m) {
    for (int64_t i = 0; i < n * n; ++i) a[i] = static_cast<double>(data[m * n * n + i]);
    double det = 1;
    for (int64_t col = 0; col < n && det != 0; ++col) {
      int64_t pivot = col;
      for (int64_t r = col + 1; r < n; ++r) {
        if (std::abs(a[r * n + col]) > std::abs(a[pivot * n + col])) pivot = r;
      }
      if (a[pivot * n + col] == 0) {
        det = 0;
        break;
      }
      if (pivot != col) {
        for (int64_t k = 0; k < n; ++k) std::swap(a[pivot * n + k], a[col * n + k]);
        det = -det;
      }
      det *= a[col * n + col];
      for (int64_t r = col + 1; r < n; ++r) {
        double factor = a[r * n + col] / a[col * n + col];
        for (int64_t k = col; k < n; ++k) a[r * n + k] -= factor * a[col * n + k];
      }
    }
    out[m] = static_cast<T>(det);
  }
}

}  // namespace

void Det(int64_t count, int64_t n, const float* data, float* out) { Determinants(count, n, data, out); }
void Det(int64_t count, int64_t n, const double* data, double* out) { Determinants(count, n, data, out); }

}  // namespace kiln::kernels
