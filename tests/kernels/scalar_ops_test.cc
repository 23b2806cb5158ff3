// The elementwise ops' one definition (kernels/elementwise/scalar_ops.h): Erf against the C
// library in double over [-6, 6] in steps of 1e-4 and at the special values; the NaN and signed
// zero behaviour of the selections; integer arithmetic that wraps; remainders and shifts at their
// edges; and the same definitions on vectors (simd.h) lane by lane.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/elementwise/scalar_ops.h"
#include "kernels/simd.h"

namespace kiln::kernels {
namespace {

using scalar::Erf;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(Erf, WithinItsStatedErrorOfTheExactFunction) {
  double worst_absolute = 0, worst_relative = 0;
  for (int i = -60000; i <= 60000; ++i) {
    float x = static_cast<float>(i * 1e-4);
    double want = std::erf(static_cast<double>(x));
    double error = std::abs(Erf(x) - want);
    worst_absolute = std::max(worst_absolute, error);
    if (want != 0) worst_relative = std::max(worst_relative, error / std::abs(want));
  }
  EXPECT_LE(worst_absolute, 4e-7);
  EXPECT_LE(worst_relative, 4e-7);
}

TEST(Erf, SpecialValues) {
  EXPECT_EQ(Erf(0.0f), 0.0f);
  EXPECT_EQ(Erf(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_EQ(Erf(-std::numeric_limits<float>::infinity()), -1.0f);
  EXPECT_TRUE(std::isnan(Erf(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(Erf(-2.0f), -Erf(2.0f));
}

// The vector exp (simd.h; the C library's where the target has none) against exp in double over
// [-87, 87.88] in steps of 1e-3, with the integer parts of x / ln 2 at both ends of the range
// reduction; its clamps: 0 far below, finite far above.
TEST(VectorExp, WithinItsStatedErrorOverTheWholeRange) {
  using V = Vec<16>;
  double worst = 0;
  float lanes[16];
  for (int i = 0; i < 174880; i += 16) {
    for (int k = 0; k < 16; ++k) lanes[k] = -87.0f + static_cast<float>(i + k) * 1e-3f;
    float x[16];
    std::copy(lanes, lanes + 16, x);
    V::Exp(V::Load(x)).Store(lanes);
    for (int k = 0; k < 16; ++k) worst = std::max(worst, std::abs(lanes[k] / std::exp(static_cast<double>(x[k])) - 1.0));
  }
  EXPECT_LE(worst, 4e-7);
  float edges[16] = {-1000.0f, -100.0f, -88.5f, -88.0f, 88.0f, 88.5f, 1000.0f, 0.0f,
                     -0.3465f, 0.3465f, 0.3466f, -0.3466f, 1.0f, -1.0f, 10.0f, -10.0f};
  float got[16];
  V::Exp(V::Load(edges)).Store(got);
#if defined(KILN_SIMD_AVX2)  // the clamps of the vector form; libm's exp underflows and overflows
  for (int k = 0; k < 4; ++k) EXPECT_EQ(got[k], 0.0f) << edges[k];
  for (int k = 4; k < 7; ++k) EXPECT_TRUE(std::isfinite(got[k]) && got[k] > 1e38f) << edges[k];
#endif
  for (int k = 7; k < 16; ++k) EXPECT_NEAR(got[k] / std::exp(static_cast<double>(edges[k])), 1.0, 4e-7) << edges[k];
  float nans[16];
  std::fill(nans, nans + 16, kNaN);
  V::Exp(V::Load(nans)).Store(got);  // not clamped to a number: sigmoid(NaN) is NaN, as libm's exp gives
  for (int k = 0; k < 16; ++k) EXPECT_TRUE(std::isnan(got[k])) << k;
}

TEST(ScalarOps, SelectionsFollowStdMaxAndMin) {
  EXPECT_EQ(scalar::Maximum(1.0f, kNaN), 1.0f);  // the first when either is NaN
  EXPECT_TRUE(std::isnan(scalar::Maximum(kNaN, 1.0f)));
  EXPECT_EQ(scalar::Minimum(2.0f, kNaN), 2.0f);
  EXPECT_FALSE(std::signbit(scalar::Maximum(0.0f, -0.0f)));  // equal: the first
  EXPECT_TRUE(std::signbit(scalar::Minimum(-0.0f, 0.0f)));
  EXPECT_EQ(scalar::Relu(kNaN), 0.0f);  // max(0, NaN)
  EXPECT_FALSE(std::signbit(scalar::Relu(-0.0f)));
  EXPECT_TRUE(std::isnan(scalar::Clip(kNaN, -1.0f, 1.0f)));  // min(max(NaN, lo), hi)
  EXPECT_TRUE(std::signbit(scalar::Negative(0.0f)));
}

TEST(ScalarOps, IntegersWrapAndRemaindersKeepTheirSigns) {
  const int32_t min = std::numeric_limits<int32_t>::min(), max = std::numeric_limits<int32_t>::max();
  EXPECT_EQ(scalar::Add(max, int32_t{1}), min);
  EXPECT_EQ(scalar::Multiply(int8_t{100}, int8_t{3}), int8_t{44});  // 300 - 256
  EXPECT_EQ(scalar::Negative(min), min);
  EXPECT_EQ(scalar::Abs(min), min);
  EXPECT_EQ(scalar::TruncMod(-7, 3), -1);
  EXPECT_EQ(scalar::FloorMod(-7, 3), 2);
  EXPECT_EQ(scalar::FloorMod(7, -3), -2);
  EXPECT_EQ(scalar::TruncMod(min, -1), 0);
  EXPECT_EQ(scalar::FloorMod(-7.5f, 2.0f), 0.5f);
  EXPECT_EQ(scalar::LeftShift(uint8_t{1}, uint8_t{8}), 0);  // by the width or more: 0
  EXPECT_EQ(scalar::RightShift(uint32_t{256}, uint32_t{4}), 16u);
  EXPECT_TRUE(scalar::LogicalXor(uint8_t{1}, uint8_t{0}));
}

// The epilogue's ops on a vector of 16 lanes equal the scalar definitions lane by lane.
TEST(ScalarOps, VectorsApplyTheSameDefinitions) {
  float x[16], y[16], out[16];
  const float values[] = {kNaN, 0.0f, -0.0f, 1.0f, -1.0f, 2.5f, -3.75f, 1e30f, -1e-30f, 6.0f, -6.0f, 0.5f, 88.0f,
                          -88.0f, 3.0f, -0.25f};
  for (int i = 0; i < 16; ++i) {
    x[i] = values[i];
    y[i] = values[(i * 5 + 3) % 16];
  }
  using V = Vec<16>;
  V vx = V::Load(x), vy = V::Load(y);
  auto same = [&](V v, auto scalar_op, const char* what) {
    v.Store(out);
    for (int i = 0; i < 16; ++i) {
      float want = scalar_op(x[i], y[i]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(out[i])) << what << " lane " << i;
      } else {
        EXPECT_EQ(out[i], want) << what << " lane " << i;
        EXPECT_EQ(std::signbit(out[i]), std::signbit(want)) << what << " lane " << i;
      }
    }
  };
  same(scalar::Maximum(vx, vy), [](float a, float b) { return scalar::Maximum(a, b); }, "maximum");
  same(scalar::Minimum(vx, vy), [](float a, float b) { return scalar::Minimum(a, b); }, "minimum");
  same(scalar::Relu(vx), [](float a, float) { return scalar::Relu(a); }, "relu");
  same(scalar::Add(vx, vy), [](float a, float b) { return scalar::Add(a, b); }, "add");
  same(scalar::Subtract(vy, vx), [](float a, float b) { return scalar::Subtract(b, a); }, "reverse subtract");
  float lo = -1.0f, hi = 2.0f;
  same(scalar::Clip(vx, V::Broadcast(&lo), V::Broadcast(&hi)), [](float a, float) { return scalar::Clip(a, -1.0f, 2.0f); },
       "clip");
  // Swish: a vector exp where the target has one (about 2e-7 relative), libm's otherwise. GELU:
  // the same rational erf, its products and sums rounded apart on vectors (no contraction).
  for (bool gelu : {false, true}) {
    (gelu ? scalar::GeluOfFloats(vx) : scalar::Swish(vx)).Store(out);
    for (int i = 0; i < 16; ++i) {
      float want = gelu ? scalar::Gelu(x[i]) : scalar::Swish(x[i]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(out[i])) << i;
      } else {
        EXPECT_NEAR(out[i], want, 1e-6f * std::max(1.0f, std::abs(want))) << (gelu ? "gelu" : "swish") << " lane " << i;
      }
    }
  }
}

// GELU (erf form) against the exact definition in double: within 3e-7 of max(1, |x|) (erf's error
// 3.5e-7 times x / 2, 1.8e-7 measured; relative to GELU itself it is larger where GELU is tiny,
// for x below -5, as in the decomposed form exporters write).
TEST(ScalarOps, GeluAgainstTheDefinition) {
  for (float x = -10.0f; x <= 10.0f; x += 1.0f / 64) {
    double want = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    EXPECT_NEAR(scalar::Gelu(x), want, 3e-7 * std::max(1.0, std::abs(double(x)))) << x;
  }
  EXPECT_TRUE(std::isnan(scalar::Gelu(kNaN)));
}

}  // namespace
}  // namespace kiln::kernels
