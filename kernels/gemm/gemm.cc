// Matrix products on panels of 16 columns of B. Packed, B is laid out as [ceil(N / 16), K, 16]
// (layout "NK16n" of a dense weight [N, K]; the last panel padded with zeros): dense layers get
// their constant weights packed so at build time, a transposed B is packed into workspace per
// call; any other B is read where it lies, the panel's rows B's rows, except a last partial
// panel, which is copied (a 1x1 convolution's input, read so, no longer costs a pass over it). A micro-kernel
// keeps a tile of kTileRows rows x kTilePanels panels of C in registers (kernel_config.h) and walks
// K with one load per panel row and one broadcast of A per tile row. A is first copied into tiles
// of rows, [k][rows] each (transposed A too), so that the broadcasts read one stream: A's rows read
// in place, at a stride of a multiple of 4 KiB as BERT's K = 3072 has, fall into one L1 set (BERT's
// dense layers on one AVX-512 core, tiles of 14 rows x 1 panel: 50-88 GFLOP/s of 117; with the
// copy and 8 x 3: 98-112). C is split across threads in blocks of rows x 12 panels (4 blocks for a
// layer of 768 columns; at least 8 blocks where the tiles allow), and K is walked in even
// blocks of at most 512, so that the tile's panels' part (32 KiB per panel) stays in L2 while it
// meets every row of the block, beside the next tile's, which the row tiles fetch while they
// compute (RowTileShare). (On an AMD Zen 4 core without that fetch, blocks of 1024 were best:
// ViT's 197 x 3072 x 768 and 197 x 768 x 3072 products 2-8% slower in blocks of 256; on a Zen 5
// core with it, twelve ViT-sized layers whose weights come from memory ran 7% faster than
// blocks of 1024 without it, a third of that from the blocks of 512.) Products of few rows times
// a transposed B, and a matrix times a vector, are dot products instead (DotJob); products of
// fewer than 2^17 multiply-adds run on the calling thread.
#include <algorithm>
#include <array>
#include <optional>
#include <cstring>
#include <utility>

#include "kernels/backend_api.h"
#include "kernels/epilogue.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"

