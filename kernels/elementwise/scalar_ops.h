// One definition of each elementwise op on one element. The constant evaluator
// (ir/ops/elementwise.cc), the loops of generated code (backend/codegen/lowerings.cc writes calls
// of these), the ccompiler external codegen and the blocked convolution's fused epilogue (on
// vectors: simd.h gives Vec the operators and the few primitives these are written in) all call
// them, so an op means the same wherever it is computed.
//
// Integer arithmetic wraps modulo 2^bits (computed on uint64_t, so never undefined). Division and
// remainder by zero, the minimum of a signed type divided by -1, and integer conversions of
// out-of-range floats are undefined: callers that must not fault (constant folding) check those
// cases first. Maximum and Minimum are std::max and std::min (the first argument when either is
// NaN). Everything is written without library calls where one would stop a loop from being
// vectorized.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace kiln::kernels::scalar {

// The value `c` in T's form (Vec: every lane; see simd.h).
template <typename T>
struct Splat {
  static T Of(double c) { return static_cast<T>(c); }
};
template <typename T>
T Constant(double c) {
  return Splat<T>::Of(c);
}

template <typename T>
constexpr bool kWraps = std::is_integral_v<T> && !std::is_same_v<T, bool>;

template <typename T>
T Add(T a, T b) {
  if constexpr (kWraps<T>) return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else return a + b;
}
template <typename T>
T Subtract(T a, T b) {
  if constexpr (kWraps<T>) return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  else return a - b;
}
template <typename T>
T Multiply(T a, T b) {
  if constexpr (kWraps<T>) return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else return a * b;
}
template <typename T>
T Divide(T a, T b) {  // integers truncate toward zero
  return static_cast<T>(a / b);
}
template <typename T>
T Negative(T x) {
  if constexpr (kWraps<T>) return Subtract(T(0), x);
  else return -x;
}
template <typename T>
T Maximum(T a, T b) {
  return a < b ? b : a;
}
template <typename T>
T Minimum(T a, T b) {
  return b < a ? b : a;
}
template <typename T>
T Power(T a, T b) {
  return static_cast<T>(std::pow(a, b));
}
// The remainder of a / b with the sign of a (C's % and std::fmod).
template <typename T>
T TruncMod(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::fmod(a, b);
  } else {
    if constexpr (std::is_signed_v<T>) {
      if (b == T(-1)) return T(0);  // the minimum divided by -1 overflows in %
    }
    return static_cast<T>(a % b);
  }
}
// ... with the sign of b (Python's %).
template <typename T>
T FloorMod(T a, T b) {
  T r = TruncMod(a, b);
  return r != 0 && ((r < 0) != (b < 0)) ? static_cast<T>(r + b) : r;
}
// A shift by the type's width or more gives 0 (in C++ it is undefined).
template <typename T>
T LeftShift(T a, T b) {
  return b >= sizeof(T) * 8 ? T(0) : static_cast<T>(a << b);
}
template <typename T>
T RightShift(T a, T b) {
  return b >= sizeof(T) * 8 ? T(0) : static_cast<T>(a >> b);
}
template <typename T>
T BitwiseAnd(T a, T b) {
  return static_cast<T>(a & b);
}
template <typename T>
T BitwiseOr(T a, T b) {
  return static_cast<T>(a | b);
}
template <typename T>
T BitwiseXor(T a, T b) {
  return static_cast<T>(a ^ b);
}
template <typename T>
T BitwiseNot(T x) {
  return static_cast<T>(~x);
}

template <typename T>
bool Equal(T a, T b) {
  return a == b;
}
template <typename T>
bool Less(T a, T b) {
  return a < b;
}
template <typename T>
bool Greater(T a, T b) {
  return a > b;
}
template <typename T>
bool LessEqual(T a, T b) {
  return a <= b;
}
template <typename T>
bool GreaterEqual(T a, T b) {
  return a >= b;
}
// Bools are bytes 0 and 1.
template <typename A, typename B>
bool LogicalAnd(A a, B b) {
  return a != 0 && b != 0;
}
template <typename A, typename B>
bool LogicalOr(A a, B b) {
  return a != 0 || b != 0;
}
template <typename A, typename B>
bool LogicalXor(A a, B b) {
  return (a != 0) != (b != 0);
}
template <typename A>
bool LogicalNot(A a) {
  return a == 0;
}
// where(cond, a, b)
template <typename C, typename T>
T Select(C condition, T a, T b) {
  return condition ? a : b;
}

// max(0, x): 0 for NaN.
template <typename T>
T Relu(T x) {
  return Maximum(Constant<T>(0), x);
}
template <typename T>
T Abs(T x) {
  if constexpr (kWraps<T>) return x < 0 ? Negative(x) : x;
  else return std::fabs(x);
}
template <typename T>
T Clip(T x, T lo, T hi) {
  return Minimum(Maximum(x, lo), hi);
}

