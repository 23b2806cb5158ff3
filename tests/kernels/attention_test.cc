// Attention (fused scaled dot-product attention) against its definition computed in double:
// softmax(scale * Q K^T + bias) V per batch and head, over operands laid out as the compiler's
// views leave them: heads of a packed QKV projection (one buffer, three offsets), keys stored
// transposed, values and outputs in [batch, sequence, heads, size] order, a bias broadcast along
// the heads and queries or varying along the queries, value sizes that are not whole vectors and
// values read with a stride; numbers of queries and keys around the block (48 queries with AVX-512,
// 24 with AVX2) and the tiles (8 and 4 keys, 6 and 4 queries); serial and on the thread pool. A
// refused workspace is an error. Compiled for AVX-512, AVX2 and baseline x86-64 (the portable
// path).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernel_test_util.h"

namespace kiln::kernels {
namespace {

struct Case {
  int64_t batch, heads, queries, keys, head_size, value_size;
  bool packed_qkv;      // Q, K and V heads of one [batch, sequence, 3, heads, size] buffer (queries == keys)
  bool keys_transposed; // K stored [batch, heads, head_size, keys]
  bool value_stride;    // V's values 2 apart
  int bias;             // 0 none, 1 [batch, 1, 1, keys], 2 [1, heads, queries, keys]
  std::string Text() const {
    return "B" + std::to_string(batch) + " N" + std::to_string(heads) + " S" + std::to_string(queries) + " T" +
           std::to_string(keys) + " H" + std::to_string(head_size) + " Hv" + std::to_string(value_size) +
           (packed_qkv ? " packed" : "") + (keys_transposed ? " K^T" : "") + (value_stride ? " V-strided" : "") +
           " bias " + std::to_string(bias);
  }
};

struct Layout {
  AttentionParams p;
  std::vector<float> q, k, v, bias;
  int64_t out_size;
};

Layout MakeLayout(const Case& c, std::mt19937& rng) {
  Layout l{};
  AttentionParams& p = l.p;
  p.batch = c.batch;
  p.heads = c.heads;
  p.queries = c.queries;
  p.keys = c.keys;
  p.head_size = c.head_size;
  p.value_size = c.value_size;
  p.scale = 1.0f / std::sqrt(static_cast<float>(c.head_size));
  const int64_t n = c.heads, s = c.queries, t = c.keys, h = c.head_size, hv = c.value_size;
  if (c.packed_qkv) {  // [B, S, 3, N, H]: q at part 0, k at 1, v at 2 (hv == h)
    const int64_t row = 3 * n * h;
    l.q = Random(c.batch * s * row, rng);
    p.q_offset = 0, p.q_b = s * row, p.q_n = h, p.q_s = row, p.q_h = 1;
    p.k_offset = n * h, p.k_b = s * row, p.k_n = h, p.k_t = row, p.k_h = 1;
    p.v_offset = 2 * n * h, p.v_b = s * row, p.v_n = h, p.v_t = row, p.v_v = 1;
  } else {
    l.q = Random(c.batch * n * s * h, rng);  // [B, N, S, H]
    p.q_b = n * s * h, p.q_n = s * h, p.q_s = h, p.q_h = 1;
    l.k = Random(c.batch * n * t * h, rng);
    if (c.keys_transposed) {  // [B, N, H, T]
      p.k_b = n * h * t, p.k_n = h * t, p.k_t = 1, p.k_h = t;
    } else {  // [B, T, N, H]
      p.k_b = t * n * h, p.k_n = h, p.k_t = n * h, p.k_h = 1;
    }
    const int64_t spread = c.value_stride ? 2 : 1;  // [B, N, T, Hv * spread]
    l.v = Random(c.batch * n * t * hv * spread, rng);
    p.v_b = n * t * hv * spread, p.v_n = t * hv * spread, p.v_t = hv * spread, p.v_v = spread;
  }
  // Scores of magnitude up to ~sqrt(H): scale the inputs up so the softmax is far from uniform.
  for (float& x : l.q) x *= 3.0f;
  if (c.bias == 1) {
    l.bias = Random(c.batch * t, rng);
    for (float& x : l.bias) x = x < -0.6f ? -10000.0f : x;  // some keys masked
    p.bias_b = t, p.bias_n = 0, p.bias_s = 0, p.bias_t = 1;
  } else if (c.bias == 2) {
    l.bias = Random(n * s * t, rng);
    p.bias_b = 0, p.bias_n = s * t, p.bias_s = t, p.bias_t = 1;
  }
  // out [B, S, N, Hv], as the transpose after the product leaves it.
  p.out_b = s * n * hv, p.out_n = hv, p.out_s = n * hv, p.out_v = 1;
  l.out_size = c.batch * s * n * hv;
  return l;
}

// The definition in double, at out's place for [b, n, i, j].
std::vector<double> Reference(const Layout& l) {
  const AttentionParams& p = l.p;
  const float* q = l.q.data();
  const float* k = l.k.empty() ? q : l.k.data();
  const float* v = l.v.empty() ? q : l.v.data();
  std::vector<double> out(l.out_size, 0.0);
  std::vector<double> scores(p.keys);
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t n = 0; n < p.heads; ++n) {
      for (int64_t i = 0; i < p.queries; ++i) {
        double max = -INFINITY;
        for (int64_t t = 0; t < p.keys; ++t) {
          double dot = 0;
          for (int64_t h = 0; h < p.head_size; ++h) {
            dot += double(q[p.q_offset + b * p.q_b + n * p.q_n + i * p.q_s + h * p.q_h]) *
                   k[p.k_offset + b * p.k_b + n * p.k_n + t * p.k_t + h * p.k_h];
          }
          scores[t] = dot * p.scale;
          if (!l.bias.empty()) {
            scores[t] += l.bias[p.bias_offset + b * p.bias_b + n * p.bias_n + i * p.bias_s + t * p.bias_t];
          }
          max = std::max(max, scores[t]);
        }
        double sum = 0;
        for (double& x : scores) sum += x = std::exp(x - max);
        for (int64_t j = 0; j < p.value_size; ++j) {
          double y = 0;
          for (int64_t t = 0; t < p.keys; ++t) {
            y += scores[t] * v[p.v_offset + b * p.v_b + n * p.v_n + t * p.v_t + j * p.v_v];
          }
          out[p.out_offset + b * p.out_b + n * p.out_n + i * p.out_s + j] = y / sum;
        }
      }
    }
  }
  return out;
}

