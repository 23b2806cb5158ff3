// IR types.
#include "ir/type.h"

#include <algorithm>

#include "runtime/error.h"
#include "runtime/ndarray.h"

namespace kiln::ir {

using runtime::Check;
using runtime::StrCat;

int64_t TensorType::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

size_t TensorType::NumBytes() const {
  return static_cast<size_t>(NumElements() * runtime::DTypeBytes(dtype));
}

std::vector<int64_t> RowStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

Type Type::Tensor(std::vector<int64_t> shape, DLDataType dtype) {
  return Tensor(TensorType{std::move(shape), dtype});
}

namespace {
constexpr int64_t kMaxSpread = int64_t{1} << 48;
}  // namespace

Type Type::Tensor(TensorType tensor) {
  for (int64_t d : tensor.shape) Check(d >= 0, "tensor type with a negative dimension ", ShapeText(tensor.shape));
  // Every tensor type can be allocated: shapes whose element count overflows, or tensors larger
  // than runtime::MaxTensorBytes(), are refused where they arise (an input, a constant, an op's result).
  runtime::CheckedTensorBytes(tensor.shape, tensor.dtype, "a tensor");
  // Dims are bounded as if none were 0 too: an empty tensor may otherwise carry a dim near 2^63,
  // and products of its other dims (a flattened view, a window count) would overflow.
  int64_t spread = 1;
  for (int64_t d : tensor.shape) {
    Check(!__builtin_mul_overflow(spread, std::max<int64_t>(d, 1), &spread) && spread <= kMaxSpread, "the dims of ",
          ShapeText(tensor.shape), " multiply past 2^48 (counting an empty dim as 1)");
  }
  Type t;
  t.kind_ = Kind::kTensor;
  t.tensor_ = std::move(tensor);
  return t;
}

Type Type::Tuple(std::vector<Type> fields) {
  Type t;
  t.kind_ = Kind::kTuple;
  t.fields_ = std::move(fields);
  return t;
}

const TensorType& Type::tensor() const {
  Check(is_tensor(), "expected a tensor, got ", ToString());
  return tensor_;
}

const std::vector<Type>& Type::fields() const {
  Check(is_tuple(), "expected a tuple, got ", ToString());
  return fields_;
}

bool Type::operator==(const Type& other) const {
  if (kind_ != other.kind_) return false;
  if (kind_ == Kind::kTensor) return tensor_ == other.tensor_;
  return fields_ == other.fields_;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) text += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  return text + ")";
}

std::string Type::ToString() const {
  switch (kind_) {
    case Kind::kUndefined: return "(undefined type)";
    case Kind::kTensor: return StrCat("Tensor[", ShapeText(tensor_.shape), ", ", DTypeToString(tensor_.dtype), "]");
    case Kind::kTuple: {
      std::string text = "(";
      for (size_t i = 0; i < fields_.size(); ++i) text += (i > 0 ? ", " : "") + fields_[i].ToString();
      return text + (fields_.size() == 1 ? ",)" : ")");
    }
  }
  return "";
}

}  // namespace kiln::ir
