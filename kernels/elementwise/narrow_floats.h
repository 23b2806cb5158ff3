// Floating-point formats C++ has no type for: bfloat16 and ONNX's four 8-bit formats. Generated
// code stores them as these structs (their bits) and computes in float: each converts from float
// (ONNX's Cast: bfloat16 truncates, float8 rounds to nearest even and saturates unless told not
// to) and to float (exactly). The float8 conversions follow ONNX's reference
// (onnx.helper.float32_to_float8e4m3 / e5m2) bit for bit, including where a value just past the
// largest one lands when not saturating.
#pragma once

#include <cstdint>
#include <cstring>

namespace kiln::kernels {

inline uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}
inline float BitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

struct BFloat16 {
  uint16_t bits;
  BFloat16() = default;
  // The upper half of the float's bits (ONNX's reference truncates); NaN stays a quiet NaN.
  BFloat16(float value) {  // NOLINT(google-explicit-constructor): converts like a built-in type
    uint32_t b = FloatBits(value);
    bits = (b & 0x7FFFFFFFu) > 0x7F800000u ? static_cast<uint16_t>((b >> 16) | 0x0040u) : static_cast<uint16_t>(b >> 16);
  }
  operator float() const { return BitsFloat(uint32_t{bits} << 16); }  // NOLINT(google-explicit-constructor)
};

namespace float8 {

// The reference's rounding of a subnormal float8 from the float's mantissa `m`, after `ret` took
// the kept bits: up when the first dropped bit is set and the kept value is odd or more was dropped.
inline uint32_t RoundSubnormal(uint32_t ret, uint32_t m, uint32_t mask) {
  if ((m & mask) && ((ret & 1) || (m & (mask - 1)) > 0 || ((m & (mask << 1)) && (m & (mask - 1)) == 0))) ret += 1;
  return ret;
}

// A subnormal float8 with `mantissa_bits` from a float of exponent offset `ex` (<= 0) below the
// smallest normal.
inline uint32_t Subnormal(uint32_t ret, uint32_t m, int ex, int mantissa_bits) {
  int shift = 23 - mantissa_bits;  // 20 or 21
  if (ex >= 1 - mantissa_bits) {
    ret |= 1u << (mantissa_bits - 1 + ex);
    ret |= m >> (shift + 1 - ex);
  } else if (m > 0) {
    ret |= 1;
  }
  return RoundSubnormal(ret, m, 1u << (shift - ex));
}

inline bool IsNan(uint32_t b) { return (b & 0x7FFFFFFFu) > 0x7F800000u; }
inline bool IsInfinity(uint32_t b) { return (b & 0x7FFFFFFFu) == 0x7F800000u; }

// e4m3fn: bias 7, no infinities, NaN S.1111.111; largest 0x7E (448).
inline uint8_t FromFloatE4M3FN(float value, bool saturate) {
  uint32_t b = FloatBits(value), ret = (b & 0x80000000u) >> 24;
  if (IsNan(b)) return static_cast<uint8_t>(0x7F | ret);
  if (IsInfinity(b)) return static_cast<uint8_t>((saturate ? 0x7E : 0x7F) | ret);
  uint32_t e = (b & 0x7F800000u) >> 23, m = b & 0x007FFFFFu;
  if (e == 0 || e < 117) return static_cast<uint8_t>(ret);
  if (e < 121) return static_cast<uint8_t>(Subnormal(ret, m, static_cast<int>(e) - 120, 3));
  if (e < 136) {
    ret |= (e - 120) << 3;
    ret |= m >> 20;
    if ((ret & 0x7F) == 0x7F) ret &= 0xFE;  // not NaN: the largest finite value
    if ((m & 0x80000u) && ((m & 0x100000u) || (m & 0x7FFFFu))) {
      if ((ret & 0x7F) < 0x7E) ret += 1;
      else if (!saturate) ret |= 0x7F;
    }
    return static_cast<uint8_t>(ret);
  }
  return static_cast<uint8_t>(ret | (saturate ? 0x7E : 0x7F));
}

// e4m3fnuz: bias 8, no infinities, no negative zero, NaN 0x80; largest 0x7F (240).
inline uint8_t FromFloatE4M3FNUZ(float value, bool saturate) {
  uint32_t b = FloatBits(value), ret = (b & 0x80000000u) >> 24;
  if (IsNan(b)) return 0x80;
  if (IsInfinity(b)) return saturate ? static_cast<uint8_t>(ret | 0x7F) : 0x80;
  uint32_t e = (b & 0x7F800000u) >> 23, m = b & 0x007FFFFFu;
  if (e < 116) return 0;
  if (e < 120) {
    int ex = static_cast<int>(e) - 119;
    if (ex < -2 && m == 0) return 0;
    return static_cast<uint8_t>(Subnormal(ret, m, ex, 3));
  }
  if (e < 135) {
    ret |= (e - 119) << 3;
    ret |= m >> 20;
    if ((m & 0x80000u) && ((m & 0x100000u) || (m & 0x7FFFFu))) {
      if ((ret & 0x7F) < 0x7F) ret += 1;
      else if (!saturate) return 0x80;
    }
    return static_cast<uint8_t>(ret);
  }
  return saturate ? static_cast<uint8_t>(ret | 0x7F) : 0x80;
}

// e5m2: bias 15, infinity S.11111.00, NaN S.11111.11; largest 0x7B (57344).
inline uint8_t FromFloatE5M2(float value, bool saturate) {
  uint32_t b = FloatBits(value), ret = (b & 0x80000000u) >> 24;
  if (IsNan(b)) return static_cast<uint8_t>(0x7F | ret);
  if (IsInfinity(b)) return static_cast<uint8_t>((saturate ? 0x7B : 0x7C) | ret);
  uint32_t e = (b & 0x7F800000u) >> 23, m = b & 0x007FFFFFu;
  if (e == 0 || e < 110) return static_cast<uint8_t>(ret);
  if (e < 113) return static_cast<uint8_t>(Subnormal(ret, m, static_cast<int>(e) - 112, 2));
  if (e < 143) {
    ret |= (e - 112) << 2;
    ret |= m >> 21;
    if ((m & 0x100000u) && ((m & 0xFFFFFu) || (m & 0x200000u))) {
      if ((ret & 0x7F) < 0x7B) ret += 1;
      else ret |= saturate ? 0x7B : 0x7C;
    }
    return static_cast<uint8_t>(ret);
  }
  return static_cast<uint8_t>(ret | (saturate ? 0x7B : 0x7C));
}

// e5m2fnuz: bias 16, no infinities, no negative zero, NaN 0x80; largest 0x7F (57344).
inline uint8_t FromFloatE5M2FNUZ(float value, bool saturate) {
  uint32_t b = FloatBits(value), ret = (b & 0x80000000u) >> 24;
  if (IsNan(b)) return 0x80;
  if (IsInfinity(b)) return saturate ? static_cast<uint8_t>(ret | 0x7F) : 0x80;
  uint32_t e = (b & 0x7F800000u) >> 23, m = b & 0x007FFFFFu;
  if (e < 109) return 0;
  if (e < 112) {
    int ex = static_cast<int>(e) - 111;
    if (ex < -1 && m == 0) return 0;
    return static_cast<uint8_t>(Subnormal(ret, m, ex, 2));
  }
  if (e < 143) {
    ret |= (e - 111) << 2;
    ret |= m >> 21;
    if ((m & 0x100000u) && ((m & 0xFFFFFu) || (m & 0x200000u))) {
      if ((ret & 0x7F) < 0x7F) ret += 1;
      else if (!saturate) return 0x80;
    }
    return static_cast<uint8_t>(ret);
  }
  return saturate ? static_cast<uint8_t>(ret | 0x7F) : 0x80;
}

// The value of a code with `mantissa_bits` and `bias`; `fnuz`: 0x80 is NaN and there are no
// infinities; `has_infinity`: all-ones exponents are infinities (mantissa 0) and NaNs (e5m2);
// otherwise only S.1111.111 is NaN (e4m3fn).
inline float ToFloat(uint8_t code, int mantissa_bits, int bias, bool fnuz, bool has_infinity) {
  if (fnuz && code == 0x80) return BitsFloat(0x7FC00000u);
  uint32_t sign = uint32_t{code & 0x80u} << 24;
  uint32_t exponent = (code & 0x7Fu) >> mantissa_bits, mantissa = code & ((1u << mantissa_bits) - 1);
  uint32_t max_exponent = (1u << (7 - mantissa_bits)) - 1;
  if (has_infinity && exponent == max_exponent) {
    return BitsFloat(sign | (mantissa == 0 ? 0x7F800000u : 0x7FC00000u));
  }
  if (!fnuz && !has_infinity && exponent == max_exponent && mantissa == (1u << mantissa_bits) - 1) {
    return BitsFloat(sign | 0x7FC00000u);
  }
  float magnitude;
  if (exponent == 0) {  // subnormal: mantissa * 2^(1 - bias - mantissa_bits)
    magnitude = static_cast<float>(mantissa) * BitsFloat(static_cast<uint32_t>(127 + 1 - bias - mantissa_bits) << 23);
  } else {
    magnitude = BitsFloat((static_cast<uint32_t>(static_cast<int>(exponent) - bias + 127) << 23) |
                          (mantissa << (23 - mantissa_bits)));
  }
  return BitsFloat(FloatBits(magnitude) | sign);
}

}  // namespace float8