// Each output within 2e-5 (values of magnitude below 1, weights summing to 1).
void ExpectAttention(const Case& c, bool parallel) {
  std::mt19937 rng(static_cast<unsigned>(c.queries * 131 + c.keys * 17 + c.value_size));
  Layout l = MakeLayout(c, rng);
  std::vector<double> want = Reference(l);
  std::vector<float> out(l.out_size, NAN);
  UseThreads(parallel);
  const float* q = l.q.data();
  const float* k = l.k.empty() ? q : l.k.data();
  const float* v = l.v.empty() ? q : l.v.data();
  int status = l.bias.empty() ? Attention(l.p, q, k, v, out.data())
                              : AttentionWithBias(l.p, q, k, v, l.bias.data(), out.data());
  UseThreads(true);
  ASSERT_EQ(status, 0) << c.Text();
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_NEAR(out[i], want[i], 2e-5) << c.Text() << (parallel ? " threads" : " serial") << " at " << i;
  }
}

TEST(Attention, MatchesTheDefinitionAcrossLayoutsAndSizes) {
  const std::vector<Case> cases = {
      {1, 12, 197, 197, 64, 64, true, false, false, 0},   // ViT-B/16's heads of its QKV projection
      {2, 3, 13, 13, 8, 8, false, false, false, 1},       // batch 2, a key mask
      {1, 2, 40, 40, 20, 20, false, true, false, 1},      // head size 20, keys transposed
      {1, 2, 33, 7, 16, 24, false, false, false, 2},      // cross attention, bias per query
      {1, 1, 1, 1, 1, 1, false, false, false, 0},         // one of everything
      {2, 2, 31, 12, 32, 40, false, false, true, 2},      // values strided and not whole vectors
      {1, 4, 65, 130, 64, 64, false, true, false, 1},     // blocks and tiles plus one
      {1, 2, 6, 25, 17, 3, false, false, false, 0},       // fewer values than a vector
  };
  for (const Case& c : cases) {
    ExpectAttention(c, false);
    ExpectAttention(c, true);
  }
}

TEST(Attention, NoKeysGiveZeros) {
  AttentionParams p{1, 2, 3, 0, 4, 5, 1.0f, 0, 0, 12, 4, 1, 0, 0, 0, 4, 1, 0, 0, 0, 5, 1, 0, 0, 0, 0, 0,
                    0, 0, 5, 10, 1};
  std::vector<float> q(2 * 3 * 4, 1.0f), out(2 * 3 * 5, NAN);
  ASSERT_EQ(Attention(p, q.data(), q.data(), q.data(), out.data()), 0);
  for (float x : out) EXPECT_EQ(x, 0.0f);
}

TEST(Attention, OutputValuesNotContiguousAreAnError) {
  std::mt19937 rng(3);
  Layout l = MakeLayout({1, 2, 5, 5, 8, 8, false, false, false, 0}, rng);
  l.p.out_v = 2;
  std::vector<float> out(2 * l.out_size, 0.0f);
  EXPECT_NE(Attention(l.p, l.q.data(), l.k.data(), l.v.data(), out.data()), 0);
  for (float x : out) EXPECT_EQ(x, 0.0f);  // nothing written
}

TEST(Attention, RefusedWorkspaceIsAnError) {
  std::mt19937 rng(7);
  Layout l = MakeLayout({1, 2, 40, 40, 16, 16, false, false, false, 0}, rng);
  std::vector<float> out(l.out_size, 0.0f);
  for (int grants : {0, 1}) {  // the packed keys; each task's buffers
    workspace_grants = grants;
    __TVMBackendAllocWorkspace = RationedWorkspace;
    int status = Attention(l.p, l.q.data(), l.k.data(), l.v.data(), out.data());
    __TVMBackendAllocWorkspace = TVMBackendAllocWorkspace;
    EXPECT_NE(status, 0) << grants;
  }
}

}  // namespace
}  // namespace kiln::kernels