namespace kiln::kernels {
namespace {

using V = Vec<kGemmPanel>;
constexpr int kTileRows = kCompiledConfig.gemm_tile_rows;
constexpr int kTilePanels = kCompiledConfig.gemm_tile_panels;
constexpr int64_t kMaxBlockK = 512;                // K per block at most: a panel's part 32 KiB
constexpr int64_t kMaxBlockRows = 16 * kTileRows;  // A's block: at most 16 tiles of rows
constexpr int64_t kBlockPanels = 12;               // columns of C per task: 192
// Blocks of C a product is split into at least, where its tiles allow: the thread pool hands them
// out in grains (support.cc), so threads that finish early take more, but two blocks of 12 and 1
// panels (a 1x1 convolution on a 14x14 plane: 196 columns) left one of two threads idle most of
// the time, and four uneven ones a third of it.
constexpr int64_t kMinBlocks = 8;
// Products of fewer multiply-adds than this (a few microseconds on one core) run on the calling
// thread: waking the others costs more (a squeeze-and-excitation layer's 672 -> 28 matrix-vector
// product, 19K multiply-adds, ran slower on two threads than on one).
constexpr int64_t kSerialProducts = 1 << 17;
inline bool Serial(int64_t batch, int64_t m, int64_t n, int64_t k) { return batch * m * n * k < kSerialProducts; }
static_assert(kBlockPanels % kTilePanels == 0, "a task's panels are whole tiles of panels");
// A copy of A or B in `tasks` tasks, on the calling thread when it moves fewer than
// kParallelPackFloats floats or its product is `serial`, else split across the runtime's threads.
// (The copy runs before the product's blocks, every thread waiting for it: ShuffleNet's 116 x 116
// weights, 13K floats, packed on one thread made its 116x196x116 product 45 us on two threads;
// split, 38.)
constexpr int64_t kParallelPackFloats = 8192;
int PackInTasks(int64_t floats, int64_t tasks, void (*pack)(int64_t, int64_t, void*), void* job, bool serial) {
  if (serial || floats < kParallelPackFloats) {
    pack(0, tasks, job);
    return 0;
  }
  return ParallelFor(tasks, pack, job);
}

// Panels of 16 columns that n columns take.
inline int64_t Panels(int64_t n) { return (n + kGemmPanel - 1) / kGemmPanel; }

// GELU's rational fit takes more registers than AVX2's 16 hold beside a full tile's 12
// accumulators: in registers there, GCC kept half the accumulators of every full tile (GELU or
// not) on the stack across the K loop (a load and a store per FMA pair: BERT's dense layers at 35%
// of an AVX2 core's peak). So GELU is applied in registers with AVX-512's 32 only, elsewhere over
// the stored tile by GeluOverTile, a function of its own.
constexpr bool kGeluInRegisters = kCompiledConfig.vector_floats >= 16;

// GELU over a stored tile of `rows` x `panels` panels of C (row stride ldc), while it is in L1.
[[gnu::noinline]] void GeluOverTile(float* c, int64_t ldc, int rows, int panels) {
  for (int r = 0; r < rows; ++r) {
    for (int q = 0; q < panels; ++q) {
      float* at = c + r * ldc + q * kGemmPanel;
      scalar::GeluOfFloats(V::Load(at)).Store(at);
    }
  }
}

// Cache lines of packed B that a tile asks for while it walks K, one per step: `lines` lines from
// `at` on, 64 bytes apart (none when 0), fetched into L2 for the tiles that follow (PackedBlocks).
struct Prefetch {
  const float* at = nullptr;
  int64_t lines = 0;
};

// C[R, P * 16] (+)= A[R, k] * panels[k, P * 16]: A packed as [k][R], panel q at panel + q * panel_stride,
// its rows k_stride apart (16 packed, B's row stride in place), C with row stride ldc; then `tail`
// (its pointers at the tile's place; a dense layer's bias per column, residual, relu, clip or gelu) on
// the accumulators before the store, when not null (GELU without AVX-512 right after the store,
// GeluOverTile); and `prefetch`'s lines asked for along the way. (Applied in passes over the stored
// tile instead, TileEpilogue, a call per row and step cost BERT's 128-row layers more than the
// separate loop that it replaced.)

template <int R, int P>
void Tile(int64_t k, const float* a, const float* panel, int64_t panel_stride, int64_t k_stride, bool accumulate,
          float* c, int64_t ldc, const RegisterEpilogue* tail, Prefetch prefetch) {
  V acc[R * P];
#pragma GCC unroll 32
  for (int i = 0; i < R * P; ++i) acc[i] = accumulate ? V::Load(c + i / P * ldc + i % P * kGemmPanel) : V::Zero();
  for (int64_t x = 0; x < k; ++x) {
    if (x < prefetch.lines) __builtin_prefetch(prefetch.at + x * kGemmPanel, 0, 2);
    V w[P];
#pragma GCC unroll 4
    for (int q = 0; q < P; ++q) {
      w[q] = V::Load(panel + q * panel_stride + x * k_stride);
      w[q].Pin();
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      V b = V::Broadcast(a + x * R + r);
#pragma GCC unroll 4
      for (int q = 0; q < P; ++q) acc[r * P + q] = V::Fma(b, w[q], acc[r * P + q]);
    }
  }
  if (tail != nullptr) {
    if (tail->bias != nullptr && tail->bias_per_row) {
#pragma GCC unroll 32
      for (int i = 0; i < R * P; ++i) acc[i] = scalar::Add(acc[i], V::Broadcast(tail->bias + i / P));
    } else if (tail->bias != nullptr) {
#pragma GCC unroll 32
      for (int i = 0; i < R * P; ++i) acc[i] = scalar::Add(acc[i], V::Load(tail->bias + i % P * kGemmPanel));
    }
    if (tail->residual != nullptr) {
#pragma GCC unroll 32
      for (int i = 0; i < R * P; ++i) {
        acc[i] = scalar::Add(acc[i], V::Load(tail->residual + i / P * ldc + i % P * kGemmPanel));
      }
    }
    if (tail->activation == RegisterEpilogue::kRelu) {
#pragma GCC unroll 32
      for (int i = 0; i < R * P; ++i) acc[i] = scalar::Relu(acc[i]);
    } else if (tail->activation == RegisterEpilogue::kClip) {
      V lo = V::Broadcast(&tail->lo), hi = V::Broadcast(&tail->hi);
#pragma GCC unroll 32
      for (int i = 0; i < R * P; ++i) acc[i] = scalar::Clip(acc[i], lo, hi);
    } else if constexpr (kGeluInRegisters && R == kTileRows && P == kTilePanels) {  // the full tile only (AnyTile)
      if (tail->activation == RegisterEpilogue::kGelu) {
#pragma GCC unroll 32
        for (int i = 0; i < R * P; ++i) acc[i] = scalar::GeluOfFloats(acc[i]);
      }
    }
  }
#pragma GCC unroll 32
  for (int i = 0; i < R * P; ++i) acc[i].Store(c + i / P * ldc + i % P * kGemmPanel);
  if constexpr (!kGeluInRegisters && R == kTileRows && P == kTilePanels) {
    if (tail != nullptr && tail->activation == RegisterEpilogue::kGelu) GeluOverTile(c, ldc, R, P);
  }
}

using TileFunction = void (*)(int64_t, const float*, const float*, int64_t, int64_t, bool, float*, int64_t,
                              const RegisterEpilogue*, Prefetch);

template <int P, int... I>
constexpr auto MakeTiles(std::integer_sequence<int, I...>) {
  return std::array<TileFunction, sizeof...(I)>{Tile<I + 1, P>...};
}
template <int... P>
constexpr auto MakeTileTable(std::integer_sequence<int, P...>) {
  return std::array<std::array<TileFunction, kTileRows>, sizeof...(P)>{
      MakeTiles<P + 1>(std::make_integer_sequence<int, kTileRows>())...};
}
// kTiles[p - 1][r - 1] computes r rows of p panels.
constexpr auto kTiles = MakeTileTable(std::make_integer_sequence<int, kTilePanels>());

// A tile of `rows` x `cols` (cols <= kTilePanels * 16; a partial last panel at C's right edge goes
// through a full-width copy), then `tail` (null: none) where the tile is whole panels. Returns
// whether it applied the tail.
bool AnyTile(int64_t rows, int64_t cols, int64_t k, const float* a, const float* panel, int64_t panel_stride,
             int64_t k_stride, bool accumulate, float* c, int64_t ldc, const RegisterEpilogue* tail,
             Prefetch prefetch = {}) {
  int64_t panels = Panels(cols);
  TileFunction tile = kTiles[panels - 1][rows - 1];
  // GELU in the tile (in registers, or right after the store) only in the full tile, where most of
  // a product's time goes: in every tile it made the matrix product's object compile 25% longer
  // (2.2 s).
  if (tail != nullptr && tail->activation == RegisterEpilogue::kGelu && (rows < kTileRows || panels < kTilePanels)) {
    tail = nullptr;
  }
  if (cols == panels * kGemmPanel) {
    tile(k, a, panel, panel_stride, k_stride, accumulate, c, ldc, tail, prefetch);
    return tail != nullptr;
  }
  constexpr int64_t kWidth = kTilePanels * kGemmPanel;
  float copy[kTileRows * kWidth] = {};  // columns past `cols` are computed and dropped
  if (accumulate) {
    for (int64_t r = 0; r < rows; ++r) std::memcpy(copy + r * kWidth, c + r * ldc, cols * sizeof(float));
  }
  tile(k, a, panel, panel_stride, k_stride, accumulate, copy, kWidth, nullptr, prefetch);
  for (int64_t r = 0; r < rows; ++r) std::memcpy(c + r * ldc, copy + r * kWidth, cols * sizeof(float));
  return false;
}

// `batch` products; operand X of product i at X + i * x_stride (0: shared by all).
struct PackedJob {
  int64_t m, n, k;
  const float* a;  // [m, k] with row stride lda, or [k, m] when a_transposed
  int64_t lda, a_stride;
  bool a_transposed;
  const float* b;  // [panels, k, 16] per product; or, when b_in_place, B [k, n] with row stride ldb
  int64_t b_stride;
  float* c;
  int64_t ldc, c_stride;
  int64_t row_blocks, block_rows, col_blocks, block_panels;
  float* packed_a;  // per product of A: its row tiles, tile of rows [i, i + r) at i * k as [k][r]
  const EpilogueStep* epilogue = nullptr;  // one product only
  int epilogue_size = 0;
  bool channel_per_column = false;  // a kChannel operand: one value per column of C (else per row)
  RegisterEpilogue register_tail;  // the epilogue in registers, where it has that form (active)
  bool b_in_place = false;  // B read where it lies, its last partial panel (n % 16 columns) from `last_panel`
  int64_t ldb = 0;
  const float* last_panel = nullptr;  // [k, 16], zeros past n, per product last_panel_stride apart
  int64_t last_panel_stride = 0;
  int64_t block_k = 0;  // K per block (RunPacked)
};

// The job's epilogue over rows [row0, row0 + rows) x columns [col0, col0 + cols) of C, just
// computed: step by step, each over the tile's part of a row (epilogue.h).
void TileEpilogue(const PackedJob& g, int64_t row0, int64_t rows, int64_t col0, int64_t cols) {
  for (int s = 0; s < g.epilogue_size; ++s) {
    const EpilogueStep& step = g.epilogue[s];
    for (int64_t r = row0; r < row0 + rows; ++r) {
      const float* tensor = nullptr;  // the other operand, where it varies along the row
      if (step.operand == EpilogueStep::kTensor) tensor = step.data + r * g.ldc + col0;
      if (step.operand == EpilogueStep::kChannel && g.channel_per_column) tensor = step.data + col0;
      // One value for the row (not read where `tensor` is set: a per-column operand has n values).
      float row_operand = tensor != nullptr ? 0.0f : StepOperand(step, r);
      ApplyStepToFloats<kGemmPanel>(step, g.c + r * g.ldc + col0, cols, tensor, row_operand);
    }
  }
}

inline int64_t RowTiles(int64_t m) { return (m + kTileRows - 1) / kTileRows; }

// A tile of r rows (r <= 8) of A, at `a` and lda apart, as [k][r] at `packed`. With AVX, eight columns
// at a time through an 8 x 8 transpose in registers (rows from r on zeros), each column's r values
// stored as a vector of 8 that the next column's store overwrites past its r: one copy element by
// element was 5% of the time of BERT's 768 x 768 layers on an AVX-512 core.
void PackRows(const float* a, int64_t lda, int64_t r, int64_t k, float* packed) {
  int64_t x = 0;
#if defined(KILN_SIMD_AVX2)
  static_assert(kTileRows <= 8, "a tile's rows fit one 8 x 8 transpose");
  // The last column's store (8 floats from its place) may not reach past the tile's k * r.
  for (; x + 8 <= k && (x + 7) * r + 8 <= k * r; x += 8) Transpose8x8(a + x, lda, r, packed + x * r, r);
#endif
  for (; x < k; ++x) {
    for (int64_t j = 0; j < r; ++j) packed[x * r + j] = a[j * lda + x];
  }
}

// Row tiles [begin, end) over all products of A, copied into job.packed_a.
void PackATiles(int64_t begin, int64_t end, void* context) {
  const auto& g = *static_cast<const PackedJob*>(context);
  const int64_t tiles = RowTiles(g.m);
  for (int64_t task = begin; task < end; ++task) {
    int64_t product = task / tiles, i = task % tiles * kTileRows, r = std::min<int64_t>(kTileRows, g.m - i);
    const float* a = g.a + product * g.a_stride;
    float* packed = g.packed_a + product * g.m * g.k + i * g.k;
    if (g.a_transposed) {  // A[i + j, x] at a[x * lda + i + j]: r neighbours per x
      for (int64_t x = 0; x < g.k; ++x) {
        for (int64_t j = 0; j < r; ++j) packed[x * r + j] = a[x * g.lda + i + j];
      }
      continue;
    }
    PackRows(a + i * g.lda, g.lda, r, g.k, packed);
  }
}

// A tile of packed B: panels [p, p1) (at most kTilePanels) of product `product`, rows [k0, k0 + kc).
struct BTile {
  int64_t product, p, p1, k0, kc;
};

// Where task `task`'s block of C starts: its first row and first panel. Blocks go down each block
// of columns first: a thread's share of the tasks is a share of B's columns (each thread reads part
// of the weights, not all of them, where C has more than one block of rows), and consecutive tasks
// compute with the same panels, still in L2 from the task before where a block of columns' panels
// fit (576 KiB at K = 768).
struct BlockStart {
  int64_t row, panel;
};
inline BlockStart StartOfTask(const PackedJob& g, int64_t task) {
  const int64_t block = task % (g.row_blocks * g.col_blocks);
  return {block % g.row_blocks * g.block_rows, block / g.row_blocks * g.block_panels};
}

// The packed B tile that a thread computes with after `now`, in PackedBlocks' order (the next
// panels of the block, else its next block of K, else task `task + 1`'s first), if it is one the
// thread computes (task + 1 < end).
std::optional<BTile> NextBTile(const PackedJob& g, int64_t task, int64_t end, BTile now) {
  if (now.p + kTilePanels < now.p1) {
    now.p += kTilePanels;
    return now;
  }
  if (now.k0 + g.block_k < g.k) {
    now.k0 += g.block_k;
    now.kc = std::min(g.block_k, g.k - now.k0);
    now.p = StartOfTask(g, task).panel;
    return now;
  }
  if (task + 1 >= end) return std::nullopt;
  ++task;
  const int64_t p0 = StartOfTask(g, task).panel;
  return BTile{task / (g.row_blocks * g.col_blocks), p0, std::min(Panels(g.n), p0 + g.block_panels), 0,
               std::min(g.block_k, g.k)};
}

// Row tile `j` of `row_tiles` that compute with one B tile asks for its share of the next one
// (`next`), so that the next tile's first pass reads it from L2 rather than memory (ViT's and
// BERT's weights, a new tile every 13-16 row tiles: the first pass over each at memory's speed
// made their dense layers 8-13% slower in the model than alone with the weights in cache): the
// next tile's panels are shared out among the row tiles (panel q to row tiles [q * row_tiles /
// panels, (q + 1) * row_tiles / panels)), each panel's lines in even parts among its row tiles. With
// fewer row tiles than panels, the panels past the row tiles' count are not fetched; nor are the
// lines of a part past the current tile's steps (a tile fetches one line per step).
Prefetch RowTileShare(const PackedJob& g, const BTile& next, int64_t j, int64_t row_tiles) {
  const int64_t next_panels = std::min<int64_t>(kTilePanels, next.p1 - next.p);
  for (int64_t q = 0; q < next_panels; ++q) {
    const int64_t first_tile = q * row_tiles / next_panels, tiles = (q + 1) * row_tiles / next_panels - first_tile;
    if (j < first_tile || j >= first_tile + tiles) continue;
    const int64_t lines_per_part = (next.kc + tiles - 1) / tiles, first = (j - first_tile) * lines_per_part;
    if (first >= next.kc) return {};
    const float* panel = g.b + next.product * g.b_stride + ((next.p + q) * g.k + next.k0) * kGemmPanel;
    return {panel + first * kGemmPanel, std::min(lines_per_part, next.kc - first)};
  }
  return {};
}

void PackedBlocks(int64_t begin, int64_t end, void* context) {
  const auto& g = *static_cast<const PackedJob*>(context);
  int64_t panels = Panels(g.n);
  int64_t blocks = g.row_blocks * g.col_blocks;
  for (int64_t task = begin; task < end; ++task) {
    const int64_t product = task / blocks;
    const float* a = g.packed_a + (g.a_stride == 0 ? 0 : product * g.m * g.k);
    const float* b = g.b + product * g.b_stride;
    float* c = g.c + product * g.c_stride;
    const auto [i0, p0] = StartOfTask(g, task);
    const int64_t i1 = std::min(g.m, i0 + g.block_rows), p1 = std::min(panels, p0 + g.block_panels);
    const int64_t row_tiles = RowTiles(i1 - i0);
    for (int64_t k0 = 0; k0 < g.k; k0 += g.block_k) {
      int64_t kc = std::min(g.block_k, g.k - k0);
      bool last = k0 + kc == g.k;
      for (int64_t p = p0; p < p1; p += kTilePanels) {
        int64_t cols = std::min<int64_t>(std::min<int64_t>(p1 - p, kTilePanels) * kGemmPanel, g.n - p * kGemmPanel);
        // Read in place, the tile's whole panels and then its partial one, from the copy.
        int64_t whole = g.b_in_place ? std::min(cols, (g.n / kGemmPanel - p) * kGemmPanel) : cols;
        const float* last_panel =
            g.last_panel != nullptr ? g.last_panel + product * g.last_panel_stride + k0 * kGemmPanel : nullptr;
        std::optional<BTile> next;
        if (!g.b_in_place) next = NextBTile(g, task, end, {product, p, p1, k0, kc});
        for (int64_t i = i0; i < i1; i += kTileRows) {
          int64_t rows = std::min<int64_t>(kTileRows, i1 - i);
          const float* a_tile = a + i * g.k + k0 * rows;
          float* c_tile = c + i * g.ldc + p * kGemmPanel;
          RegisterEpilogue at_tile;
          if (last && g.register_tail.active) {  // its operands at the tile's place
            at_tile = g.register_tail;
            if (at_tile.bias != nullptr) at_tile.bias += at_tile.bias_per_row ? i : p * kGemmPanel;
            if (at_tile.residual != nullptr) at_tile.residual += i * g.ldc + p * kGemmPanel;
          }
          const RegisterEpilogue* tail = last && g.register_tail.active ? &at_tile : nullptr;
          bool tail_applied = false;
          if (!g.b_in_place) {
            Prefetch prefetch = next ? RowTileShare(g, *next, (i - i0) / kTileRows, row_tiles) : Prefetch{};
            tail_applied = AnyTile(rows, cols, kc, a_tile, b + (p * g.k + k0) * kGemmPanel, g.k * kGemmPanel,
                                   kGemmPanel, k0 > 0, c_tile, g.ldc, tail, prefetch);
          } else {
            if (whole > 0) {  // the tail only where these are the tile's columns
              tail_applied = AnyTile(rows, whole, kc, a_tile, b + k0 * g.ldb + p * kGemmPanel, kGemmPanel, g.ldb,
                                     k0 > 0, c_tile, g.ldc, whole == cols ? tail : nullptr);
            }
            if (whole < cols) {
              AnyTile(rows, cols - whole, kc, a_tile, last_panel, 0, kGemmPanel, k0 > 0, c_tile + whole, g.ldc,
                      nullptr);
            }
          }
          if (last && g.epilogue_size > 0 && !tail_applied) TileEpilogue(g, i, rows, p * kGemmPanel, cols);
        }
      }
    }
  }
}

// All products of the job, B packed or read in place (PackB): zeros for an empty K, else A copied
// into row tiles (once per product, not per block of C), then even blocks of rows x panels of
// every product (at least kMinBlocks where the tiles allow).
int RunPacked(int64_t batch, PackedJob job) {
  if (batch <= 0 || job.m <= 0 || job.n <= 0) return 0;
  if (job.k == 0) {
    for (int64_t product = 0; product < batch; ++product) {
      for (int64_t i = 0; i < job.m; ++i) {
        float* row = job.c + product * job.c_stride + i * job.ldc;
        std::fill(row, row + job.n, 0.0f);
      }
    }
    if (job.epilogue_size > 0) TileEpilogue(job, 0, job.m, 0, job.n);
    return 0;
  }
  const int64_t a_count = job.a_stride == 0 ? 1 : batch;
  Workspace packed_a(a_count * job.m * job.k * sizeof(float));
  if (!packed_a.ok()) return Fail("Gemm: out of workspace memory");
  job.packed_a = packed_a.as<float>();
  const bool serial = Serial(batch, job.m, job.n, job.k);
  if (int status = PackInTasks(a_count * job.m * job.k, a_count * RowTiles(job.m), PackATiles, &job, serial);
      status != 0) {
    return status;
  }
  // Blocks in tiles: rows of at most kMaxBlockRows, panels of at most kBlockPanels, split further
  // (one more block along the longer side at a time) until there are kMinBlocks, then made even.
  auto blocks = [](int64_t tiles, int64_t per_block) { return (tiles + per_block - 1) / per_block; };
  const int64_t row_tiles = RowTiles(job.m), col_tiles = blocks(Panels(job.n), kTilePanels);
  int64_t rows_per_block = blocks(row_tiles, blocks(job.m, kMaxBlockRows));
  int64_t cols_per_block = std::min(kBlockPanels / kTilePanels, col_tiles);
  while (batch * blocks(row_tiles, rows_per_block) * blocks(col_tiles, cols_per_block) < kMinBlocks &&
         (rows_per_block > 1 || cols_per_block > 1)) {
    if (cols_per_block >= rows_per_block) {
      cols_per_block = std::min(cols_per_block - 1, blocks(col_tiles, blocks(col_tiles, cols_per_block) + 1));
    } else {
      rows_per_block = std::min(rows_per_block - 1, blocks(row_tiles, blocks(row_tiles, rows_per_block) + 1));
    }
  }
  job.block_k = blocks(job.k, blocks(job.k, kMaxBlockK));  // even blocks of K
  job.row_blocks = blocks(row_tiles, rows_per_block);
  job.col_blocks = blocks(col_tiles, cols_per_block);
  job.block_rows = blocks(row_tiles, job.row_blocks) * kTileRows;
  job.block_panels = blocks(col_tiles, job.col_blocks) * kTilePanels;
  job.row_blocks = blocks(job.m, job.block_rows);
  job.col_blocks = blocks(Panels(job.n), job.block_panels);
  const int64_t tasks = batch * job.row_blocks * job.col_blocks;
  if (serial) {
    PackedBlocks(0, tasks, &job);
    return 0;
  }
  return ParallelFor(tasks, PackedBlocks, &job);
}

// Few rows times a transposed B (a dense layer at batch 1 whose weight is not packed, as a
// classifier's 1000 columns): each C[i, j] is a dot product of two contiguous rows, so B is read
// once and never copied. (GemmWithEpilogue's matrix times a vector is one such row, the vector,
// times the matrix as B.) A tile walks K for all rows and kDotColumns columns at once, one vector of
// each at a time, in as many accumulators as products: B's rows stream from memory, and the
// independent accumulators keep the FMAs from waiting on one another (one accumulator per product
// ran at 5 GFLOP/s, bound by the FMA's latency).
constexpr int64_t kMaxDotRows = 4;
constexpr int kDotColumns = 4;
using DotV = Vec<kCompiledConfig.vector_floats>;

struct DotJob {
  int64_t m, n, k;
  const float* a;
  int64_t lda;
  const float* b;  // [n, k]
  int64_t ldb;
  float* c;
  int64_t ldc;
};

float SumLanes(DotV v) {
  float lanes[kCompiledConfig.vector_floats];
  v.Store(lanes);
  float sum = 0;
  for (float lane : lanes) sum += lane;
  return sum;
}

// C[0..R, j..j + C] of the job.
template <int R, int C>
void DotTile(const DotJob& g, int64_t j) {
  constexpr int64_t kWidth = kCompiledConfig.vector_floats;
  DotV acc[R * C];
  for (DotV& v : acc) v = DotV::Zero();
  const float* b = g.b + j * g.ldb;
  int64_t x = 0;
  for (; x + kWidth <= g.k; x += kWidth) {
    DotV w[C];
#pragma GCC unroll 4
    for (int q = 0; q < C; ++q) w[q] = DotV::Load(b + q * g.ldb + x);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      DotV v = DotV::Load(g.a + r * g.lda + x);
#pragma GCC unroll 4
      for (int q = 0; q < C; ++q) acc[r * C + q] = DotV::Fma(v, w[q], acc[r * C + q]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int q = 0; q < C; ++q) {
      float sum = SumLanes(acc[r * C + q]);
      for (int64_t t = x; t < g.k; ++t) sum += g.a[r * g.lda + t] * b[q * g.ldb + t];
      g.c[r * g.ldc + j + q] = sum;
    }
  }
}

template <int R>
void DotRows(const DotJob& g, int64_t begin, int64_t end) {
  for (int64_t group = begin; group < end; ++group) {
    int64_t j = group * kDotColumns;
    if (j + kDotColumns <= g.n) {
      DotTile<R, kDotColumns>(g, j);
    } else {
      for (; j < g.n; ++j) DotTile<R, 1>(g, j);
    }
  }
}

// Groups of kDotColumns columns [begin, end).
void DotColumns(int64_t begin, int64_t end, void* context) {
  const auto& g = *static_cast<const DotJob*>(context);
  switch (g.m) {
    case 0: return;
    case 1: return DotRows<1>(g, begin, end);
    case 2: return DotRows<2>(g, begin, end);
    case 3: return DotRows<3>(g, begin, end);
    default: return DotRows<4>(g, begin, end);
  }
}

// A transposed B ([n, k], row stride ldb) of each product (b_stride apart) as panels
// [ceil(n / 16), k, 16], packed_size floats apart.
struct PackBJob {
  int64_t n, k;
  const float* b;
  int64_t ldb, b_stride;
  float* packed;
  int64_t packed_size;
};

// Panels [begin, end) over all products.
void PackBPanels(int64_t begin, int64_t end, void* context) {
  const auto& g = *static_cast<const PackBJob*>(context);
  const int64_t panels = Panels(g.n);
  for (int64_t task = begin; task < end; ++task) {
    int64_t product = task / panels, p = task % panels;
    const float* b = g.b + product * g.b_stride;
    float* panel = g.packed + product * g.packed_size + p * g.k * kGemmPanel;
    int64_t cols = std::min<int64_t>(kGemmPanel, g.n - p * kGemmPanel);
    if (cols < kGemmPanel) std::fill(panel, panel + g.k * kGemmPanel, 0.0f);
    for (int64_t j = 0; j < cols; ++j) {
      const float* column = b + (p * kGemmPanel + j) * g.ldb;
      for (int64_t x = 0; x < g.k; ++x) panel[x * kGemmPanel + j] = column[x];
    }
  }
}

// B for a job whose b and b_stride hold B as given: a transposed B packed into panels (its columns
// are not contiguous), one in place read where it lies, only its last partial panel copied (a
// read past its columns could leave the buffer; a whole copy was a pass over B per product, on
// one thread below kParallelPackFloats floats).
struct PackedB {
  std::optional<Workspace> memory;
};

int PackB(int64_t batch, int64_t ldb, bool b_transposed, PackedJob* job, PackedB* packed) {
  const int64_t n = job->n, k = job->k, b_count = job->b_stride == 0 ? 1 : batch;
  if (!b_transposed) {
    const int64_t whole = n / kGemmPanel * kGemmPanel, rest = n - whole;
    job->b_in_place = true;
    job->ldb = ldb;
    if (rest == 0) return 0;
    packed->memory.emplace(b_count * k * kGemmPanel * sizeof(float));
    if (!packed->memory->ok()) return Fail("Gemm: out of workspace memory");
    float* last = packed->memory->as<float>();
    for (int64_t product = 0; product < b_count; ++product) {
      const float* b = job->b + product * job->b_stride + whole;
      for (int64_t x = 0; x < k; ++x) {
        float* row = last + (product * k + x) * kGemmPanel;
        std::memcpy(row, b + x * ldb, rest * sizeof(float));
        std::fill(row + rest, row + kGemmPanel, 0.0f);
      }
    }
    job->last_panel = last;
    job->last_panel_stride = b_count == 1 ? 0 : k * kGemmPanel;
    return 0;
  }
  const int64_t packed_size = Panels(n) * k * kGemmPanel;
  packed->memory.emplace(b_count * packed_size * sizeof(float));
  if (!packed->memory->ok()) return Fail("Gemm: out of workspace memory");
  PackBJob pack{n, k, job->b, ldb, job->b_stride, packed->memory->as<float>(), packed_size};
  const bool serial = Serial(batch, job->m, n, k);
  if (int status = PackInTasks(b_count * packed_size, b_count * Panels(n), PackBPanels, &pack, serial); status != 0) {
    return status;
  }
  job->b = packed->memory->as<float>();
  job->b_stride = b_count == 1 ? 0 : packed_size;
  return 0;
}

}  // namespace

int GemmPacked(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b_packed, float* c,
               int64_t ldc, const EpilogueStep* epilogue, int epilogue_size) {
  PackedJob job{m, n, k, a, lda, 0, false, b_packed, 0, c, ldc, 0, 0, 0, 0, 0, nullptr};
  job.epilogue = epilogue;
  job.epilogue_size = epilogue_size;
  job.channel_per_column = true;
  job.register_tail = RegisterEpilogueOf(epilogue, epilogue_size, false, true);  // swish stays a pass
  return RunPacked(1, job);
}

int BatchGemm(int64_t batch, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, int64_t a_stride,
              bool a_transposed, const float* b, int64_t ldb, int64_t b_stride, bool b_transposed, float* c,
              int64_t ldc, int64_t c_stride) {
  if (b_transposed && !a_transposed && m <= kMaxDotRows) {
    const int64_t groups = (n + kDotColumns - 1) / kDotColumns;
    for (int64_t product = 0; product < batch; ++product) {
      DotJob job{m, n, k, a + product * a_stride, lda, b + product * b_stride, ldb, c + product * c_stride, ldc};
      if (Serial(1, m, n, k)) {
        DotColumns(0, groups, &job);
      } else if (ParallelFor(groups, DotColumns, &job) != 0) {
        return -1;
      }
    }
    return 0;
  }
  PackedJob job{m, n, k, a, lda, a_stride, a_transposed, b, b_stride, c, ldc, c_stride, 0, 0, 0, 0, nullptr};
  PackedB packed;
  if (int status = PackB(batch, ldb, b_transposed, &job, &packed); status != 0) return status;
  return RunPacked(batch, job);
}

int Gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool a_transposed, const float* b, int64_t ldb,
         bool b_transposed, float* c, int64_t ldc) {
  return BatchGemm(1, m, n, k, a, lda, 0, a_transposed, b, ldb, 0, b_transposed, c, ldc, 0);
}

