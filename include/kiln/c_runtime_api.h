/*
 * kiln's C runtime API: the subset of TVM's C runtime API (v0.8 - v0.19) that deployment
 * programs use to load a model library and run it. Programs written against TVM's
 * <tvm/runtime/c_runtime_api.h> compile and run against this header and libkiln_runtime.
 *
 * Every function returns 0 on success and -1 on failure; the failure's message is then
 * available from TVMGetLastError() in the calling thread.
 *
 * Ownership: handles returned through `out` parameters (modules, functions, arrays) are owned by
 * the caller and released with TVMModFree / TVMFuncFree / TVMArrayFree. The same holds for module
 * (type code 9), function (10) and array (13) values returned by TVMFuncCall. Strings and byte
 * arrays returned by TVMFuncCall stay valid until the next call in the same thread.
 */
#ifndef KILN_C_RUNTIME_API_H_
#define KILN_C_RUNTIME_API_H_

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef TVM_DLL
#define TVM_DLL __attribute__((visibility("default")))
#endif

typedef int64_t tvm_index_t;

/* Type codes of TVMValue, as in TVM. */
typedef enum {
  kTVMArgInt = kDLInt,
  kTVMArgFloat = kDLFloat,
  kTVMOpaqueHandle = 3U,
  kTVMNullptr = 4U,
  kTVMDataType = 5U,
  kDLDevice = 6U,
  kTVMDLTensorHandle = 7U,
  kTVMObjectHandle = 8U,
  kTVMModuleHandle = 9U,
  kTVMPackedFuncHandle = 10U,
  kTVMStr = 11U,
  kTVMBytes = 12U,
  kTVMNDArrayHandle = 13U,
  kTVMObjectRValueRefArg = 14U,
  kTVMArgBool = 15U, /* v0.19; earlier releases started extension codes here */
} TVMArgTypeCode;

typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
  const char* v_str;
  DLDataType v_type;
  DLDevice v_device;
} TVMValue;

typedef struct {
  const char* data;
  size_t size;
} TVMByteArray;

typedef void* TVMModuleHandle;
typedef void* TVMFunctionHandle;
typedef void* TVMRetValueHandle;
typedef void* TVMStreamHandle;
typedef void* TVMObjectHandle;
typedef DLTensor* TVMArrayHandle;

typedef int (*TVMPackedCFunc)(TVMValue* args, int* type_codes, int num_args,
                              TVMRetValueHandle ret, void* resource_handle);
typedef void (*TVMPackedCFuncFinalizer)(void* resource_handle);

TVM_DLL const char* TVMGetLastError(void);
TVM_DLL void TVMAPISetLastError(const char* msg);

TVM_DLL int TVMModLoadFromFile(const char* file_name, const char* format, TVMModuleHandle* out);
TVM_DLL int TVMModImport(TVMModuleHandle mod, TVMModuleHandle dep);
/* *out is NULL when the module has no such function. */
TVM_DLL int TVMModGetFunction(TVMModuleHandle mod, const char* func_name, int query_imports,
                              TVMFunctionHandle* out);
TVM_DLL int TVMModFree(TVMModuleHandle mod);

TVM_DLL int TVMFuncFree(TVMFunctionHandle func);
TVM_DLL int TVMFuncCall(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes,
                        int num_args, TVMValue* ret_val, int* ret_type_code);
TVM_DLL int TVMFuncCreateFromCFunc(TVMPackedCFunc func, void* resource_handle,
                                   TVMPackedCFuncFinalizer fin, TVMFunctionHandle* out);
TVM_DLL int TVMCFuncSetReturn(TVMRetValueHandle ret, TVMValue* value, int* type_code,
                              int num_ret);
/* *out is NULL when no global function has that name. */
TVM_DLL int TVMFuncGetGlobal(const char* name, TVMFunctionHandle* out);
TVM_DLL int TVMFuncRegisterGlobal(const char* name, TVMFunctionHandle f, int override);

TVM_DLL int TVMArrayAlloc(const tvm_index_t* shape, int ndim, int dtype_code, int dtype_bits,
                          int dtype_lanes, int device_type, int device_id, TVMArrayHandle* out);
TVM_DLL int TVMArrayFree(TVMArrayHandle handle);
TVM_DLL int TVMArrayCopyFromBytes(TVMArrayHandle handle, void* data, size_t nbytes);
TVM_DLL int TVMArrayCopyToBytes(TVMArrayHandle handle, void* data, size_t nbytes);
TVM_DLL int TVMArrayCopyFromTo(TVMArrayHandle from, TVMArrayHandle to, TVMStreamHandle stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_C_RUNTIME_API_H_ */
