// Elementwise math for the loops of generated code, written without library calls or branches so
// that the compiler vectorizes the loops that use it (std::erf is a scalar call per element).
#pragma once

namespace kiln::kernels {

// erf(x) as x * P(x^2) / Q(x^2) on [-3.92, 3.92] (a rational least-squares fit, refined toward
// minimax) and +-1 beyond; absolute and relative error at most 3.5e-7 against the exact erf
// when evaluated in float. NaN stays NaN: each clamp keeps its value when a comparison with NaN
// is false.
inline float Erf(float x) {
  x = 3.92f < x ? 3.92f : x;  // ternaries on values, not std::min / std::max: GCC vectorizes these
  x = x < -3.92f ? -3.92f : x;
  float t = x * x;
  float p = 2.0353457e-06f;
  p = p * t + 2.8746415e-04f;
  p = p * t + 3.8666846e-03f;
  p = p * t + 5.3055529e-02f;
  p = p * t + 1.9272287e-01f;
  p = p * t + 1.1283790e+00f;
  float q = 3.8076148e-05f;
  q = q * t + 1.1877562e-03f;
  q = q * t + 1.5169006e-02f;
  q = q * t + 1.1506804e-01f;
  q = q * t + 5.0412786e-01f;
  q = q * t + 1.0f;
  float r = x * p / q;
  r = 1.0f < r ? 1.0f : r;
  return r < -1.0f ? -1.0f : r;
}

}  // namespace kiln::kernels
