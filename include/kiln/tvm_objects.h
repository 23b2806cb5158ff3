/*
 * TVM's runtime objects where they cross the C calling convention: the Array<NDArray> that a
 * const loader passes to `__init_<symbol>` as its one argument (type code kTVMObjectHandle), as
 * TVM v0.19 lays it out (include/tvm/runtime/object.h, container/array.h, ndarray.h; 64-bit).
 * kiln's const loader builds one (runtime/tvm_object_array.h); kiln's JSON runtime and the
 * `__init_` functions kiln generates read one, from either runtime.
 */
#ifndef KILN_TVM_OBJECTS_H_
#define KILN_TVM_OBJECTS_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/c_runtime_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Object: its type index, a reference count (std::atomic<int32_t>), the function that frees it. */
typedef struct KilnTvmObject {
  uint32_t type_index;
  int32_t ref_counter;
  void (*deleter)(struct KilnTvmObject* self);
} KilnTvmObject;

/* TypeIndex::kRuntimeNDArray and kRuntimeArray, static in TVM (v0.8 - v0.19). */
enum { kKilnTvmNDArrayTypeIndex = 2, kKilnTvmArrayTypeIndex = 4 };

/* ArrayNode: `size` element references (Object*) follow the node. */
typedef struct KilnTvmArray {
  KilnTvmObject object;
  int64_t size;
  int64_t capacity;
} KilnTvmArray;

/* NDArray::Container: the tensor (what a kTVMNDArrayHandle points to) after the object header. */
typedef struct KilnTvmNDArray {
  KilnTvmObject object;
  DLTensor dl_tensor;
  void* manager_ctx;
  void* shape; /* ShapeTuple (an object reference); kiln's arrays leave it null */
} KilnTvmNDArray;

/* The element references of an array. */
static inline KilnTvmObject** KilnTvmArrayElements(KilnTvmArray* array) {
  return (KilnTvmObject**)(array + 1);
}

#ifdef __cplusplus
}  /* extern "C" */
static_assert(sizeof(KilnTvmObject) == 16 && sizeof(KilnTvmArray) == 32 && sizeof(KilnTvmNDArray) == 80,
              "TVM's object layouts are those of 64-bit targets");
static_assert(offsetof(KilnTvmNDArray, dl_tensor) == 16, "a container's tensor follows its object header");
#endif

#endif /* KILN_TVM_OBJECTS_H_ */