int GemmWithEpilogue(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                     float* c, int64_t ldc, const EpilogueStep* epilogue, int epilogue_size) {
  PackedJob job{m, n, k, a, lda, 0, false, b, 0, c, ldc, 0, 0, 0, 0, 0, nullptr};
  job.epilogue = epilogue;
  job.epilogue_size = epilogue_size;
  job.register_tail = RegisterEpilogueOf(epilogue, epilogue_size, false, true);  // swish stays a pass
  job.register_tail.bias_per_row = true;  // C's rows are the output channels
  if (n == 1 && ldb == 1 && ldc == 1 && m > 0) {
    // A matrix times a vector (a 1x1 convolution on one position: squeeze-and-excitation): C[i] is
    // the dot product of A's row i and B, so A is read once, never copied (its packing took 3/4
    // of a 672 -> 28 product).
    DotJob dot{1, m, k, b, k, a, lda, c, 1};
    const int64_t groups = (m + kDotColumns - 1) / kDotColumns;
    if (Serial(1, m, 1, k)) {
      DotColumns(0, groups, &dot);
    } else if (ParallelFor(groups, DotColumns, &dot) != 0) {
      return -1;
    }
    if (epilogue_size > 0) TileEpilogue(job, 0, m, 0, 1);
    return 0;
  }
  PackedB packed;
  if (int status = PackB(1, ldb, false, &job, &packed); status != 0) return status;
  return RunPacked(1, job);
}

}  // namespace kiln::kernels
