// float32 arrays from vectors and back, for the tests of every layer.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/ndarray.h"

namespace kiln::test {

inline runtime::NDArray FloatArray(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  runtime::NDArray array = runtime::NDArray::Empty(shape, runtime::kFloat32);
  array.CopyFromBytes(values.data(), values.size() * sizeof(float));
  return array;
}

inline std::vector<float> ToVector(const runtime::NDArray& array) {
  std::vector<float> values(array.NumBytes() / sizeof(float));
  array.CopyToBytes(values.data(), values.size() * sizeof(float));
  return values;
}

}  // namespace kiln::test
