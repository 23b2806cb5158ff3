// Gemm, BatchGemm, GemmPacked and BatchGemmInt32 against the definition (sums in double): every
// combination of transposed operands, row strides wider than the rows, sizes around the
// micro-kernel's tile (rows), panel (16 columns), tile of panels (3 with AVX-512), K block (1024),
// row blocks and blocks of panels, batch-1 dense layers (the dot-product path); serial and on the
// thread pool. A refused workspace is an error that writes nothing. Compiled for AVX-512, AVX2
// and baseline x86-64 (the portable path).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernel_test_util.h"

namespace kiln::kernels {
namespace {

struct Problem {
  int64_t m, n, k;
  bool a_transposed, b_transposed;
  int64_t pad;  // extra elements at the end of each row of A, B and C
  std::string Text() const {
    return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + (a_transposed ? " A^T" : "") +
           (b_transposed ? " B^T" : "") + " pad " + std::to_string(pad);
  }
};

struct Operands {
  std::vector<float> a, b;
  int64_t lda, ldb;
};

Operands MakeOperands(const Problem& p, std::mt19937& rng) {
  Operands o;
  int64_t a_rows = p.a_transposed ? p.k : p.m, a_cols = p.a_transposed ? p.m : p.k;
  int64_t b_rows = p.b_transposed ? p.n : p.k, b_cols = p.b_transposed ? p.k : p.n;
  o.lda = a_cols + p.pad;
  o.ldb = b_cols + p.pad;
  o.a = Random(a_rows * o.lda, rng);
  o.b = Random(b_rows * o.ldb, rng);
  return o;
}

float A(const Problem& p, const Operands& o, int64_t i, int64_t x) {
  return p.a_transposed ? o.a[x * o.lda + i] : o.a[i * o.lda + x];
}
float B(const Problem& p, const Operands& o, int64_t x, int64_t j) {
  return p.b_transposed ? o.b[j * o.ldb + x] : o.b[x * o.ldb + j];
}

// C (row stride ldc) against sum_x A[i, x] B[x, j] in double, within 1e-5 of sum_x |A B|
// (float32 accumulation over up to 2100 terms of magnitude below 1); padding untouched.
void ExpectProduct(const Problem& p, const Operands& o, const std::vector<float>& c, int64_t ldc,
                   const std::string& what) {
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      if (j >= p.n) {
        ASSERT_TRUE(std::isnan(c[i * ldc + j])) << what << " " << p.Text() << ": wrote C's padding at " << i << ", " << j;
        continue;
      }
      double want = 0, scale = 0;
      for (int64_t x = 0; x < p.k; ++x) {
        double term = double(A(p, o, i, x)) * B(p, o, x, j);
        want += term;
        scale += std::abs(term);
      }
      ASSERT_NEAR(c[i * ldc + j], want, 1e-5 * std::max(1.0, scale)) << what << " " << p.Text() << " at " << i << ", " << j;
    }
  }
}

std::vector<Problem> Problems() {
  std::vector<Problem> problems;
  for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 13, 97, 200}) {
    for (int64_t n : {1, 15, 16, 17, 33, 48, 100, 400}) {
      for (int64_t k : {1, 7, 17, 256, 300}) {
        for (int transposes = 0; transposes < 4; ++transposes) {
          problems.push_back({m, n, k, (transposes & 1) != 0, (transposes & 2) != 0, (m + n + k) % 3});
        }
      }
    }
  }
  problems.push_back({128, 768, 2100, false, true, 0});  // a BERT-sized dense layer, K in three blocks
  return problems;
}

TEST(Gemm, AgainstTheDefinition) {
  std::mt19937 rng(8);
  for (bool parallel : {false, true}) {
    UseThreads(parallel);
    for (const Problem& p : Problems()) {
      Operands o = MakeOperands(p, rng);
      int64_t ldc = p.n + p.pad;
      std::vector<float> c(p.m * ldc, NAN);
      ASSERT_EQ(Gemm(p.m, p.n, p.k, o.a.data(), o.lda, p.a_transposed, o.b.data(), o.ldb, p.b_transposed, c.data(), ldc),
                0);
      ExpectProduct(p, o, c, ldc, parallel ? "threads" : "serial");
    }
  }
  UseThreads(false);
}

