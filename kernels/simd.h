// Fixed-width float vectors for the micro-kernels of the blocked-layout kernels: Vec<16> and
// Vec<8> hold one channel block of 16 or 8 floats in registers. With AVX-512 they are one zmm /
// ymm register, with AVX2 + FMA two / one ymm registers, and otherwise plain arrays that the
// compiler vectorizes as well as the target allows. Loads and stores are unaligned.
//
// Exp(x) is a vector exp where the target has one (about 2e-7 relative error).
// LoadLanes(p, lo, hi) loads lanes [lo, hi) from p (the others zero, their addresses never read),
// LoadLanes(p, Lanes(lo, hi)) the same with the lane set made once (a mask register) for many loads;
// StoreLanes(p, count) stores the first `count` lanes; EvenLanes(a, b) is a's even lanes then b's
// (a stride-2 row's columns). The vector widths of the target have them (Vec<8> with AVX2,
// Vec<16> with AVX-512, the portable form).
// Vec<16>::LoadHalves(lo, hi, with_hi) is 8 floats from lo then 8 from hi (zeros, hi never read,
// when not with_hi), StoreHalves its reverse: two blocks of 8 channels computed in one vector;
// BroadcastHalves(lo, hi) is *lo in the first 8 lanes and *hi in the others; JoinHalves(a, b) is
// a's first 8 lanes and b's last 8.
// GroupBroadcast<G, C>(x) fills each group of G lanes with the group's lane C (G = 2 or 4). Pin() keeps a loaded value in registers: compilers otherwise tend to fold a weight
// vector into every FMA as a memory operand, which makes narrow tiles load-bound. The NaN behaviour follows the generated elementwise code: Max(a, b) and Min(a, b) return `b`
// when either is NaN, so Max(x, 0) is relu's `x > 0 ? x : 0` and Max(lo, x) is
// std::max(x, lo).
#pragma once

#include <cmath>

#include "kernels/elementwise/scalar_ops.h"
#include "kernels/kernel_config.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define KILN_SIMD_AVX2 1
#endif
#if defined(__AVX512F__)
#define KILN_SIMD_AVX512 1
#endif

// Helpers that take a micro-kernel's accumulators by reference must be inlined, or the
// accumulators leave the registers.
#define KILN_ALWAYS_INLINE inline __attribute__((always_inline))

namespace kiln::kernels {

template <int N>
struct Vec;

#if defined(KILN_SIMD_AVX2)
// exp(x) for 8 floats, relative error about 2e-7: x = n ln 2 + t with n = round(x / ln 2) (made
// by adding x / ln 2 to 1.5 * 2^23 + 127, whose last bits are then n + 127: shifted into the
// exponent field they are 2^n) and |t| <= ln 2 / 2 (ln 2 in two parts); e^t = 1 + t + t^2 p(t)
// with p of degree 3 fitted to e^t over that range. x is clamped to [-88, 88]: below about -87.7
// the result is 0, and no result overflows; NaN stays NaN (as libm's: sigmoid's NaN is NaN).
inline __m256 Exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_set1_ps(88.0f), _mm256_max_ps(_mm256_set1_ps(-88.0f), x));  // NaN: x (the second)
  const __m256 magic = _mm256_set1_ps(12583039.0f);  // 1.5 * 2^23 + 127
  __m256 n = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), magic);
  __m256 scale = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(n), 23));
  n = _mm256_sub_ps(n, magic);
  __m256 t = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  t = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), t);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(8.333837613463402e-3f), t, _mm256_set1_ps(4.189857840538025e-2f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.666688621044159e-1f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(4.9999141693115234e-1f));
  p = _mm256_fmadd_ps(_mm256_mul_ps(t, t), p, t);  // e^t - 1
  return _mm256_fmadd_ps(p, scale, scale);
}

// The vpermilps immediate that fills each group of G lanes (G = 2 or 4, within each 128-bit
// lane) with the group's lane C.
template <int G, int C>
constexpr int GroupPermute() {
  static_assert((G == 2 || G == 4) && C >= 0 && C < G, "groups of 2 or 4 lanes");
  return G == 4 ? C * 0x55 : (C | C << 2 | (C + 2) << 4 | (C + 2) << 6);
}

