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

}  // namespace kiln::runtime

// Global, like DLDataType itself, so that argument-dependent lookup finds them.
inline bool operator==(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
inline bool operator!=(DLDataType a, DLDataType b) { return !(a == b); }
