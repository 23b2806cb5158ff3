// NDArray: a reference-counted n-dimensional array over DLPack's DLTensor.
//
// CPU memory is allocated 64-byte aligned. An NDArray is either an owner of its memory, a view
// into another NDArray (which it keeps alive), a wrapper of a DLPack tensor (whose deleter it
// calls), or a non-owning wrapper of caller memory (used for zero-copy I/O; the caller keeps it
// alive). Copies of an NDArray share the same data. Reference counting is thread safe; the data
// itself is not synchronised.
#pragma once

#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/dtype.h"

namespace kiln::runtime {

constexpr size_t kAllocAlignment = 64;
constexpr DLDevice kCPU{kDLCPU, 0};

class NDArray {
 public:
  NDArray() = default;
  NDArray(const NDArray& other);
  NDArray(NDArray&& other) noexcept : container_(other.container_) { other.container_ = nullptr; }
  NDArray& operator=(NDArray other) noexcept;
  ~NDArray();

  // Allocates an uninitialised array. Throws Error for a non-CPU device, a negative dimension or
  // a size that cannot be allocated.
  static NDArray Empty(const std::vector<int64_t>& shape, DLDataType dtype, DLDevice device = kCPU);
  // Wraps memory the caller owns; the caller keeps it alive while any copy of this NDArray lives.
  static NDArray WrapExternal(const DLTensor& tensor);
  // Takes ownership of a DLPack tensor; its deleter runs when the last copy is gone. Throws Error
  // (leaving the tensor to the caller) for a non-CPU or non-compact tensor. A DLPack 0.8 bool
  // (kDLBool, 8 bits) becomes kiln's bool.
  static NDArray FromDLPack(DLManagedTensor* tensor);
  // A DLPack tensor that keeps this array alive until its deleter is called.
  DLManagedTensor* ToDLPack() const;

  // A view of the same memory with another shape/dtype; throws Error if it needs more bytes than
  // this array holds or this array is not compact.
  NDArray CreateView(const std::vector<int64_t>& shape, DLDataType dtype) const;

  // Copies between arrays of equal shape and dtype (throws Error naming the mismatch otherwise).
  void CopyFrom(const DLTensor& source);
  void CopyTo(DLTensor& target) const;
  void CopyFromBytes(const void* data, size_t nbytes);
  void CopyToBytes(void* data, size_t nbytes) const;
  NDArray Clone() const;

  bool defined() const { return container_ != nullptr; }
  const DLTensor* operator->() const { return get(); }
  DLTensor* get();
  const DLTensor* get() const;
  const std::vector<int64_t>& shape() const;
  DLDataType dtype() const { return get()->dtype; }
  void* data() const { return static_cast<char*>(get()->data) + get()->byte_offset; }
  size_t NumBytes() const;
  int UseCount() const;

  // The C API's handle of an NDArray is a pointer to its DLTensor. ReleaseHandle hands one
  // reference to the caller; FromHandle takes a new reference from a handle made by
  // ReleaseHandle (the caller's reference stays); FreeHandle drops the caller's reference.
  DLTensor* ReleaseHandle();
  static NDArray FromHandle(DLTensor* handle);
  static void FreeHandle(DLTensor* handle);

 private:
  struct Container;
  explicit NDArray(Container* c) : container_(c) {}
  Container* container_ = nullptr;
};

// Number of elements and bytes of a tensor; throws Error on overflow or a negative dimension.
int64_t NumElements(const DLTensor& tensor);
size_t DataBytes(const DLTensor& tensor);
// The most bytes one array may take: $KILN_MAX_TENSOR_BYTES when set, else this machine's
// physical memory. Larger arrays are refused before anything is allocated: by NDArray::Empty,
// and before that by the IR's tensor types and the ONNX importer, so that a model asking for more
// fails at import or load with a message instead of when the system runs out of memory.
int64_t MaxTensorBytes();
// Throws Error when `bytes` is more than MaxTensorBytes(): "<what> needs N bytes, more than ...".
void CheckTensorBytes(int64_t bytes, const std::string& what);
// The elements of `shape` and the bytes they take as `dtype` (a bool takes a byte); throws Error
// naming `what` on a negative dimension, an overflow or more than MaxTensorBytes().
int64_t CheckedTensorBytes(const std::vector<int64_t>& shape, DLDataType dtype, const std::string& what);
// True when strides are absent or describe a compact row-major layout.
bool IsCompact(const DLTensor& tensor);
std::string ShapeToString(const int64_t* shape, int ndim);
inline std::string ShapeToString(const std::vector<int64_t>& shape) {
  return ShapeToString(shape.data(), static_cast<int>(shape.size()));
}
// Throws Error "<what>: expected dtype X shape S, got dtype Y shape T" when they differ.
void CheckSameType(const DLTensor& expected, const DLTensor& got, const std::string& what);

}  // namespace kiln::runtime