// Lane l of the result is lane (l / G) * G + C of v: each group of G lanes filled with its lane C
// (one vpermilps).
template <int G, int C>
inline __m256 GroupBroadcast8(__m256 v) {
  constexpr int kPermute = GroupPermute<G, C>();  // a name: the intrinsic may be a macro (-O0)
  return _mm256_permute_ps(v, kPermute);
}

// Rows [0, rows) (rows <= 8; the rest read as zeros) of the 8 x 8 floats at `in` (rows `in_stride`
// apart) transposed: column c's 8 values stored at out + c * out_stride, for c = 0 to 7 in order
// (so with out_stride < 8 each store overwrites the one before past out_stride).
KILN_ALWAYS_INLINE void Transpose8x8(const float* in, int64_t in_stride, int64_t rows, float* out, int64_t out_stride) {
  __m256 v[8];
  for (int j = 0; j < 8; ++j) v[j] = j < rows ? _mm256_loadu_ps(in + j * in_stride) : _mm256_setzero_ps();
  __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
  __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
  __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]), t5 = _mm256_unpackhi_ps(v[4], v[5]);
  __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]), t7 = _mm256_unpackhi_ps(v[6], v[7]);
  __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee);
  __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee);
  __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee);
  __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);
  // Column c: rows 0-3 from s[c % 4] (low or high half), rows 4-7 from s[4 + c % 4].
  const __m256 columns[8] = {
      _mm256_permute2f128_ps(s0, s4, 0x20), _mm256_permute2f128_ps(s1, s5, 0x20),
      _mm256_permute2f128_ps(s2, s6, 0x20), _mm256_permute2f128_ps(s3, s7, 0x20),
      _mm256_permute2f128_ps(s0, s4, 0x31), _mm256_permute2f128_ps(s1, s5, 0x31),
      _mm256_permute2f128_ps(s2, s6, 0x31), _mm256_permute2f128_ps(s3, s7, 0x31)};
  for (int c = 0; c < 8; ++c) _mm256_storeu_ps(out + c * out_stride, columns[c]);
}

template <>
struct Vec<8> {
  __m256 v;
  static Vec Zero() { return {_mm256_setzero_ps()}; }
  static Vec Load(const float* p) { return {_mm256_loadu_ps(p)}; }
  static Vec Broadcast(const float* p) { return {_mm256_broadcast_ss(p)}; }
  void Store(float* p) const { _mm256_storeu_ps(p, v); }
  static Vec Fma(Vec a, Vec b, Vec c) { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }  // a * b + c
  static Vec Add(Vec a, Vec b) { return {_mm256_add_ps(a.v, b.v)}; }
  static Vec Sub(Vec a, Vec b) { return {_mm256_sub_ps(a.v, b.v)}; }
  static Vec Mul(Vec a, Vec b) { return {_mm256_mul_ps(a.v, b.v)}; }
  static Vec Div(Vec a, Vec b) { return {_mm256_div_ps(a.v, b.v)}; }
  static Vec Max(Vec a, Vec b) { return {_mm256_max_ps(a.v, b.v)}; }
  static Vec Min(Vec a, Vec b) { return {_mm256_min_ps(a.v, b.v)}; }
  static Vec Exp(Vec a) { return {Exp8(a.v)}; }
  template <int G, int C>
  static Vec GroupBroadcast(Vec a) { return {GroupBroadcast8<G, C>(a.v)}; }
  static __m256i LaneMask(int lo, int hi) {  // lanes [lo, hi) all ones
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_and_si256(_mm256_cmpgt_epi32(lane, _mm256_set1_epi32(lo - 1)),
                            _mm256_cmpgt_epi32(_mm256_set1_epi32(hi), lane));
  }
  using LaneSet = __m256i;
  static LaneSet Lanes(int lo, int hi) { return LaneMask(lo, hi); }
  static Vec LoadLanes(const float* p, LaneSet lanes) { return {_mm256_maskload_ps(p, lanes)}; }
  static Vec LoadLanes(const float* p, int lo, int hi) { return LoadLanes(p, LaneMask(lo, hi)); }
  void StoreLanes(float* p, int count) const { _mm256_maskstore_ps(p, LaneMask(0, count), v); }
  static Vec EvenLanes(Vec a, Vec b) {  // [a0 a2 b0 b2 | a4 a6 b4 b6], 64-bit pairs reordered
    __m256 pairs = _mm256_shuffle_ps(a.v, b.v, _MM_SHUFFLE(2, 0, 2, 0));
    return {_mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(pairs), _MM_SHUFFLE(3, 1, 2, 0)))};
  }
  void Pin() { asm("" : "+x"(v)); }
};
#endif