// Three products in one call, with A or B shared (stride 0) or one per product, transposed or
// not; each product against the definition, one of them with rows in several row blocks.
TEST(BatchGemm, EachProductAgainstTheDefinition) {
  std::mt19937 rng(10);
  std::vector<Problem> problems = {{5, 17, 7, false, false, 0}, {13, 33, 300, false, true, 1},
                                   {7, 16, 9, true, false, 2},  {2, 19, 37, false, true, 0},
                                   {200, 100, 64, true, true, 1}};
  for (bool parallel : {false, true}) {
    UseThreads(parallel);
    for (const Problem& p : problems) {
      for (int shared = 0; shared < 3; ++shared) {  // 0: none, 1: A shared, 2: B shared
        const int64_t batch = 3;
        std::vector<Operands> operands;
        for (int64_t i = 0; i < batch; ++i) operands.push_back(MakeOperands(p, rng));
        if (shared == 1) for (Operands& o : operands) o.a = operands[0].a;
        if (shared == 2) for (Operands& o : operands) o.b = operands[0].b;
        std::vector<float> a, b;
        for (const Operands& o : operands) {
          a.insert(a.end(), o.a.begin(), o.a.end());
          b.insert(b.end(), o.b.begin(), o.b.end());
        }
        int64_t a_stride = shared == 1 ? 0 : operands[0].a.size(), b_stride = shared == 2 ? 0 : operands[0].b.size();
        int64_t ldc = p.n + p.pad, c_stride = p.m * ldc;
        std::vector<float> c(batch * c_stride, NAN);
        ASSERT_EQ(BatchGemm(batch, p.m, p.n, p.k, a.data(), operands[0].lda, a_stride, p.a_transposed, b.data(),
                            operands[0].ldb, b_stride, p.b_transposed, c.data(), ldc, c_stride),
                  0);
        for (int64_t i = 0; i < batch; ++i) {
          std::vector<float> product(c.begin() + i * c_stride, c.begin() + (i + 1) * c_stride);
          ExpectProduct(p, operands[i], product, ldc,
                        "product " + std::to_string(i) + " shared " + std::to_string(shared));
        }
      }
    }
  }
  UseThreads(false);
}

// A dense weight [N, K] packed by its definition in kernels.h ("NK16n", zeros past N).
std::vector<float> PackNK16n(const std::vector<float>& weight, int64_t n, int64_t k, int64_t ld) {
  int64_t panels = (n + kGemmPanel - 1) / kGemmPanel;
  std::vector<float> packed(panels * k * kGemmPanel, 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t x = 0; x < k; ++x) packed[(j / kGemmPanel * k + x) * kGemmPanel + j % kGemmPanel] = weight[j * ld + x];
  }
  return packed;
}

TEST(GemmPacked, AgainstTheDefinition) {
  std::mt19937 rng(9);
  for (bool parallel : {false, true}) {
    UseThreads(parallel);
    for (Problem p : Problems()) {
      if (p.a_transposed || !p.b_transposed) continue;
      Operands o = MakeOperands(p, rng);
      std::vector<float> packed = PackNK16n(o.b, p.n, p.k, o.ldb);
      int64_t ldc = p.n + p.pad;
      std::vector<float> c(p.m * ldc, NAN);
      ASSERT_EQ(GemmPacked(p.m, p.n, p.k, o.a.data(), o.lda, packed.data(), c.data(), ldc, nullptr, 0), 0);
      ExpectProduct(p, o, c, ldc, parallel ? "threads" : "serial");
    }
  }
  UseThreads(false);
}

