/*
 * The C backend API that compiled operator libraries call, as in TVM's c_backend_api.h
 * (v0.8 - v0.19). libkiln_runtime exports these symbols and also stores them into the `__TVM*`
 * context pointers of every library it loads.
 */
#ifndef KILN_C_BACKEND_API_H_
#define KILN_C_BACKEND_API_H_

#include "kiln/c_runtime_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Signature of every compiled operator (the packed C calling convention). */
typedef int (*TVMBackendPackedCFunc)(TVMValue* args, int* type_codes, int num_args,
                                     TVMValue* out_ret_value, int* out_ret_tcode,
                                     void* resource_handle);

/* Looks `func_name` up in the imports of module `mod_node` (the value of the library's
 * `__tvm_module_ctx`), then among the global functions. */
TVM_DLL int TVMBackendGetFuncFromEnv(void* mod_node, const char* func_name,
                                     TVMFunctionHandle* out);
TVM_DLL int TVMBackendRegisterSystemLibSymbol(const char* name, void* ptr);

/* Workspace: a per-thread pool of 64-byte aligned blocks. Returns NULL on failure. */
TVM_DLL void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes,
                                       int dtype_code_hint, int dtype_bits_hint);
TVM_DLL int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr);

typedef struct {
  void* sync_handle;
  int32_t num_task;
} TVMParallelGroupEnv;

typedef int (*FTVMParallelLambda)(int task_id, TVMParallelGroupEnv* penv, void* cdata);

/* Runs flambda(task_id, penv, cdata) for task_id in [0, num_task); num_task 0 means one task per
 * thread. The calling thread runs task 0. Returns non-zero if any task failed. */
TVM_DLL int TVMBackendParallelLaunch(FTVMParallelLambda flambda, void* cdata, int num_task);
/* Waits until every task of the current launch reached the barrier. */
TVM_DLL int TVMBackendParallelBarrier(int task_id, TVMParallelGroupEnv* penv);
TVM_DLL int TVMBackendRunOnce(void** handle, int (*f)(void*), void* cdata, int nbytes);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_C_BACKEND_API_H_ */
