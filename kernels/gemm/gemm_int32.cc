// Integer matrix products: int32 operands and an int32 result (ONNX's MatMulInteger after its
// zero points are subtracted, and MatMul on int32). Sums are exact modulo 2^32 (two's complement
// wraparound, as ONNX Runtime's int32 MatMul), computed in uint32 so that overflow is defined.
// One task per row of C; B's rows stream through the row of C when B is not transposed, and each
// element is a dot product along K when it is.
#include "kernels/backend_api.h"
#include "kernels/kernels.h"

namespace kiln::kernels {
namespace {

struct Int32GemmJob {
  int64_t m, n, k;
  const int32_t* a;
  int64_t lda, a_stride;
  bool a_transposed;
  const int32_t* b;
  int64_t ldb, b_stride;
  bool b_transposed;
  int32_t* c;
  int64_t ldc, c_stride;
};

void Int32Rows(int64_t begin, int64_t end, void* context) {
  const auto& g = *static_cast<const Int32GemmJob*>(context);
  for (int64_t task = begin; task < end; ++task) {
    int64_t product = task / g.m, i = task % g.m;
    const int32_t* a = g.a + product * g.a_stride;
    const auto* b = reinterpret_cast<const uint32_t*>(g.b + product * g.b_stride);
    auto* row = reinterpret_cast<uint32_t*>(g.c + product * g.c_stride + i * g.ldc);
    auto a_at = [&](int64_t x) { return static_cast<uint32_t>(g.a_transposed ? a[x * g.lda + i] : a[i * g.lda + x]); };
    if (g.b_transposed) {
      for (int64_t j = 0; j < g.n; ++j) {
        const uint32_t* column = b + j * g.ldb;
        uint32_t sum = 0;
        for (int64_t x = 0; x < g.k; ++x) sum += a_at(x) * column[x];
        row[j] = sum;
      }
      continue;
    }
    for (int64_t j = 0; j < g.n; ++j) row[j] = 0;
    for (int64_t x = 0; x < g.k; ++x) {
      uint32_t scale = a_at(x);
      if (scale == 0) continue;  // zero points make many
      const uint32_t* b_row = b + x * g.ldb;
      for (int64_t j = 0; j < g.n; ++j) row[j] += scale * b_row[j];
    }
  }
}

}  // namespace

int BatchGemmInt32(int64_t batch, int64_t m, int64_t n, int64_t k, const int32_t* a, int64_t lda, int64_t a_stride,
                   bool a_transposed, const int32_t* b, int64_t ldb, int64_t b_stride, bool b_transposed, int32_t* c,
                   int64_t ldc, int64_t c_stride) {
  Int32GemmJob job{m, n, k, a, lda, a_stride, a_transposed, b, ldb, b_stride, b_transposed, c, ldc, c_stride};
  return ParallelFor(batch * m, Int32Rows, &job);
}

}  // namespace kiln::kernels
