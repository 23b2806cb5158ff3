// IR types: a tensor type (static shape + dtype) or a tuple of types.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/dtype.h"

namespace kiln::ir {

using runtime::DTypeToString;
using runtime::ParseDType;

struct TensorType {
  std::vector<int64_t> shape;
  DLDataType dtype{kDLFloat, 32, 1};

  int ndim() const { return static_cast<int>(shape.size()); }
  int64_t NumElements() const;
  size_t NumBytes() const;
  bool operator==(const TensorType& other) const { return shape == other.shape && dtype == other.dtype; }
  bool operator!=(const TensorType& other) const { return !(*this == other); }
};

// Row-major strides (in elements) of a shape.
std::vector<int64_t> RowStrides(const std::vector<int64_t>& shape);

class Type {
 public:
  Type() = default;  // undefined
  static Type Tensor(std::vector<int64_t> shape, DLDataType dtype);
  static Type Tensor(TensorType tensor);
  static Type Tuple(std::vector<Type> fields);

  bool defined() const { return kind_ != Kind::kUndefined; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_tuple() const { return kind_ == Kind::kTuple; }
  // Throw Error when the type is of the other kind.
  const TensorType& tensor() const;
  const std::vector<Type>& fields() const;

  bool operator==(const Type& other) const;
  bool operator!=(const Type& other) const { return !(*this == other); }
  // "Tensor[(1, 3, 224, 224), float32]" or "(Tensor[...], Tensor[...])"
  std::string ToString() const;

 private:
  enum class Kind { kUndefined, kTensor, kTuple };
  Kind kind_ = Kind::kUndefined;
  TensorType tensor_;
  std::vector<Type> fields_;
};

std::string ShapeText(const std::vector<int64_t>& shape);  // "(1, 3, 224, 224)"

}  // namespace kiln::ir
