// Helpers of the ops' reference evaluators (OpDef::evaluate): the C type of a dtype, conversions
// that never hit undefined behaviour, strided gathers and numpy broadcasting of constant tensors.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "ir/type.h"
#include "runtime/error.h"
#include "runtime/ndarray.h"

namespace kiln::ir {

// Whether evaluators take values of this dtype: bool, int8-64, uint8-32, float32 and float64.
bool IsEvaluableDType(DLDataType dtype);

// Calls f(T{}) with the C type of an evaluable dtype; bool is uint8_t holding 0 or 1.
template <typename F>
decltype(auto) WithCType(DLDataType dtype, F&& f) {
  if (dtype.code == kDLFloat && dtype.bits == 32) return f(float{});
  if (dtype.code == kDLFloat && dtype.bits == 64) return f(double{});
  if (dtype.code == kDLInt && dtype.bits == 8) return f(int8_t{});
  if (dtype.code == kDLInt && dtype.bits == 16) return f(int16_t{});
  if (dtype.code == kDLInt && dtype.bits == 32) return f(int32_t{});
  if (dtype.code == kDLInt && dtype.bits == 64) return f(int64_t{});
  if (dtype.code == kDLUInt && dtype.bits == 16) return f(uint16_t{});
  if (dtype.code == kDLUInt && dtype.bits == 32) return f(uint32_t{});
  runtime::CheckInternal((dtype.code == kDLUInt && (dtype.bits == 8 || dtype.bits == 1)),
                         "WithCType: dtype ", runtime::DTypeToString(dtype), " is not evaluable");
  return f(uint8_t{});
}

// `value` as a T: integers wrap modulo 2^bits, floats convert (beyond float's range: infinity);
// std::nullopt for a NaN, infinite or out-of-range float converted to an integer type.
template <typename T, typename From>
std::optional<T> ConvertValue(From value) {
  if constexpr (std::is_floating_point_v<T>) {
    if constexpr (std::is_floating_point_v<From>) {
      if (std::isfinite(value) && std::fabs(value) > std::numeric_limits<T>::max()) {
        return value > 0 ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity();
      }
    }
    return static_cast<T>(value);
  } else if constexpr (std::is_floating_point_v<From>) {
    // The float range that truncates into T: (min - 1, max + 1).
    double v = static_cast<double>(value);
    if (!(v > static_cast<double>(std::numeric_limits<T>::min()) - 1.0 &&
          v < static_cast<double>(std::numeric_limits<T>::max()) + 1.0)) {
      return std::nullopt;
    }
    return static_cast<T>(v);
  } else {
    return static_cast<T>(static_cast<uint64_t>(value));
  }
}

template <typename T>
const T* DataOf(const runtime::NDArray& a) {
  return static_cast<const T*>(a.data());
}
template <typename T>
T* DataOf(runtime::NDArray& a) {
  return static_cast<T*>(a.data());
}

// A tensor of `out_shape` whose element (i0, i1, ...) is src's element base + sum(i_d * strides[d]).
runtime::NDArray GatherStrided(const runtime::NDArray& src, const std::vector<int64_t>& out_shape,
                               const std::vector<int64_t>& strides, int64_t base);
// `src` broadcast to `out_shape` by numpy rules (src itself when the shapes are equal).
runtime::NDArray BroadcastArray(const runtime::NDArray& src, const std::vector<int64_t>& out_shape);

}  // namespace kiln::ir