// GemmPacked (a dense layer) applies its steps once to each element of C, columns in and past
// whole panels, to an empty product's zeros, after the last of several K blocks, with rows past
// whole tiles; C's padding stays untouched: a bias per column (its output feature), a residual of
// C's layout and a clip (applied in registers), and a scale per column, relu and a scalar
// (applied in passes). Random A and B against sums in double, serial and on the thread pool.
TEST(GemmPacked, EpiloguePerColumnAgainstTheDefinition) {
  std::mt19937 rng(33);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (bool parallel : {false, true}) {
    UseThreads(parallel);
    for (auto [m, n, k] : {std::array<int64_t, 3>{1, 16, 7}, {13, 37, 0}, {13, 37, 1100}, {130, 100, 64}}) {
      for (int form = 0; form < 4; ++form) {  // in registers, passes, GELU in registers, GELU in passes
        const bool in_registers = form % 2 == 0, gelu = form >= 2;
        const int64_t ldc = n + 3;
        std::vector<float> a(m * k), w(n * k), bias(n), residual(m * ldc), c(m * ldc, NAN);
        for (std::vector<float>* v : {&a, &w, &bias, &residual}) {
          for (float& x : *v) x = uniform(rng);
        }
        std::vector<float> packed = PackNK16n(w, n, k, k);
        const float half = 0.5f;
        const EpilogueStep tail[] = {{EpilogueStep::kAdd, EpilogueStep::kChannel, bias.data(), 0, 0},
                                     {EpilogueStep::kAdd, EpilogueStep::kTensor, residual.data(), 0, 0},
                                     {EpilogueStep::kClip, EpilogueStep::kNone, nullptr, -0.5f, 2.0f}};
        const EpilogueStep passes[] = {{EpilogueStep::kMultiply, EpilogueStep::kChannel, bias.data(), 0, 0},
                                       {EpilogueStep::kRelu, EpilogueStep::kNone, nullptr, 0, 0},
                                       {EpilogueStep::kSubtract, EpilogueStep::kScalar, &half, 0, 0}};
        const EpilogueStep gelu_tail[] = {{EpilogueStep::kAdd, EpilogueStep::kChannel, bias.data(), 0, 0},
                                          {EpilogueStep::kGelu, EpilogueStep::kNone, nullptr, 0, 0}};
        const EpilogueStep gelu_passes[] = {{EpilogueStep::kMultiply, EpilogueStep::kChannel, bias.data(), 0, 0},
                                            {EpilogueStep::kGelu, EpilogueStep::kNone, nullptr, 0, 0}};
        const EpilogueStep* steps = gelu ? (in_registers ? gelu_tail : gelu_passes) : in_registers ? tail : passes;
        ASSERT_EQ(GemmPacked(m, n, k, a.data(), k, packed.data(), c.data(), ldc, steps, gelu ? 2 : 3), 0)
            << TVMGetLastError();
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < ldc; ++j) {
            if (j >= n) {
              ASSERT_TRUE(std::isnan(c[i * ldc + j])) << "wrote C's padding at " << i << ", " << j;
              continue;
            }
            double sum = 0;
            for (int64_t x = 0; x < k; ++x) sum += double(a[i * k + x]) * w[j * k + x];
            double want = in_registers ? std::min(2.0, std::max(-0.5, sum + bias[j] + residual[i * ldc + j]))
                                       : std::max(0.0, sum * bias[j]) - 0.5;
            if (gelu) {
              double y = in_registers ? sum + bias[j] : sum * bias[j];
              want = 0.5 * y * (1.0 + std::erf(y / std::sqrt(2.0)));
            }
            ASSERT_NEAR(c[i * ldc + j], want, 1e-4 * (1 + std::abs(sum)))
                << m << "x" << n << "x" << k << (parallel ? " threads" : "") << (in_registers ? " tail" : " passes")
                << (gelu ? " gelu" : "")
                << " at " << i << ", " << j;
          }
        }
      }
    }
  }
  UseThreads(false);
}

// Gemm packs B, then A, into workspace: refused either (the first or the second request), it
// fails with a message and writes nothing; with workspace again it computes.
TEST(Gemm, MissingWorkspaceIsAnError) {
  std::vector<float> a(6 * 8, 1.0f), b(8 * 20, 1.0f), c(6 * 20, NAN);
  for (int grant : {0, 1}) {
    workspace_grants = grant;
    __TVMBackendAllocWorkspace = RationedWorkspace;
    int status = Gemm(6, 20, 8, a.data(), 8, false, b.data(), 20, false, c.data(), 20);
    __TVMBackendAllocWorkspace = TVMBackendAllocWorkspace;
    EXPECT_NE(status, 0) << "with " << grant << " workspace granted";
    EXPECT_THAT(std::string(TVMGetLastError()), ::testing::HasSubstr("Gemm: out of workspace memory"));
    for (float v : c) ASSERT_TRUE(std::isnan(v));
  }
  ASSERT_EQ(Gemm(6, 20, 8, a.data(), 8, false, b.data(), 20, false, c.data(), 20), 0);
  for (float v : c) ASSERT_EQ(v, 8.0f);
}