#if defined(KILN_SIMD_AVX512)
// Exp8's steps on 16 floats (the same operations lane by lane, so the same results).
inline __m512 Exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(88.0f), _mm512_max_ps(_mm512_set1_ps(-88.0f), x));  // NaN: x (the second)
  const __m512 magic = _mm512_set1_ps(12583039.0f);  // 1.5 * 2^23 + 127
  __m512 n = _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), magic);
  __m512 scale = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_castps_si512(n), 23));
  n = _mm512_sub_ps(n, magic);
  __m512 t = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  t = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), t);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(8.333837613463402e-3f), t, _mm512_set1_ps(4.189857840538025e-2f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.666688621044159e-1f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(4.9999141693115234e-1f));
  p = _mm512_fmadd_ps(_mm512_mul_ps(t, t), p, t);  // e^t - 1
  return _mm512_fmadd_ps(p, scale, scale);
}

template <>
struct Vec<16> {
  __m512 v;
  static Vec Zero() { return {_mm512_setzero_ps()}; }
  static Vec Load(const float* p) { return {_mm512_loadu_ps(p)}; }
  static Vec Broadcast(const float* p) { return {_mm512_set1_ps(*p)}; }
  void Store(float* p) const { _mm512_storeu_ps(p, v); }
  static Vec Fma(Vec a, Vec b, Vec c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
  static Vec Add(Vec a, Vec b) { return {_mm512_add_ps(a.v, b.v)}; }
  static Vec Sub(Vec a, Vec b) { return {_mm512_sub_ps(a.v, b.v)}; }
  static Vec Mul(Vec a, Vec b) { return {_mm512_mul_ps(a.v, b.v)}; }
  static Vec Div(Vec a, Vec b) { return {_mm512_div_ps(a.v, b.v)}; }
  static Vec Max(Vec a, Vec b) { return {_mm512_max_ps(a.v, b.v)}; }
  static Vec Min(Vec a, Vec b) { return {_mm512_min_ps(a.v, b.v)}; }
  static Vec Exp(Vec a) { return {Exp16(a.v)}; }
  template <int G, int C>
  static Vec GroupBroadcast(Vec a) {
    constexpr int kPermute = GroupPermute<G, C>();
    return {_mm512_permute_ps(a.v, kPermute)};
  }
  static __mmask16 LaneMask(int lo, int hi) {  // lanes [lo, hi)
    return static_cast<__mmask16>(((1u << hi) - 1) & ~((1u << lo) - 1));
  }
  using LaneSet = __mmask16;
  static LaneSet Lanes(int lo, int hi) { return LaneMask(lo, hi); }
  static Vec LoadLanes(const float* p, LaneSet lanes) { return {_mm512_maskz_loadu_ps(lanes, p)}; }
  static Vec LoadLanes(const float* p, int lo, int hi) { return LoadLanes(p, LaneMask(lo, hi)); }
  void StoreLanes(float* p, int count) const { _mm512_mask_storeu_ps(p, LaneMask(0, count), v); }
  static Vec LoadHalves(const float* lo, const float* hi, bool with_hi) {
    __m256 upper = with_hi ? _mm256_loadu_ps(hi) : _mm256_setzero_ps();  // AVX512F alone: no masked ymm load
    return {_mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(_mm256_loadu_ps(lo))),
                                                _mm256_castps_pd(upper), 1))};
  }
  static Vec BroadcastHalves(const float* lo, const float* hi) {
    return {_mm512_mask_broadcastss_ps(_mm512_set1_ps(*lo), 0xff00, _mm_load_ss(hi))};
  }
  static Vec JoinHalves(Vec a, Vec b) { return {_mm512_mask_blend_ps(0xff00, a.v, b.v)}; }
  void StoreHalves(float* lo, float* hi, bool with_hi) const {
    _mm256_storeu_ps(lo, _mm512_castps512_ps256(v));
    if (with_hi) _mm256_storeu_ps(hi, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  }
  static Vec EvenLanes(Vec a, Vec b) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return {_mm512_permutex2var_ps(a.v, even, b.v)};
  }
  void Pin() { asm("" : "+v"(v)); }
};
#elif defined(KILN_SIMD_AVX2)
template <>
struct Vec<16> {
  __m256 lo, hi;
  static Vec Zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static Vec Load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  static Vec Broadcast(const float* p) {
    __m256 b = _mm256_broadcast_ss(p);
    return {b, b};
  }
  void Store(float* p) const {
    _mm256_storeu_ps(p, lo);
    _mm256_storeu_ps(p + 8, hi);
  }
  static Vec Fma(Vec a, Vec b, Vec c) { return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)}; }
  static Vec Add(Vec a, Vec b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
  static Vec Sub(Vec a, Vec b) { return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)}; }
  static Vec Mul(Vec a, Vec b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
  static Vec Div(Vec a, Vec b) { return {_mm256_div_ps(a.lo, b.lo), _mm256_div_ps(a.hi, b.hi)}; }
  static Vec Max(Vec a, Vec b) { return {_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)}; }
  static Vec Min(Vec a, Vec b) { return {_mm256_min_ps(a.lo, b.lo), _mm256_min_ps(a.hi, b.hi)}; }
  static Vec Exp(Vec a) { return {Exp8(a.lo), Exp8(a.hi)}; }
  template <int G, int C>
  static Vec GroupBroadcast(Vec a) { return {GroupBroadcast8<G, C>(a.lo), GroupBroadcast8<G, C>(a.hi)}; }
  static Vec LoadHalves(const float* lo, const float* hi, bool with_hi) {
    return {_mm256_loadu_ps(lo), with_hi ? _mm256_loadu_ps(hi) : _mm256_setzero_ps()};
  }
  static Vec BroadcastHalves(const float* lo, const float* hi) {
    return {_mm256_broadcast_ss(lo), _mm256_broadcast_ss(hi)};
  }
  static Vec JoinHalves(Vec a, Vec b) { return {a.lo, b.hi}; }
  void StoreHalves(float* lo_out, float* hi_out, bool with_hi) const {
    _mm256_storeu_ps(lo_out, lo);
    if (with_hi) _mm256_storeu_ps(hi_out, hi);
  }
  void Pin() { asm("" : "+x"(lo), "+x"(hi)); }
};
#endif

