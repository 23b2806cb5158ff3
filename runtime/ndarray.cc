// NDArray storage, views, copies and DLPack exchange.
#include "runtime/ndarray.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "runtime/error.h"

namespace kiln::runtime {

// `dl` must stay the first member: C handles are pointers to it and are cast back.
struct NDArray::Container {
  DLTensor dl{};
  std::atomic<int> ref_count{1};
  std::vector<int64_t> shape;
  void* allocation = nullptr;         // owned aligned memory, or
  NDArray base;                       // the array this one views, or
  DLManagedTensor* dlpack = nullptr;  // a DLPack tensor whose deleter we call

  ~Container() {
    std::free(allocation);
    if (dlpack != nullptr && dlpack->deleter != nullptr) dlpack->deleter(dlpack);
  }
};

namespace {

constexpr size_t kHugePageBytes = size_t{2} << 20;  // x86-64 and AArch64 (4 KiB pages)

int64_t CheckedProduct(const int64_t* shape, int ndim) {
  int64_t product = 1;
  // Fail, not Check: the shape is written out only when it is wrong (this runs on every size query).
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] < 0) Fail("dimension ", i, " of shape ", ShapeToString(shape, ndim), " is negative");
    if (__builtin_mul_overflow(product, shape[i], &product)) {
      Fail("shape ", ShapeToString(shape, ndim), " has too many elements");
    }
  }
  return product;
}

void CheckCPU(DLDevice device) {
  Check(device.device_type == kDLCPU,
        "device type ", static_cast<int>(device.device_type),
        " is not supported: this build of kiln runs on the CPU only");
}

}  // namespace

int64_t NumElements(const DLTensor& tensor) { return CheckedProduct(tensor.shape, tensor.ndim); }

int64_t MaxTensorBytes() {
  if (const char* text = std::getenv("KILN_MAX_TENSOR_BYTES"); text != nullptr && *text != '\0') {
    char* end = nullptr;
    errno = 0;
    long long value = std::strtoll(text, &end, 10);
    Check(errno == 0 && *end == '\0' && value > 0, "KILN_MAX_TENSOR_BYTES must be a positive number of bytes, got '",
          text, "'");
    return value;
  }
  static const int64_t physical = [] {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    int64_t bytes = 0;
    if (pages <= 0 || page <= 0 || __builtin_mul_overflow(int64_t{pages}, int64_t{page}, &bytes)) {
      return std::numeric_limits<int64_t>::max();
    }
    return bytes;
  }();
  return physical;
}

void CheckTensorBytes(int64_t bytes, const std::string& what) {
  int64_t limit = MaxTensorBytes();
  if (bytes <= limit) return;
  const char* setting = std::getenv("KILN_MAX_TENSOR_BYTES");
  bool from_env = setting != nullptr && *setting != '\0';
  Check(bytes <= limit, what, " needs ", bytes, " bytes, more than the limit of ", limit, " bytes (",
        from_env ? "KILN_MAX_TENSOR_BYTES" : "this machine's memory; set KILN_MAX_TENSOR_BYTES to change it", ")");
}

int64_t CheckedTensorBytes(const std::vector<int64_t>& shape, DLDataType dtype, const std::string& what) {
  int64_t elements = 1, bytes = 0;
  for (int64_t d : shape) {
    if (d < 0) Fail(what, " has a negative dimension: ", ShapeToString(shape));
    if (__builtin_mul_overflow(elements, d, &elements)) {
      Fail(what, " of shape ", ShapeToString(shape), " has more elements than a 64-bit count holds");
    }
  }
  if (__builtin_mul_overflow(elements, static_cast<int64_t>(DTypeBytes(dtype)), &bytes)) {
    Fail(what, " of shape ", ShapeToString(shape), " has more bytes than a 64-bit count holds");
  }
  if (bytes > MaxTensorBytes()) CheckTensorBytes(bytes, what + " of shape " + ShapeToString(shape));
  return bytes;
}

size_t DataBytes(const DLTensor& tensor) {
  // Per element, as TVM counts it: a bool (uint1) takes a whole byte.
  int64_t bytes = 0;
  Check(!__builtin_mul_overflow(NumElements(tensor), DTypeBytes(tensor.dtype), &bytes),
        "tensor of shape ", ShapeToString(tensor.shape, tensor.ndim), " is too large");
  return static_cast<size_t>(bytes);
}