// GemmWithEpilogue applies its steps once to C's rows (one value per row), columns past the last
// whole vector included, to an empty product's zeros, and after the last of several K blocks;
// C's padding stays untouched. Serial and on the thread pool.
TEST(GemmWithEpilogue, StepsPerRowOverEveryColumn) {
  const int64_t m = 11, n = 37, ldc = 40;
  for (bool parallel : {false, true}) {
    UseThreads(parallel);
    for (int64_t k : {0, 5, 300, 1100}) {
      std::vector<float> a(m * k, 0.5f), b(k * n, 2.0f), bias(m), residual(m * ldc), c(m * ldc, NAN);
      for (int64_t i = 0; i < m; ++i) bias[i] = float(i) - 4.0f;
      for (size_t i = 0; i < residual.size(); ++i) residual[i] = float(i % 7) * 0.25f;
      const EpilogueStep steps[] = {{EpilogueStep::kAdd, EpilogueStep::kChannel, bias.data(), 0, 0},
                                    {EpilogueStep::kSubtract, EpilogueStep::kTensor, residual.data(), 0, 0},
                                    {EpilogueStep::kRelu, EpilogueStep::kNone, nullptr, 0, 0}};
      ASSERT_EQ(GemmWithEpilogue(m, n, k, a.data(), k, b.data(), n, c.data(), ldc, steps, 3), 0);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < ldc; ++j) {
          if (j >= n) {
            ASSERT_TRUE(std::isnan(c[i * ldc + j])) << "wrote C's padding at " << i << ", " << j;
            continue;
          }
          float want = std::max(0.0f, float(k) + bias[i] - residual[i * ldc + j]);
          ASSERT_FLOAT_EQ(c[i * ldc + j], want) << "k " << k << (parallel ? " threads" : "") << " at " << i << ", " << j;
        }
      }
    }
  }
  UseThreads(false);
}

// GemmWithEpilogue's register form (a value per row added, a residual added, relu or clip, as a
// 1x1 convolution's bias and activation), applied in the tile's registers where the tile is whole
// panels and as passes where it is not: random operands against sums in double, rows around the
// tile, columns in whole tiles, partial panels and tiles, K in one and two blocks; serial and on the
// thread pool.
TEST(GemmWithEpilogue, RegisterFormPerRowAgainstTheDefinition) {
  std::mt19937 rng(47);
  for (bool parallel : {false, true}) {
    UseThreads(parallel);
    for (auto [m, n, k] : {std::array<int64_t, 3>{1, 16, 7}, {11, 100, 29}, {40, 196, 116}, {9, 250, 1100}}) {
      for (bool clip : {false, true}) {
        std::vector<float> a = Random(m * k, rng), b = Random(k * n, rng), bias = Random(m, rng);
        std::vector<float> residual = Random(m * n, rng), c(m * n, NAN);
        const EpilogueStep steps[] = {
            {EpilogueStep::kAdd, EpilogueStep::kChannel, bias.data(), 0, 0},
            {EpilogueStep::kAdd, EpilogueStep::kTensor, residual.data(), 0, 0},
            {clip ? EpilogueStep::kClip : EpilogueStep::kRelu, EpilogueStep::kNone, nullptr, -0.25f, 0.5f}};
        ASSERT_EQ(GemmWithEpilogue(m, n, k, a.data(), k, b.data(), n, c.data(), n, steps, 3), 0);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            double sum = double(bias[i]) + residual[i * n + j];
            for (int64_t x = 0; x < k; ++x) sum += double(a[i * k + x]) * b[x * n + j];
            double want = clip ? std::min(0.5, std::max(-0.25, sum)) : std::max(0.0, sum);
            ASSERT_NEAR(c[i * n + j], want, 1e-5 * (1.0 + k)) << m << "x" << n << "x" << k << " at " << i << ", " << j;
          }
        }
      }
    }
  }
  UseThreads(false);
}

// A matrix times a vector (n = 1: a 1x1 convolution on one position) runs as dot products of A's
// rows: random A and B against sums in double, K with and without a partial vector and empty,
// rows in and past whole groups of four, with its epilogue (a value per row, a residual, swish);
// serial and on the thread pool, small and large enough to be split.
TEST(GemmWithEpilogue, MatrixTimesVectorAgainstTheDefinition) {
  std::mt19937 rng(31);
  for (bool parallel : {false, true}) {
    UseThreads(parallel);
    for (auto [m, k] : {std::pair<int64_t, int64_t>{1, 1}, {3, 17}, {5, 0}, {28, 672}, {61, 5}, {1157, 300}}) {
      std::vector<float> a = Random(m * k, rng), b = Random(k, rng), bias = Random(m, rng), c(m, NAN);
      std::vector<float> residual = Random(m, rng);
      const EpilogueStep steps[] = {{EpilogueStep::kAdd, EpilogueStep::kChannel, bias.data(), 0, 0},
                                    {EpilogueStep::kSubtract, EpilogueStep::kTensor, residual.data(), 0, 0},
                                    {EpilogueStep::kSwish, EpilogueStep::kNone, nullptr, 0, 0}};
      ASSERT_EQ(GemmWithEpilogue(m, 1, k, a.data(), k, b.data(), 1, c.data(), 1, steps, 3), 0);
      for (int64_t i = 0; i < m; ++i) {
        double sum = double(bias[i]) - residual[i];
        for (int64_t x = 0; x < k; ++x) sum += double(a[i * k + x]) * b[x];
        double want = sum / (1.0 + std::exp(-sum));
        ASSERT_NEAR(c[i], want, 1e-5 * (1.0 + std::abs(want))) << m << "x1x" << k << " row " << i;
      }
    }
  }
  UseThreads(false);
}

