// Matrix products for the dtypes without a tuned kernel: int32 operands and result (ONNX's
// MatMulInteger after its zero points are subtracted, and MatMul on int32), exact modulo 2^32
// (two's complement wraparound, as ONNX Runtime's int32 MatMul; computed in uint32 so that overflow
// is defined), and float64. One task per row of C; B's rows stream through the row of C when B is
// not transposed, and each element is a dot product along K when it is.
#include <cstdint>

#include "kernels/backend_api.h"
#include "kernels/kernels.h"

namespace kiln::kernels {
namespace {

// T the operands' type, A the arithmetic's (uint32 for int32).
template <typename T>
struct PlainGemmJob {
  int64_t m, n, k;
  const T* a;
  int64_t lda, a_stride;
  bool a_transposed;
  const T* b;
  int64_t ldb, b_stride;
  bool b_transposed;
  T* c;
  int64_t ldc, c_stride;
};

template <typename T, typename A>
void PlainRows(int64_t begin, int64_t end, void* context) {
  const auto& g = *static_cast<const PlainGemmJob<T>*>(context);
  for (int64_t task = begin; task < end; ++task) {
    int64_t product = task / g.m, i = task % g.m;
    const T* a = g.a + product * g.a_stride;
    const auto* b = reinterpret_cast<const A*>(g.b + product * g.b_stride);
    auto* row = reinterpret_cast<A*>(g.c + product * g.c_stride + i * g.ldc);
    auto a_at = [&](int64_t x) { return static_cast<A>(g.a_transposed ? a[x * g.lda + i] : a[i * g.lda + x]); };
    if (g.b_transposed) {
      for (int64_t j = 0; j < g.n; ++j) {
        const A* column = b + j * g.ldb;
        A sum = 0;
        for (int64_t x = 0; x < g.k; ++x) sum += a_at(x) * column[x];
        row[j] = sum;
      }
      continue;
    }
    for (int64_t j = 0; j < g.n; ++j) row[j] = 0;
    for (int64_t x = 0; x < g.k; ++x) {
      A scale = a_at(x);
      const A* b_row = b + x * g.ldb;
      for (int64_t j = 0; j < g.n; ++j) row[j] += scale * b_row[j];
    }
  }
}

template <typename T, typename A>
int PlainGemm(int64_t batch, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, int64_t a_stride,
              bool a_transposed, const T* b, int64_t ldb, int64_t b_stride, bool b_transposed, T* c, int64_t ldc,
              int64_t c_stride) {
  PlainGemmJob<T> job{m, n, k, a, lda, a_stride, a_transposed, b, ldb, b_stride, b_transposed, c, ldc, c_stride};
  return ParallelFor(batch * m, PlainRows<T, A>, &job);
}

}  // namespace

int BatchGemmInt32(int64_t batch, int64_t m, int64_t n, int64_t k, const int32_t* a, int64_t lda, int64_t a_stride,
                   bool a_transposed, const int32_t* b, int64_t ldb, int64_t b_stride, bool b_transposed, int32_t* c,
                   int64_t ldc, int64_t c_stride) {
  return PlainGemm<int32_t, uint32_t>(batch, m, n, k, a, lda, a_stride, a_transposed, b, ldb, b_stride, b_transposed, c,
                                      ldc, c_stride);
}

int BatchGemmFloat64(int64_t batch, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, int64_t a_stride,
                     bool a_transposed, const double* b, int64_t ldb, int64_t b_stride, bool b_transposed, double* c,
                     int64_t ldc, int64_t c_stride) {
  return PlainGemm<double, double>(batch, m, n, k, a, lda, a_stride, a_transposed, b, ldb, b_stride, b_transposed, c,
                                   ldc, c_stride);
}

}  // namespace kiln::kernels
