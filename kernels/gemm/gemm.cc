// Matrix products on packed panels of B. B is laid out as [ceil(N / 16), K, 16] (layout "NK16n"
// of a dense weight [N, K]; the last panel padded with zeros): dense layers get their constant
// weights packed so at build time, other products pack B into workspace per call. A micro-kernel
// keeps a tile of kTileRows rows x 16 columns of C in registers and walks K with one load of a
// panel row and one broadcast of A per tile row. C is split across threads in blocks of rows x
// panels, and K is walked in blocks so that a panel's part stays in L1 while it meets every row
// of the block.
#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "kernels/backend_api.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"

namespace kiln::kernels {
namespace {

using V = Vec<kGemmPanel>;
constexpr int kTileRows = kCompiledConfig.gemm_tile_rows;  // 6 with AVX2 (12 ymm accumulators), 14 with AVX-512
constexpr int64_t kBlockK = 256;                   // a panel's block: 256 x 16 floats, 16 KiB
constexpr int64_t kMaxBlockRows = 16 * kTileRows;  // A's block: at most 96 x 256 floats with AVX2
constexpr int64_t kBlockPanels = 4;                // 64 columns of C per task

// C[rows, 16] (+)= A[rows, k] * panel[k, 16], with row strides lda and ldc.
template <int R>
void Tile(int64_t k, const float* a, int64_t lda, const float* panel, bool accumulate, float* c, int64_t ldc) {
  V acc[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) acc[r] = accumulate ? V::Load(c + r * ldc) : V::Zero();
  for (int64_t x = 0; x < k; ++x) {
    V w = V::Load(panel + x * kGemmPanel);
    w.Pin();
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) acc[r] = V::Fma(V::Broadcast(a + r * lda + x), w, acc[r]);
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) acc[r].Store(c + r * ldc);
}

using TileFunction = void (*)(int64_t, const float*, int64_t, const float*, bool, float*, int64_t);

template <int... I>
constexpr auto MakeTiles(std::integer_sequence<int, I...>) {
  return std::array<TileFunction, sizeof...(I)>{Tile<I + 1>...};
}
// kTiles[r - 1] computes r rows.
constexpr auto kTiles = MakeTiles(std::make_integer_sequence<int, kTileRows>());

// A tile of `rows` x `cols` (cols < 16 at C's right edge goes through a full-width copy).
void AnyTile(int64_t rows, int64_t cols, int64_t k, const float* a, int64_t lda, const float* panel, bool accumulate,
             float* c, int64_t ldc) {
  if (cols == kGemmPanel) return kTiles[rows - 1](k, a, lda, panel, accumulate, c, ldc);
  float tile[kTileRows * kGemmPanel] = {};  // columns past `cols` are computed and dropped
  if (accumulate) {
    for (int64_t r = 0; r < rows; ++r) std::memcpy(tile + r * kGemmPanel, c + r * ldc, cols * sizeof(float));
  }
  kTiles[rows - 1](k, a, lda, panel, accumulate, tile, kGemmPanel);
  for (int64_t r = 0; r < rows; ++r) std::memcpy(c + r * ldc, tile + r * kGemmPanel, cols * sizeof(float));
}

// `batch` products; operand X of product i at X + i * x_stride (0: shared by all).
struct PackedJob {
  int64_t m, n, k;
  const float* a;
  int64_t lda, a_stride;
  const float* b;  // [panels, k, 16] per product
  int64_t b_stride;
  float* c;
  int64_t ldc, c_stride;
  int64_t row_blocks, block_rows, col_blocks;
};

void PackedBlocks(int64_t begin, int64_t end, void* context) {
  const auto& g = *static_cast<const PackedJob*>(context);
  int64_t panels = (g.n + kGemmPanel - 1) / kGemmPanel;
  int64_t blocks = g.row_blocks * g.col_blocks;
  for (int64_t task = begin; task < end; ++task) {
    int64_t product = task / blocks, block = task % blocks;
    const float* a = g.a + product * g.a_stride;
    const float* b = g.b + product * g.b_stride;
    float* c = g.c + product * g.c_stride;
    int64_t i0 = block / g.col_blocks * g.block_rows, i1 = std::min(g.m, i0 + g.block_rows);
    int64_t p0 = block % g.col_blocks * kBlockPanels, p1 = std::min(panels, p0 + kBlockPanels);
    for (int64_t k0 = 0; k0 < g.k; k0 += kBlockK) {
      int64_t kc = std::min(kBlockK, g.k - k0);
      for (int64_t p = p0; p < p1; ++p) {
        const float* panel = b + (p * g.k + k0) * kGemmPanel;
        int64_t cols = std::min<int64_t>(kGemmPanel, g.n - p * kGemmPanel);
        for (int64_t i = i0; i < i1; i += kTileRows) {
          AnyTile(std::min<int64_t>(kTileRows, i1 - i), cols, kc, a + i * g.lda + k0, g.lda, panel, k0 > 0,
                  c + i * g.ldc + p * kGemmPanel, g.ldc);
        }
      }
    }
  }
}

// All products of the job, B packed: zeros for an empty K, else row blocks of equal size (a
// multiple of the tile, so that threads get equal work) x blocks of panels, of every product.
int RunPacked(int64_t batch, PackedJob job) {
  if (batch <= 0 || job.m <= 0 || job.n <= 0) return 0;
  if (job.k == 0) {
    for (int64_t product = 0; product < batch; ++product) {
      for (int64_t i = 0; i < job.m; ++i) {
        float* row = job.c + product * job.c_stride + i * job.ldc;
        std::fill(row, row + job.n, 0.0f);
      }
    }
    return 0;
  }
  int64_t row_blocks = (job.m + kMaxBlockRows - 1) / kMaxBlockRows;
  job.block_rows = ((job.m + row_blocks - 1) / row_blocks + kTileRows - 1) / kTileRows * kTileRows;
  job.row_blocks = (job.m + job.block_rows - 1) / job.block_rows;
  int64_t panels = (job.n + kGemmPanel - 1) / kGemmPanel;
  job.col_blocks = (panels + kBlockPanels - 1) / kBlockPanels;
  return ParallelFor(batch * job.row_blocks * job.col_blocks, PackedBlocks, &job);
}

// Few rows times a transposed B (a dense layer at batch 1 whose weight is not packed): each
// C[i, j] is a dot product of two contiguous rows, so B is read once and never copied. Eight
// partial sums per dot product let the compiler vectorize without reassociating.
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

// B [k, n] (or [n, k] when transposed), row stride ldb, as panels [ceil(n / 16), k, 16].
void PackB(int64_t n, int64_t k, const float* b, int64_t ldb, bool transposed, float* packed) {
  for (int64_t p = 0; p * kGemmPanel < n; ++p) {
    float* panel = packed + p * k * kGemmPanel;
    int64_t cols = std::min<int64_t>(kGemmPanel, n - p * kGemmPanel);
    if (cols < kGemmPanel) std::fill(panel, panel + k * kGemmPanel, 0.0f);
    if (transposed) {
      for (int64_t j = 0; j < cols; ++j) {
        const float* column = b + (p * kGemmPanel + j) * ldb;
        for (int64_t x = 0; x < k; ++x) panel[x * kGemmPanel + j] = column[x];
      }
    } else {
      for (int64_t x = 0; x < k; ++x) {
        std::memcpy(panel + x * kGemmPanel, b + x * ldb + p * kGemmPanel, cols * sizeof(float));
      }
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

int GemmPacked(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b_packed, float* c,
               int64_t ldc) {
  return RunPacked(1, PackedJob{m, n, k, a, lda, 0, b_packed, 0, c, ldc, 0, 0, 0, 0});
}

int BatchGemm(int64_t batch, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, int64_t a_stride,
              bool a_transposed, const float* b, int64_t ldb, int64_t b_stride, bool b_transposed, float* c,
              int64_t ldc, int64_t c_stride) {
  if (b_transposed && !a_transposed && m <= kMaxDotRows) {
    for (int64_t product = 0; product < batch; ++product) {
      DotJob job{m, k, a + product * a_stride, lda, b + product * b_stride, ldb, c + product * c_stride, ldc};
      if (ParallelFor(n, DotColumns, &job) != 0) return -1;
    }
    return 0;
  }
  int64_t a_count = a_stride == 0 ? 1 : batch, b_count = b_stride == 0 ? 1 : batch;
  int64_t packed_size = (n + kGemmPanel - 1) / kGemmPanel * k * kGemmPanel;
  Workspace a_copy(a_transposed ? a_count * m * k * sizeof(float) : 0);
  Workspace b_packed(b_count * packed_size * sizeof(float));
  if (!a_copy.ok() || !b_packed.ok()) return Fail("Gemm: out of workspace memory");
  if (a_transposed) {  // each a is [k, m]
    for (int64_t i = 0; i < a_count; ++i) Transpose(a + i * a_stride, k, m, lda, a_copy.as<float>() + i * m * k);
    a = a_copy.as<float>();
    lda = k;
    a_stride = a_stride == 0 ? 0 : m * k;
  }
  for (int64_t i = 0; i < b_count; ++i) {
    PackB(n, k, b + i * b_stride, ldb, b_transposed, b_packed.as<float>() + i * packed_size);
  }
  PackedJob job{m, n, k, a, lda, a_stride, b_packed.as<float>(), b_stride == 0 ? 0 : packed_size, c, ldc, c_stride,
                0, 0, 0};
  return RunPacked(batch, job);
}

int Gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool a_transposed, const float* b, int64_t ldb,
         bool b_transposed, float* c, int64_t ldc) {
  return BatchGemm(1, m, n, k, a, lda, 0, a_transposed, b, ldb, 0, b_transposed, c, ldc, 0);
}

}  // namespace kiln::kernels