bool IsCompact(const DLTensor& tensor) {
  if (tensor.strides == nullptr) return true;
  int64_t expected = 1;
  for (int i = tensor.ndim - 1; i >= 0; --i) {
    if (tensor.shape[i] != 1 && tensor.strides[i] != expected) return false;
    expected *= tensor.shape[i];
  }
  return true;
}

std::string ShapeToString(const int64_t* shape, int ndim) {
  std::string text = "[";
  for (int i = 0; i < ndim; ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

void CheckSameType(const DLTensor& expected, const DLTensor& got, const std::string& what) {
  bool same = expected.ndim == got.ndim && expected.dtype == got.dtype;
  for (int i = 0; same && i < expected.ndim; ++i) same = expected.shape[i] == got.shape[i];
  if (!same) {  // the texts are made only for the error: this runs on every input set
    Fail(what, ": expected ", DTypeToString(expected.dtype), " of shape ", ShapeToString(expected.shape, expected.ndim),
         ", got ", DTypeToString(got.dtype), " of shape ", ShapeToString(got.shape, got.ndim));
  }
}

NDArray::NDArray(const NDArray& other) : container_(other.container_) {
  if (container_ != nullptr) container_->ref_count.fetch_add(1, std::memory_order_relaxed);
}

NDArray& NDArray::operator=(NDArray other) noexcept {
  std::swap(container_, other.container_);
  return *this;
}

NDArray::~NDArray() {
  if (container_ != nullptr && container_->ref_count.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    delete container_;
  }
}

DLTensor* NDArray::get() { return &container_->dl; }
const DLTensor* NDArray::get() const { return &container_->dl; }
const std::vector<int64_t>& NDArray::shape() const { return container_->shape; }

int NDArray::UseCount() const {
  return container_ == nullptr ? 0 : container_->ref_count.load(std::memory_order_relaxed);
}

NDArray NDArray::Empty(const std::vector<int64_t>& shape, DLDataType dtype, DLDevice device) {
  CheckCPU(device);
  if (dtype.lanes < 1 || dtype.bits < 1) Fail("dtype ", DTypeToString(dtype), " is not allocatable");
  auto* c = new Container();
  NDArray array(c);  // owns c from here on
  c->shape = shape;
  c->dl.device = device;
  c->dl.dtype = dtype;
  c->dl.ndim = static_cast<int>(shape.size());
  c->dl.shape = c->shape.data();
  size_t bytes = DataBytes(c->dl);
  if (static_cast<int64_t>(bytes) > MaxTensorBytes()) {  // the message is built only when it is needed
    CheckTensorBytes(static_cast<int64_t>(bytes), "an array of shape " + ShapeToString(shape) + " and dtype " +
                                                      DTypeToString(dtype));
  }
  // aligned_alloc needs a size that is a multiple of the alignment; keep at least one block so
  // that empty tensors still have a valid, aligned pointer.
  size_t rounded = (bytes + kAllocAlignment - 1) / kAllocAlignment * kAllocAlignment;
  if (rounded == 0) rounded = kAllocAlignment;
  Check(rounded >= bytes, "cannot allocate ", bytes, " bytes");
  // Arrays of a huge page or more start on one and ask for huge pages: a model's weights and the
  // compiler's copies of them are touched in 2 MiB faults instead of 4 KiB ones (BERT-base: some
  // 900,000 page faults in a build).
  bool huge = rounded >= kHugePageBytes;
  c->allocation = std::aligned_alloc(huge ? kHugePageBytes : kAllocAlignment,
                                     huge ? (rounded + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes : rounded);
  Check(c->allocation != nullptr, "cannot allocate ", bytes, " bytes for an array of shape ",
        ShapeToString(shape), " (out of memory)");
#if defined(MADV_HUGEPAGE)
  if (huge) madvise(c->allocation, rounded / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
#endif
  c->dl.data = c->allocation;
  return array;
}

NDArray NDArray::WrapExternal(const DLTensor& tensor) {
  CheckCPU(tensor.device);
  if (!IsCompact(tensor)) {
    Fail("tensor of shape ", ShapeToString(tensor.shape, tensor.ndim), " is not compact (row-major without gaps)");
  }
  auto* c = new Container();
  NDArray array(c);
  c->shape.assign(tensor.shape, tensor.shape + tensor.ndim);
  c->dl = tensor;
  c->dl.shape = c->shape.data();
  c->dl.strides = nullptr;
  return array;
}

NDArray NDArray::FromDLPack(DLManagedTensor* tensor) {
  Check(tensor != nullptr, "DLPack tensor is null");
  NDArray array = WrapExternal(tensor->dl_tensor);
  // DLPack 0.8's kDLBool (code 6, one byte per element; numpy and newer frameworks export bool
  // arrays so) is kiln's bool.
  constexpr uint8_t kDLPackBool = 6;
  DLDataType& dtype = array.container_->dl.dtype;
  if (dtype.code == kDLPackBool && dtype.bits == 8 && dtype.lanes == 1) dtype = DLDataType{kDLUInt, 1, 1};
  array.container_->dlpack = tensor;
  return array;
}

DLManagedTensor* NDArray::ToDLPack() const {
  auto* managed = new DLManagedTensor();
  managed->dl_tensor = container_->dl;
  managed->manager_ctx = new NDArray(*this);
  managed->deleter = [](DLManagedTensor* self) {
    delete static_cast<NDArray*>(self->manager_ctx);
    delete self;
  };
  return managed;
}

NDArray NDArray::CreateView(const std::vector<int64_t>& shape, DLDataType dtype) const {
  Check(IsCompact(container_->dl), "cannot view a non-compact array");
  auto* c = new Container();
  NDArray view(c);
  c->shape = shape;
  c->dl = container_->dl;
  c->dl.shape = c->shape.data();
  c->dl.ndim = static_cast<int>(shape.size());
  c->dl.dtype = dtype;
  c->dl.strides = nullptr;
  if (DataBytes(c->dl) > NumBytes()) {
    Fail("a view of ", DTypeToString(dtype), " ", ShapeToString(shape), " needs ", DataBytes(c->dl),
         " bytes but the array holds ", NumBytes());
  }
  c->base = *this;
  return view;
}

size_t NDArray::NumBytes() const { return DataBytes(container_->dl); }

void NDArray::CopyFrom(const DLTensor& source) {
  CheckSameType(container_->dl, source, "copy into array");
  CheckCPU(source.device);
  Check(IsCompact(source), "copy into array: the source is not compact");
  size_t bytes = NumBytes();
  if (bytes > 0) {
    std::memcpy(data(), static_cast<const char*>(source.data) + source.byte_offset, bytes);
  }
}

void NDArray::CopyTo(DLTensor& target) const {
  CheckSameType(container_->dl, target, "copy from array");
  CheckCPU(target.device);
  Check(IsCompact(target), "copy from array: the target is not compact");
  size_t bytes = NumBytes();
  if (bytes > 0) std::memcpy(static_cast<char*>(target.data) + target.byte_offset, data(), bytes);
}

void NDArray::CopyFromBytes(const void* bytes, size_t nbytes) {
  Check(nbytes == NumBytes(), "copy from bytes: the array holds ", NumBytes(), " bytes, got ",
        nbytes);
  if (nbytes > 0) std::memcpy(data(), bytes, nbytes);
}

void NDArray::CopyToBytes(void* bytes, size_t nbytes) const {
  Check(nbytes == NumBytes(), "copy to bytes: the array holds ", NumBytes(), " bytes, got room for ",
        nbytes);
  if (nbytes > 0) std::memcpy(bytes, data(), nbytes);
}

NDArray NDArray::Clone() const {
  NDArray copy = Empty(shape(), dtype(), container_->dl.device);
  copy.CopyFrom(container_->dl);
  return copy;
}

DLTensor* NDArray::ReleaseHandle() {
  Container* c = container_;
  container_ = nullptr;
  return &c->dl;
}

NDArray NDArray::FromHandle(DLTensor* handle) {
  auto* c = reinterpret_cast<Container*>(handle);
  c->ref_count.fetch_add(1, std::memory_order_relaxed);
  return NDArray(c);
}

void NDArray::FreeHandle(DLTensor* handle) {
  if (handle != nullptr) NDArray adopted(reinterpret_cast<Container*>(handle));  // then dropped
}

}  // namespace kiln::runtime
