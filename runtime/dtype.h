// Data types: parsing and printing TVM's dtype strings ("float32", "int8", "uint1", "bool",
// "bfloat16", "float32x4", "handle") and the byte sizes derived from them.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::runtime {

// Throws Error naming the string when it is not a dtype.
DLDataType ParseDType(std::string_view text);
std::string DTypeToString(DLDataType dtype);

// Bytes of one element including its lanes: ceil(bits * lanes / 8).
inline int64_t DTypeBytes(DLDataType dtype) { return (int64_t{dtype.bits} * dtype.lanes + 7) / 8; }

constexpr DLDataType kFloat32{kDLFloat, 32, 1};

// The 8-bit floating-point formats of ONNX (opset 19), with DLPack 1.1's type codes (this DLPack
// header predates them) and ml_dtypes' names: "float8_e4m3fn" (no infinities), "float8_e4m3fnuz"
// and "float8_e5m2fnuz" (neither infinities nor a negative zero; one NaN) and "float8_e5m2"
// (IEEE-like).
enum Float8Code : uint8_t {
  kDLFloat8E4M3FN = 10,
  kDLFloat8E4M3FNUZ = 11,
  kDLFloat8E5M2 = 12,
  kDLFloat8E5M2FNUZ = 13,
};
inline bool IsFloat8(DLDataType dtype) {
  return dtype.code >= kDLFloat8E4M3FN && dtype.code <= kDLFloat8E5M2FNUZ && dtype.bits == 8;
}

}  // namespace kiln::runtime

// Global, like DLDataType itself, so that argument-dependent lookup finds them.
inline bool operator==(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
inline bool operator!=(DLDataType a, DLDataType b) { return !(a == b); }
