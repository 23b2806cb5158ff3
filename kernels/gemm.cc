// Matrix product with plain cache-blocked loops (the inner loop vectorizes); rows and column
// blocks of C are split across threads. Transposed operands are copied into row-major
// workspace first, except a transposed B against a few rows of A (dot products).
#include <algorithm>
#include <cstring>

#include "kernels/backend_api.h"
#include "kernels/kernels.h"

namespace kiln::kernels {
namespace {

constexpr int64_t kBlockK = 256;
constexpr int64_t kBlockN = 512;

struct GemmJob {
  int64_t m, n, k;
  const float* a;  // [m, k] row-major, row stride lda
  int64_t lda;
  const float* b;  // [k, n] row-major, row stride ldb
  int64_t ldb;
  float* c;
  int64_t ldc;
  int64_t n_blocks;
};

void GemmTiles(int64_t begin, int64_t end, void* context) {
  const auto& g = *static_cast<const GemmJob*>(context);
  for (int64_t tile = begin; tile < end; ++tile) {
    int64_t i = tile / g.n_blocks;
    int64_t j0 = (tile % g.n_blocks) * kBlockN, j1 = std::min(g.n, j0 + kBlockN);
    float* c = g.c + i * g.ldc;
    std::fill(c + j0, c + j1, 0.0f);
    const float* a = g.a + i * g.lda;
    for (int64_t k0 = 0; k0 < g.k; k0 += kBlockK) {
      int64_t k1 = std::min(g.k, k0 + kBlockK);
      for (int64_t kk = k0; kk < k1; ++kk) {
        float av = a[kk];
        const float* b = g.b + kk * g.ldb;
        for (int64_t j = j0; j < j1; ++j) c[j] += av * b[j];
      }
    }
  }
}

// Few rows times a transposed B (a dense layer at batch 1): each C[i, j] is a dot product of
// two contiguous rows, so B is read once and never copied. Eight partial sums per dot product
// let the compiler vectorize without reassociating floating point.
constexpr int64_t kMaxDotRows = 4;

struct DotJob {
  int64_t m, k;
  const float* a;
  int64_t lda;
  const float* b;  // [n, k]
  int64_t ldb;
  float* c;
  int64_t ldc;
};

void DotColumns(int64_t begin, int64_t end, void* context) {
  const auto& g = *static_cast<const DotJob*>(context);
  for (int64_t j = begin; j < end; ++j) {
    const float* b = g.b + j * g.ldb;
    for (int64_t i = 0; i < g.m; ++i) {
      const float* a = g.a + i * g.lda;
      float partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      int64_t kk = 0;
      for (; kk + 8 <= g.k; kk += 8) {
        for (int lane = 0; lane < 8; ++lane) partial[lane] += a[kk + lane] * b[kk + lane];
      }
      float sum = ((partial[0] + partial[1]) + (partial[2] + partial[3])) + ((partial[4] + partial[5]) + (partial[6] + partial[7]));
      for (; kk < g.k; ++kk) sum += a[kk] * b[kk];
      g.c[i * g.ldc + j] = sum;
    }
  }
}

// dst[cols, rows] = src[rows, cols]^T with row stride ld.
void Transpose(const float* src, int64_t rows, int64_t cols, int64_t ld, float* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * ld + c];
  }
}

}  // namespace

void Gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool a_transposed, const float* b,
          int64_t ldb, bool b_transposed, float* c, int64_t ldc) {
  if (b_transposed && !a_transposed && m <= kMaxDotRows) {
    DotJob job{m, k, a, lda, b, ldb, c, ldc};
    ParallelFor(n, DotColumns, &job);
    return;
  }
  Workspace a_copy(a_transposed ? m * k * sizeof(float) : 0);
  Workspace b_copy(b_transposed ? k * n * sizeof(float) : 0);
  if (a_transposed) {  // a is [k, m]
    Transpose(a, k, m, lda, a_copy.as<float>());
    a = a_copy.as<float>();
    lda = k;
  }
  if (b_transposed) {  // b is [n, k]
    Transpose(b, n, k, ldb, b_copy.as<float>());
    b = b_copy.as<float>();
    ldb = n;
  }
  GemmJob job{m, n, k, a, lda, b, ldb, c, ldc, (n + kBlockN - 1) / kBlockN};
  ParallelFor(m * job.n_blocks, GemmTiles, &job);
}

}  // namespace kiln::kernels
