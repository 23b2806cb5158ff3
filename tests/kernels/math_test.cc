// kernels/elementwise/math.h against the C library in double: Erf over [-6, 6] in steps of 1e-4 and at the
// special values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/elementwise/math.h"

namespace kiln::kernels {
namespace {

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

}  // namespace
}  // namespace kiln::kernels