struct Float8E4M3FN {
  uint8_t bits;
  Float8E4M3FN() = default;
  Float8E4M3FN(float value, bool saturate = true) : bits(float8::FromFloatE4M3FN(value, saturate)) {}  // NOLINT
  operator float() const { return float8::ToFloat(bits, 3, 7, false, false); }  // NOLINT
};
struct Float8E4M3FNUZ {
  uint8_t bits;
  Float8E4M3FNUZ() = default;
  Float8E4M3FNUZ(float value, bool saturate = true) : bits(float8::FromFloatE4M3FNUZ(value, saturate)) {}  // NOLINT
  operator float() const { return float8::ToFloat(bits, 3, 8, true, false); }  // NOLINT
};
struct Float8E5M2 {
  uint8_t bits;
  Float8E5M2() = default;
  Float8E5M2(float value, bool saturate = true) : bits(float8::FromFloatE5M2(value, saturate)) {}  // NOLINT
  operator float() const { return float8::ToFloat(bits, 2, 15, false, true); }  // NOLINT
};
struct Float8E5M2FNUZ {
  uint8_t bits;
  Float8E5M2FNUZ() = default;
  Float8E5M2FNUZ(float value, bool saturate = true) : bits(float8::FromFloatE5M2FNUZ(value, saturate)) {}  // NOLINT
  operator float() const { return float8::ToFloat(bits, 2, 16, true, false); }  // NOLINT
};

}  // namespace kiln::kernels