// GemmPacked copies A into workspace first: without it, the call fails and writes nothing.
TEST(GemmPacked, MissingWorkspaceIsAnError) {
  const int64_t m = 20, n = 40, k = 30;
  std::vector<float> a(m * k, 1.0f), packed((n + kGemmPanel - 1) / kGemmPanel * k * kGemmPanel, 1.0f), c(m * n, NAN);
  workspace_grants = 0;
  __TVMBackendAllocWorkspace = RationedWorkspace;
  int status = GemmPacked(m, n, k, a.data(), k, packed.data(), c.data(), n, nullptr, 0);
  __TVMBackendAllocWorkspace = TVMBackendAllocWorkspace;
  EXPECT_NE(status, 0);
  EXPECT_THAT(std::string(TVMGetLastError()), ::testing::HasSubstr("Gemm: out of workspace memory"));
  for (float v : c) ASSERT_TRUE(std::isnan(v));
  ASSERT_EQ(GemmPacked(m, n, k, a.data(), k, packed.data(), c.data(), n, nullptr, 0), 0);  // with workspace
  for (float v : c) ASSERT_EQ(v, float(k));
}

TEST(GemmPacked, EmptyInnerDimensionGivesZeros) {
  std::vector<float> a(1), packed(1), c(3 * 5, NAN);
  ASSERT_EQ(GemmPacked(3, 5, 0, a.data(), 0, packed.data(), c.data(), 5, nullptr, 0), 0);
  for (float v : c) EXPECT_EQ(v, 0.0f);
}

// BatchGemmInt32 against the definition in int64 reduced modulo 2^32: transposed operands, a shared
// B, 8-bit-range values as MatMulInteger gives it, and sums that overflow int32 (which wrap).
TEST(BatchGemmInt32, ExactModulo2To32) {
  std::mt19937 rng(11);
  for (bool parallel : {false, true}) {
    UseThreads(parallel);
    for (const Problem& p : std::vector<Problem>{{5, 17, 7, false, false, 0}, {9, 4, 300, true, false, 1},
                                                 {3, 11, 40, false, true, 2}, {6, 5, 33, true, true, 0}}) {
      for (int64_t range : {int64_t{255}, int64_t{1} << 30}) {
        std::uniform_int_distribution<int64_t> value(-range, range);
        const int64_t batch = 2, lda = (p.a_transposed ? p.m : p.k) + p.pad, ldb = (p.b_transposed ? p.k : p.n) + p.pad;
        const int64_t a_rows = p.a_transposed ? p.k : p.m, b_rows = p.b_transposed ? p.n : p.k;
        std::vector<int32_t> a(batch * a_rows * lda), b(b_rows * ldb);  // B shared (stride 0)
        for (int32_t& x : a) x = static_cast<int32_t>(value(rng));
        for (int32_t& x : b) x = static_cast<int32_t>(value(rng));
        const int64_t ldc = p.n + p.pad, c_stride = p.m * ldc;
        std::vector<int32_t> c(batch * c_stride, 12345);
        ASSERT_EQ(BatchGemmInt32(batch, p.m, p.n, p.k, a.data(), lda, a_rows * lda, p.a_transposed, b.data(), ldb, 0,
                                 p.b_transposed, c.data(), ldc, c_stride),
                  0);
        for (int64_t q = 0; q < batch; ++q) {
          for (int64_t i = 0; i < p.m; ++i) {
            for (int64_t j = 0; j < p.n; ++j) {
              uint64_t sum = 0;
              for (int64_t x = 0; x < p.k; ++x) {
                int64_t av = a[q * a_rows * lda + (p.a_transposed ? x * lda + i : i * lda + x)];
                int64_t bv = b[p.b_transposed ? j * ldb + x : x * ldb + j];
                sum += static_cast<uint64_t>(av * bv);
              }
              ASSERT_EQ(c[q * c_stride + i * ldc + j], static_cast<int32_t>(static_cast<uint32_t>(sum)))
                  << p.Text() << " range " << range << " product " << q << " at " << i << ", " << j;
            }
          }
        }
      }
    }
  }
  UseThreads(false);
}

}  // namespace
}  // namespace kiln::kernels