// The portable form, for the widths the target has no registers for.
template <int N>
struct Vec {
  float v[N];
  static Vec Zero() {
    Vec r;
    for (int i = 0; i < N; ++i) r.v[i] = 0.0f;
    return r;
  }
  static Vec Load(const float* p) {
    Vec r;
    for (int i = 0; i < N; ++i) r.v[i] = p[i];
    return r;
  }
  static Vec Broadcast(const float* p) {
    Vec r;
    for (int i = 0; i < N; ++i) r.v[i] = *p;
    return r;
  }
  void Store(float* p) const {
    for (int i = 0; i < N; ++i) p[i] = v[i];
  }
  static Vec Fma(Vec a, Vec b, Vec c) {
    for (int i = 0; i < N; ++i) c.v[i] += a.v[i] * b.v[i];
    return c;
  }
  static Vec Add(Vec a, Vec b) {
    for (int i = 0; i < N; ++i) a.v[i] += b.v[i];
    return a;
  }
  static Vec Sub(Vec a, Vec b) {
    for (int i = 0; i < N; ++i) a.v[i] -= b.v[i];
    return a;
  }
  static Vec Mul(Vec a, Vec b) {
    for (int i = 0; i < N; ++i) a.v[i] *= b.v[i];
    return a;
  }
  static Vec Div(Vec a, Vec b) {
    for (int i = 0; i < N; ++i) a.v[i] /= b.v[i];
    return a;
  }
  static Vec Max(Vec a, Vec b) {  // b when either is NaN, as the intrinsics
    for (int i = 0; i < N; ++i) a.v[i] = a.v[i] > b.v[i] ? a.v[i] : b.v[i];
    return a;
  }
  static Vec Min(Vec a, Vec b) {
    for (int i = 0; i < N; ++i) a.v[i] = a.v[i] < b.v[i] ? a.v[i] : b.v[i];
    return a;
  }
  static Vec Exp(Vec a) {
    for (int i = 0; i < N; ++i) a.v[i] = std::exp(a.v[i]);
    return a;
  }
  template <int G, int C>
  static Vec GroupBroadcast(Vec a) {
    Vec r;
    for (int i = 0; i < N; ++i) r.v[i] = a.v[i / G * G + C];
    return r;
  }
  struct LaneSet {
    int lo, hi;
  };
  static LaneSet Lanes(int lo, int hi) { return {lo, hi}; }
  static Vec LoadLanes(const float* p, LaneSet lanes) { return LoadLanes(p, lanes.lo, lanes.hi); }
  static Vec LoadLanes(const float* p, int lo, int hi) {
    Vec r;
    for (int i = 0; i < N; ++i) r.v[i] = i >= lo && i < hi ? p[i] : 0.0f;
    return r;
  }
  void StoreLanes(float* p, int count) const {
    for (int i = 0; i < count; ++i) p[i] = v[i];
  }
  static Vec LoadHalves(const float* lo, const float* hi, bool with_hi) {
    Vec r;
    for (int i = 0; i < N / 2; ++i) {
      r.v[i] = lo[i];
      r.v[N / 2 + i] = with_hi ? hi[i] : 0.0f;
    }
    return r;
  }
  static Vec BroadcastHalves(const float* lo, const float* hi) {
    Vec r;
    for (int i = 0; i < N; ++i) r.v[i] = i < N / 2 ? *lo : *hi;
    return r;
  }
  static Vec JoinHalves(Vec a, Vec b) {
    for (int i = N / 2; i < N; ++i) a.v[i] = b.v[i];
    return a;
  }
  void StoreHalves(float* lo, float* hi, bool with_hi) const {
    for (int i = 0; i < N / 2; ++i) lo[i] = v[i];
    for (int i = 0; with_hi && i < N / 2; ++i) hi[i] = v[N / 2 + i];
  }
  static Vec EvenLanes(Vec a, Vec b) {
    Vec r;
    for (int i = 0; i < N / 2; ++i) {
      r.v[i] = a.v[2 * i];
      r.v[N / 2 + i] = b.v[2 * i];
    }
    return r;
  }
  void Pin() {}
};

