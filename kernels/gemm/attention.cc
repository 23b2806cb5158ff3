// Fused scaled dot-product attention (kernels.h, AttentionParams). Per (batch, head), the keys are
// first packed into tiles of kKeyRows keys, [H][kKeyRows] each, and the values copied contiguous in
// rows of whole vectors; then each block of kBlock queries (kQueryVectors vectors,
// the queries in the lanes) computes its scores transposed, [keys][kBlock], in a buffer that stays
// in L1/L2: a tile of kKeyRows keys x kQueryVectors vectors of queries walks the head size with one
// load per query vector and one broadcast per key. The softmax then runs down the keys lane by
// lane (a vector max and sum per key, no horizontal reductions), leaving exp(score - max); the
// product with V takes tiles of kValueRows queries x kValueVectors vectors of values, one
// broadcast of a probability per query and key, and scales each output row by 1 / its sum as it
// stores it. Products of unfused attention wrote the [queries, keys] scores of every head out, read
// them for the softmax, wrote them again and packed them for the product with V; the split of a
// QKV projection into heads and the output's transpose were copies of their own, which the views
// (q_b, q_n, ...) make unnecessary.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <limits>
#include <utility>

#include "kernels/backend_api.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"

namespace kiln::kernels {
namespace {

constexpr int kLanes = kCompiledConfig.vector_floats;
using V = Vec<kLanes>;
constexpr int kQueryVectors = kCompiledConfig.attention_query_vectors;
constexpr int kBlock = kQueryVectors * kLanes;  // queries per block
constexpr int kKeyRows = kCompiledConfig.attention_key_rows;
constexpr int kValueRows = kCompiledConfig.attention_value_rows;
constexpr int kValueVectors = kCompiledConfig.attention_value_vectors;

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct AttentionJob {
  const AttentionParams* p;
  const float *q, *k, *v, *bias;
  float* out;
  int64_t key_tiles;      // ceil(keys / kKeyRows)
  float* packed_keys;     // per head: key_tiles tiles of [head_size][kKeyRows], zeros past the keys
  int64_t packed_keys_size;
  float* values;          // per head: [keys][value_width], zeros past value_size
  int64_t value_width;    // value_size rounded up to whole vectors
  int64_t query_blocks;   // ceil(queries / kBlock)
  std::atomic<bool> out_of_memory{false};  // a task's buffers were not available
};

// Head `head` (b * heads + n) of operand X: its first element.
inline const float* HeadOf(const float* x, int64_t offset, int64_t stride_b, int64_t stride_n, int64_t heads,
                           int64_t head) {
  return x + offset + head / heads * stride_b + head % heads * stride_n;
}

// out[c * out_stride + r] = in[r * in_stride + c * in_column] for r < rows, c < columns: 8 x 8
// blocks at a time in registers where the columns are contiguous (as they are in a QKV projection's
// heads), element by element elsewhere.
void Transpose(const float* in, int64_t in_stride, int64_t in_column, int64_t rows, int64_t columns, float* out,
               int64_t out_stride) {
  int64_t r0 = 0;
#if defined(KILN_SIMD_AVX2)
  for (; in_column == 1 && r0 + 8 <= rows; r0 += 8) {
    int64_t c = 0;
    for (; c + 8 <= columns; c += 8) {
      Transpose8x8(in + r0 * in_stride + c, in_stride, 8, out + c * out_stride + r0, out_stride);
    }
    for (; c < columns; ++c) {
      for (int64_t r = r0; r < r0 + 8; ++r) out[c * out_stride + r] = in[r * in_stride + c];
    }
  }
#endif
  for (; r0 < rows; ++r0) {
    for (int64_t c = 0; c < columns; ++c) out[c * out_stride + r0] = in[r0 * in_stride + c * in_column];
  }
}

// Heads [begin, end): keys packed into tiles (zeros past the last key), values copied into rows of
// whole vectors (zeros past the last value), contiguous: a head's values in place lie a
// projection's row apart (9 KiB in ViT-B's QKV projection, a page per key), read again by each
// block of queries.
void PackHeads(int64_t begin, int64_t end, void* context) {
  const auto& g = *static_cast<const AttentionJob*>(context);
  const AttentionParams& p = *g.p;
  for (int64_t head = begin; head < end; ++head) {
    const float* k = HeadOf(g.k, p.k_offset, p.k_b, p.k_n, p.heads, head);
    float* packed = g.packed_keys + head * g.packed_keys_size;
    for (int64_t tile = 0; tile < g.key_tiles; ++tile) {
      float* to = packed + tile * p.head_size * kKeyRows;
      const int64_t t0 = tile * kKeyRows, rows = std::min<int64_t>(kKeyRows, p.keys - t0);
      Transpose(k + t0 * p.k_t, p.k_t, p.k_h, rows, p.head_size, to, kKeyRows);
      for (int64_t h = 0; rows < kKeyRows && h < p.head_size; ++h) {
        std::fill(to + h * kKeyRows + rows, to + (h + 1) * kKeyRows, 0.0f);
      }
    }
    const float* v = HeadOf(g.v, p.v_offset, p.v_b, p.v_n, p.heads, head);
    float* copy = g.values + head * p.keys * g.value_width;
    for (int64_t t = 0; t < p.keys; ++t) {
      float* row = copy + t * g.value_width;
      if (p.v_v == 1) {
        std::memcpy(row, v + t * p.v_t, p.value_size * sizeof(float));
      } else {
        for (int64_t j = 0; j < p.value_size; ++j) row[j] = v[t * p.v_t + j * p.v_v];
      }
      std::fill(row + p.value_size, row + g.value_width, 0.0f);
    }
  }
}

// scores[t][kBlock] for the tile's kKeyRows keys (t from 0) and the block's first QV vectors of
// queries: the head size walked with the queries (transposed, [head_size][kBlock]) in vectors and the
// keys ([head_size][kKeyRows]) broadcast.
template <int QV>
void ScoresTile(int64_t head_size, const float* queries, const float* keys, float* scores) {
  V acc[kKeyRows * QV];
#pragma GCC unroll 32
  for (auto& a : acc) a = V::Zero();
  for (int64_t h = 0; h < head_size; ++h) {
    V q[QV];
#pragma GCC unroll 4
    for (int j = 0; j < QV; ++j) {
      q[j] = V::Load(queries + h * kBlock + j * kLanes);
      q[j].Pin();
    }
#pragma GCC unroll 16
    for (int r = 0; r < kKeyRows; ++r) {
      V key = V::Broadcast(keys + h * kKeyRows + r);
#pragma GCC unroll 4
      for (int j = 0; j < QV; ++j) acc[r * QV + j] = V::Fma(key, q[j], acc[r * QV + j]);
    }
  }
#pragma GCC unroll 32
  for (int i = 0; i < kKeyRows * QV; ++i) acc[i].Store(scores + i / QV * kBlock + i % QV * kLanes);
}

using ScoresTileFunction = void (*)(int64_t, const float*, const float*, float*);
template <int... J>
constexpr auto ScoresTileTable(std::integer_sequence<int, J...>) {
  return std::array<ScoresTileFunction, sizeof...(J)>{ScoresTile<J + 1>...};
}
// kScoresTiles[qv - 1] computes qv vectors of queries.
constexpr auto kScoresTiles = ScoresTileTable(std::make_integer_sequence<int, kQueryVectors>());

// out rows [0, R) (R queries of the block from `column` on) x NV vectors of values from `values`
// (rows of the keys, `ldv` apart): the probabilities ([keys][kBlock], unnormalized) broadcast per
// query and key, each row times `inverse_sums[r]` as it is stored; `last_lanes` lanes of the last
// vector (kLanes: all).
template <int R, int NV>
void OutputTile(int64_t keys, const float* probabilities, int64_t column, const float* values, int64_t ldv,
                const float* inverse_sums, float* out, int64_t out_s, int last_lanes) {
  V acc[R * NV];
#pragma GCC unroll 32
  for (auto& a : acc) a = V::Zero();
  for (int64_t t = 0; t < keys; ++t) {
    V value[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      value[j] = V::Load(values + t * ldv + j * kLanes);
      value[j].Pin();
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      V weight = V::Broadcast(probabilities + t * kBlock + column + r);
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[r * NV + j] = V::Fma(weight, value[j], acc[r * NV + j]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    V scale = V::Broadcast(inverse_sums + column + r);
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      V y = V::Mul(acc[r * NV + j], scale);
      if (j == NV - 1 && last_lanes < kLanes) {
        y.StoreLanes(out + r * out_s + j * kLanes, last_lanes);
      } else {
        y.Store(out + r * out_s + j * kLanes);
      }
    }
  }
}

using OutputTileFunction = void (*)(int64_t, const float*, int64_t, const float*, int64_t, const float*, float*,
                                    int64_t, int);
template <int R, int... J>
constexpr auto OutputTilesOfRows(std::integer_sequence<int, J...>) {
  return std::array<OutputTileFunction, sizeof...(J)>{OutputTile<R, J + 1>...};
}
template <int... I>
constexpr auto OutputTileTable(std::integer_sequence<int, I...>) {
  return std::array<std::array<OutputTileFunction, kValueVectors>, sizeof...(I)>{
      OutputTilesOfRows<I + 1>(std::make_integer_sequence<int, kValueVectors>())...};
}
// kOutputTiles[r - 1][nv - 1] computes r queries x nv vectors of values.
constexpr auto kOutputTiles = OutputTileTable(std::make_integer_sequence<int, kValueRows>());

// Per block: the queries transposed [head_size][kBlock], the scores [key_tiles * kKeyRows][kBlock],
// the bias transposed like the scores (when it varies along the queries), the inverse sums.
struct BlockBuffers {
  float *queries, *scores, *bias, *inverse_sums;
};

// Block `block` of head `head`.
void AttendBlock(const AttentionJob& g, int64_t head, int64_t block, const BlockBuffers& w) {
  const AttentionParams& p = *g.p;
  const int64_t s0 = block * kBlock, count = std::min<int64_t>(kBlock, p.queries - s0);
  // The queries transposed; the lanes past the last query zeros.
  const int query_vectors = static_cast<int>(CeilDiv(count, kLanes));
  const float* q = HeadOf(g.q, p.q_offset, p.q_b, p.q_n, p.heads, head) + s0 * p.q_s;
  Transpose(q, p.q_s, p.q_h, count, p.head_size, w.queries, kBlock);
  for (int64_t h = 0; count < kBlock && h < p.head_size; ++h) {
    std::fill(w.queries + h * kBlock + count, w.queries + h * kBlock + query_vectors * kLanes, 0.0f);
  }
  const float* keys = g.packed_keys + head * g.packed_keys_size;
  for (int64_t tile = 0; tile < g.key_tiles; ++tile) {
    kScoresTiles[query_vectors - 1](p.head_size, w.queries, keys + tile * p.head_size * kKeyRows,
                                    w.scores + tile * kKeyRows * kBlock);
  }
  // Scale and bias, then the softmax down the keys, lane by lane.
  const float* bias =
      g.bias != nullptr ? HeadOf(g.bias, p.bias_offset, p.bias_b, p.bias_n, p.heads, head) + s0 * p.bias_s : nullptr;
  const bool bias_per_query = bias != nullptr && p.bias_s != 0;
  if (bias_per_query) Transpose(bias, p.bias_s, p.bias_t, count, p.keys, w.bias, kBlock);
  const V scale = V::Broadcast(&p.scale);
  for (int j = 0; j < query_vectors; ++j) {
    float lowest = -std::numeric_limits<float>::infinity();
    V max = V::Broadcast(&lowest);
    for (int64_t t = 0; t < p.keys; ++t) {
      float* at = w.scores + t * kBlock + j * kLanes;
      V x = V::Mul(V::Load(at), scale);
      if (bias_per_query) {  // lanes past the last query: whatever the buffer held, never read back
        x = V::Add(x, V::Load(w.bias + t * kBlock + j * kLanes));
      } else if (bias != nullptr) {
        x = V::Add(x, V::Broadcast(bias + t * p.bias_t));
      }
      x.Store(at);
      max = V::Max(max, x);
    }
    V sum = V::Zero();
    for (int64_t t = 0; t < p.keys; ++t) {
      float* at = w.scores + t * kBlock + j * kLanes;
      V e = V::Exp(V::Sub(V::Load(at), max));
      e.Store(at);
      sum = V::Add(sum, e);
    }
    float one = 1.0f;
    V::Div(V::Broadcast(&one), sum).Store(w.inverse_sums + j * kLanes);
  }
  // The product with the values, in tiles of queries x vectors of values.
  const float* values = g.values + head * p.keys * g.value_width;
  float* out = g.out + p.out_offset + head / p.heads * p.out_b + head % p.heads * p.out_n + s0 * p.out_s;
  const int64_t vectors = g.value_width / kLanes;
  for (int64_t j0 = 0; j0 < vectors; j0 += kValueVectors) {
    const int64_t nv = std::min<int64_t>(kValueVectors, vectors - j0);
    const int last_lanes = j0 + nv == vectors ? static_cast<int>(p.value_size - (vectors - 1) * kLanes) : kLanes;
    for (int64_t i = 0; i < count; i += kValueRows) {
      const int64_t rows = std::min<int64_t>(kValueRows, count - i);
      kOutputTiles[rows - 1][nv - 1](p.keys, w.scores, i, values + j0 * kLanes, g.value_width, w.inverse_sums,
                                     out + i * p.out_s + j0 * kLanes, p.out_s, last_lanes);
    }
  }
}

// Blocks [begin, end) over all heads, with buffers of their own.
void AttendBlocks(int64_t begin, int64_t end, void* context) {
  auto& g = *static_cast<AttentionJob*>(context);
  const AttentionParams& p = *g.p;
  const int64_t score_rows = g.key_tiles * kKeyRows;
  const int64_t floats = (p.head_size + 2 * score_rows + 1) * kBlock;
  Workspace memory(floats * sizeof(float));
  if (!memory.ok()) {
    g.out_of_memory = true;
    return;
  }
  float* base = memory.as<float>();
  BlockBuffers w{base, base + p.head_size * kBlock, base + (p.head_size + score_rows) * kBlock,
                 base + (p.head_size + 2 * score_rows) * kBlock};
  for (int64_t task = begin; task < end; ++task) AttendBlock(g, task / g.query_blocks, task % g.query_blocks, w);
}

// Attention with a bias, or without (null).
int Attend(const AttentionParams& p, const float* q, const float* k, const float* v, const float* bias, float* out) {
  const int64_t heads = p.batch * p.heads;
  if (heads <= 0 || p.queries <= 0 || p.value_size <= 0) return 0;
  if (p.keys <= 0) {  // no keys: every output row a sum of nothing
    for (int64_t head = 0; head < heads; ++head) {
      float* o = out + p.out_offset + head / p.heads * p.out_b + head % p.heads * p.out_n;
      for (int64_t s = 0; s < p.queries; ++s) {
        for (int64_t j = 0; j < p.value_size; ++j) o[s * p.out_s + j * p.out_v] = 0.0f;
      }
    }
    return 0;
  }
  if (p.out_v != 1) return Fail("Attention: the output's values must be contiguous (out_v = 1)");
  AttentionJob job{&p, q, k, v, bias, out, CeilDiv(p.keys, kKeyRows), nullptr, 0, nullptr,
                   CeilDiv(p.value_size, kLanes) * kLanes, CeilDiv(p.queries, kBlock)};
  job.packed_keys_size = job.key_tiles * kKeyRows * p.head_size;
  Workspace keys(heads * job.packed_keys_size * sizeof(float));
  Workspace values(heads * p.keys * job.value_width * sizeof(float));
  if (!keys.ok() || !values.ok()) return Fail("Attention: out of workspace memory");
  job.packed_keys = keys.as<float>();
  job.values = values.as<float>();
  if (int status = ParallelFor(heads, PackHeads, &job); status != 0) return status;
  if (int status = ParallelFor(heads * job.query_blocks, AttendBlocks, &job); status != 0) return status;
  return job.out_of_memory ? Fail("Attention: out of workspace memory") : 0;
}

}  // namespace

int Attention(const AttentionParams& p, const float* q, const float* k, const float* v, float* out) {
  return Attend(p, q, k, v, nullptr, out);
}

int AttentionWithBias(const AttentionParams& p, const float* q, const float* k, const float* v, const float* bias,
                      float* out) {
  return Attend(p, q, k, v, bias, out);
}

}  // namespace kiln::kernels
