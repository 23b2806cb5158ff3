// The runtime functions a model library calls, through the context pointers that the loader
// (kiln's or TVM's) fills in when it opens the library. Defined once in support.cc.
#pragma once

#include <cstdint>

#include "kiln/c_backend_api.h"
#include "kiln/tvm_objects.h"

extern "C" {
extern TVM_DLL void* __tvm_module_ctx;
extern TVM_DLL void (*__TVMAPISetLastError)(const char*);
extern TVM_DLL void* (*__TVMBackendAllocWorkspace)(int, int, uint64_t, int, int);
extern TVM_DLL int (*__TVMBackendFreeWorkspace)(int, int, void*);
extern TVM_DLL int (*__TVMBackendParallelLaunch)(FTVMParallelLambda, void*, int);
extern TVM_DLL int (*__TVMBackendParallelBarrier)(int, TVMParallelGroupEnv*);
}

namespace kiln::kernels {

// Sets the error message and returns -1 (for `return Fail("...")`).
int Fail(const char* message);

// Checks the packed arguments of an operator: count, type codes, dtype, ndim, shape and compact
// strides; on a mismatch sets a message naming the function and argument and returns -1.
struct ArgSpec {
  uint8_t dtype_code;
  uint8_t dtype_bits;
  int ndim;
  const int64_t* shape;  // null: any extents (storage the executor sizes as the graph runs)
};
int CheckArgs(const char* function, const TVMValue* args, const int* type_codes, int num_args,
              const ArgSpec* specs, int num_specs);
// CheckArgs for a function run sample by sample: an argument with `batched[i]` set holds
// `*samples` >= 1 of its spec along axis 0, the same number for every such argument.
int CheckBatchedArgs(const char* function, const TVMValue* args, const int* type_codes, int num_args,
                     const ArgSpec* specs, const unsigned char* batched, int num_specs, int64_t* samples);
// The shape dimensions an operator of a library with such dimensions takes after its
// `num_tensors` tensors (integers, graph_json.h): sets dims[0..num_dims); on a wrong count or
// type sets a message naming the function and returns -1.
int DimArgs(const char* function, const TVMValue* args, const int* type_codes, int num_args, int num_tensors,
            int64_t* dims, int num_dims);

// Checks the argument of an `__init_` function: one, TVM's Array<NDArray> object
// (kiln/tvm_objects.h) of num_specs compact CPU tensors of the specs' dtypes and shapes, as
// TVM's const loader and kiln's pass it; sets tensors[i] to each. On a mismatch sets a message
// naming the function and returns -1.
int ConstantArrayArgs(const char* function, const TVMValue* args, const int* type_codes, int num_args,
                      const ArgSpec* specs, int num_specs, const DLTensor** tensors);

inline void* TensorData(const DLTensor* t) { return static_cast<char*>(t->data) + t->byte_offset; }

inline void* ArgData(const TVMValue* args, int i) {
  const DLTensor* t = static_cast<const DLTensor*>(args[i].v_handle);
  return static_cast<char*>(t->data) + t->byte_offset;
}
// The elements argument `i`, a flat tensor, holds (an output the executor sized as the graph runs).
inline int64_t ArgCapacity(const TVMValue* args, int i) {
  return static_cast<const DLTensor*>(args[i].v_handle)->shape[0];
}

// A workspace buffer of the calling thread, freed by the destructor (in reverse order of
// allocation when several live in one scope).
class Workspace {
 public:
  explicit Workspace(uint64_t bytes)
      : data_(__TVMBackendAllocWorkspace(kDLCPU, 0, bytes == 0 ? 1 : bytes, kDLFloat, 32)) {}
  ~Workspace() {
    if (data_ != nullptr) __TVMBackendFreeWorkspace(kDLCPU, 0, data_);
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }
  bool ok() const { return data_ != nullptr; }

 private:
  void* data_;
};

}  // namespace kiln::kernels