// The operators and primitives the elementwise ops (elementwise/scalar_ops.h) are written in, so
// that a fused epilogue applies the very same definitions to a register of floats. Maximum and
// Minimum are std::max and std::min lane by lane (the first argument when either is NaN).
template <int N>
Vec<N> operator+(Vec<N> a, Vec<N> b) {
  return Vec<N>::Add(a, b);
}
template <int N>
Vec<N> operator-(Vec<N> a, Vec<N> b) {
  return Vec<N>::Sub(a, b);
}
template <int N>
Vec<N> operator*(Vec<N> a, Vec<N> b) {
  return Vec<N>::Mul(a, b);
}
template <int N>
Vec<N> operator/(Vec<N> a, Vec<N> b) {
  return Vec<N>::Div(a, b);
}
template <int N>
Vec<N> operator-(Vec<N> a) {  // -1 * a: -0 for +0, as negation
  float minus_one = -1.0f;
  return Vec<N>::Mul(Vec<N>::Broadcast(&minus_one), a);
}
template <int N>
Vec<N> Maximum(Vec<N> a, Vec<N> b) {
  return Vec<N>::Max(b, a);
}
template <int N>
Vec<N> Minimum(Vec<N> a, Vec<N> b) {
  return Vec<N>::Min(b, a);
}
template <int N>
Vec<N> Exp(Vec<N> x) {
  return Vec<N>::Exp(x);
}

namespace scalar {
// Calls qualified as scalar::Maximum(...) see the vector forms too (calls inside the scalar
// templates find them by argument-dependent lookup).
using kernels::Exp;
using kernels::Maximum;
using kernels::Minimum;

template <int N>
struct Splat<Vec<N>> {
  static Vec<N> Of(double c) {
    float value = static_cast<float>(c);
    return Vec<N>::Broadcast(&value);
  }
};
}  // namespace scalar

// Output positions a micro-kernel keeps in registers per channel block (kernel_config.h).
template <int N>
constexpr int kTileWidth = N == 16 ? kCompiledConfig.conv_tile_16 : kCompiledConfig.conv_tile_8;

}  // namespace kiln::kernels