// Floating point. Exp is the primitive simd.h gives vectors.
template <typename T>
T Exp(T x) {
  return std::exp(x);
}
template <typename T>
T Sigmoid(T x) {
  return Constant<T>(1) / (Constant<T>(1) + Exp(Negative(x)));
}
// x * sigmoid(x) (SiLU; the convolution epilogue's swish), as x / (1 + e^-x): one rounding
// fewer, and one vector operation of about twenty fewer (EfficientNet-B0's swish, 6.4 M values,
// was 18% of its time on one AVX-512 core).
template <typename T>
T Swish(T x) {
  return x / (Constant<T>(1) + Exp(Negative(x)));
}
template <typename T>
T Tanh(T x) {
  return std::tanh(x);
}
template <typename T>
T Log(T x) {
  return std::log(x);
}
template <typename T>
T Sqrt(T x) {
  return std::sqrt(x);
}
template <typename T>
T Rsqrt(T x) {
  return T(1) / std::sqrt(x);
}
template <typename T>
T Floor(T x) {
  return std::floor(x);
}
template <typename T>
T Ceil(T x) {
  return std::ceil(x);
}
template <typename T>
T Round(T x) {  // halves to even
  return std::nearbyint(x);
}
template <typename T>
T Sin(T x) {
  return std::sin(x);
}
template <typename T>
T Cos(T x) {
  return std::cos(x);
}
template <typename T>
T Tan(T x) {
  return std::tan(x);
}
template <typename T>
T Asin(T x) {
  return std::asin(x);
}
template <typename T>
T Acos(T x) {
  return std::acos(x);
}
template <typename T>
T Atan(T x) {
  return std::atan(x);
}
template <typename T>
T Sinh(T x) {
  return std::sinh(x);
}
template <typename T>
T Cosh(T x) {
  return std::cosh(x);
}
template <typename T>
T Asinh(T x) {
  return std::asinh(x);
}
template <typename T>
T Acosh(T x) {
  return std::acosh(x);
}
template <typename T>
T Atanh(T x) {
  return std::atanh(x);
}

// erf(x) in float as x * P(x^2) / Q(x^2) on [-3.92, 3.92] (a rational least-squares fit, refined
// toward minimax) and +-1 beyond; absolute and relative error at most 3.5e-7 against the exact
// erf. NaN stays NaN: each clamp keeps its value when a comparison with NaN is false. For float and
// vectors of floats (simd.h: the dense layer's GELU epilogue); it vectorizes, std::erf does not.
template <typename T>
T ErfOfFloats(T x) {
  x = Minimum(x, Constant<T>(3.92f));  // (3.92 < x ? 3.92 : x): ternaries, which GCC vectorizes
  x = Maximum(x, Constant<T>(-3.92f));
  T t = x * x;
  T p = Constant<T>(2.0353457e-06f);
  p = p * t + Constant<T>(2.8746415e-04f);
  p = p * t + Constant<T>(3.8666846e-03f);
  p = p * t + Constant<T>(5.3055529e-02f);
  p = p * t + Constant<T>(1.9272287e-01f);
  p = p * t + Constant<T>(1.1283790e+00f);
  T q = Constant<T>(3.8076148e-05f);
  q = q * t + Constant<T>(1.1877562e-03f);
  q = q * t + Constant<T>(1.5169006e-02f);
  q = q * t + Constant<T>(1.1506804e-01f);
  q = q * t + Constant<T>(5.0412786e-01f);
  q = q * t + Constant<T>(1.0f);
  T r = x * p / q;
  r = Minimum(r, Constant<T>(1.0f));
  return Maximum(r, Constant<T>(-1.0f));
}
inline float Erf(float x) { return ErfOfFloats(x); }
template <typename T>
T Erf(T x) {
  return std::erf(x);
}

// GELU, erf form: x * (1 + erf(x / sqrt 2)) / 2 (x / sqrt 2 as x times its reciprocal). Float and
// vectors of floats through ErfOfFloats; other types std::erf.
template <typename T>
T GeluOfFloats(T x) {
  return Constant<T>(0.5f) * x * (Constant<T>(1.0f) + ErfOfFloats(x * Constant<T>(0.70710678118654752)));
}
inline float Gelu(float x) { return GeluOfFloats(x); }
template <typename T>
T Gelu(T x) {
  return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752)));
}

template <typename T>
T LeakyRelu(T x, T alpha) {
  return x > 0 ? x : x * alpha;
}
// log(1 + e^x), without overflow for large x.
template <typename T>
T Softplus(T x) {
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}
template <typename T>
T Softsign(T x) {
  return x / (T(1) + std::fabs(x));
}
template <typename T>
T HardSwish(T x) {
  return x * Minimum(Constant<T>(1), Maximum(Constant<T>(0), x / Constant<T>(6) + Constant<T>(0.5)));
}
template <typename T>
T Elu(T x, T alpha) {
  return x > 0 ? x : alpha * std::expm1(x);
}
template <typename T>
T Selu(T x, T alpha, T gamma) {
  return gamma * (x > 0 ? x : alpha * std::expm1(x));
}
template <typename T>
T Celu(T x, T alpha) {
  return Maximum(T(0), x) + Minimum(T(0), alpha * std::expm1(x / alpha));
}
template <typename T>
T ThresholdedRelu(T x, T alpha) {
  return x > alpha ? x : T(0);
}
// Inference batch norm of one element: (x - mean) / sqrt(var + epsilon) * gamma + beta.
template <typename T>
T BatchNorm(T x, T gamma, T beta, T mean, T var, T epsilon) {
  return (x - mean) / std::sqrt(var + epsilon) * gamma + beta;
}

// ONNX's windows (HannWindow, HammingWindow, BlackmanWindow) at point n, N1 the size when periodic,
// else the size - 1, in double: the importer fills a window of constant size with them, generated
// code one whose size is given at run time.
constexpr double kPi = 3.141592653589793;  // M_PI is POSIX's, not C++'s
inline double HannWindow(double n, double n1) { return std::pow(std::sin(n * kPi / n1), 2); }
inline double HammingWindow(double n, double n1) { return 25.0 / 46.0 - std::cos(n * kPi * 2 / n1) * (21.0 / 46.0); }
inline double BlackmanWindow(double n, double n1) {
  return std::cos(n * kPi * 2 / n1) * -0.5 + 0.42 + std::cos(n * kPi * 4 / n1) * 0.08;
}

}  // namespace kiln::kernels::scalar
