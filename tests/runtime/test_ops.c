/*
 * A small operator library written to the packed C ABI, as compiled model code is: it checks
 * its arguments, reports errors with TVMAPISetLastError, and uses the backend API (workspace,
 * parallel launch with a barrier, environment lookup).
 *
 * Built two ways: as a DSO (the default), where the runtime reaches the operators through dlsym
 * and the operators reach the runtime through the `__TVM*` context pointers the loader fills;
 * and with KILN_TEST_SYSTEM_LIB, linked into a test binary, where the operators call the
 * runtime's exported functions directly and register themselves as a system library.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kiln/c_backend_api.h"

#ifdef KILN_TEST_SYSTEM_LIB
#define OP_PREFIX sys_
#define CALL_SET_ERROR TVMAPISetLastError
#define CALL_ALLOC TVMBackendAllocWorkspace
#define CALL_FREE TVMBackendFreeWorkspace
#define CALL_LAUNCH TVMBackendParallelLaunch
#define CALL_BARRIER TVMBackendParallelBarrier
#define CALL_ENV TVMBackendGetFuncFromEnv
#define CALL_FUNC TVMFuncCall
void* __tvm_module_ctx = NULL;
#else
/* The context pointers the loader fills (as in LLVM-generated libraries). */
TVM_DLL void* __tvm_module_ctx = NULL;
TVM_DLL void (*__TVMAPISetLastError)(const char*) = NULL;
TVM_DLL void* (*__TVMBackendAllocWorkspace)(int, int, uint64_t, int, int) = NULL;
TVM_DLL int (*__TVMBackendFreeWorkspace)(int, int, void*) = NULL;
TVM_DLL int (*__TVMBackendParallelLaunch)(FTVMParallelLambda, void*, int) = NULL;
TVM_DLL int (*__TVMBackendParallelBarrier)(int, TVMParallelGroupEnv*) = NULL;
TVM_DLL int (*__TVMBackendGetFuncFromEnv)(void*, const char*, TVMFunctionHandle*) = NULL;
TVM_DLL int (*__TVMFuncCall)(TVMFunctionHandle, TVMValue*, int*, int, TVMValue*, int*) = NULL;
#define CALL_SET_ERROR __TVMAPISetLastError
#define CALL_ALLOC __TVMBackendAllocWorkspace
#define CALL_FREE __TVMBackendFreeWorkspace
#define CALL_LAUNCH __TVMBackendParallelLaunch
#define CALL_BARRIER __TVMBackendParallelBarrier
#define CALL_ENV __TVMBackendGetFuncFromEnv
#define CALL_FUNC __TVMFuncCall
#endif

static int fail(const char* message) {
  CALL_SET_ERROR(message);
  return -1;
}

static int64_t num_elements(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

/* Checks that args[0..num_args) are float32 CPU tensors of equal element count. */
static int check_float_args(const char* op, TVMValue* args, int* codes, int num_args, int expected) {
  static char message[256];
  if (num_args != expected) {
    snprintf(message, sizeof(message), "%s: expected %d arguments, got %d", op, expected, num_args);
    return fail(message);
  }
  for (int i = 0; i < num_args; ++i) {
    const DLTensor* t = (const DLTensor*)args[i].v_handle;
    if (codes[i] != kTVMDLTensorHandle && codes[i] != kTVMNDArrayHandle) {
      snprintf(message, sizeof(message), "%s: argument %d is not a tensor (type code %d)", op, i, codes[i]);
      return fail(message);
    }
    if (t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1) {
      snprintf(message, sizeof(message), "%s: argument %d is not float32", op, i);
      return fail(message);
    }
    if (t->device.device_type != kDLCPU) {
      snprintf(message, sizeof(message), "%s: argument %d is not on the CPU", op, i);
      return fail(message);
    }
    if (num_elements(t) != num_elements((const DLTensor*)args[0].v_handle)) {
      snprintf(message, sizeof(message), "%s: argument %d has a different size", op, i);
      return fail(message);
    }
  }
  return 0;
}

#define DATA(i) ((float*)((char*)((DLTensor*)args[i].v_handle)->data + ((DLTensor*)args[i].v_handle)->byte_offset))
#define SIZE(i) num_elements((const DLTensor*)args[i].v_handle)
#define CONCAT2(a, b) a##b
#define CONCAT(a, b) CONCAT2(a, b)
#define OP(name) TVM_DLL int CONCAT(OP_PREFIX, name)(TVMValue * args, int* codes, int num_args, \
                                                     TVMValue* ret, int* ret_code, void* resource)
#define UNUSED (void)ret, (void)ret_code, (void)resource

#ifndef OP_PREFIX
#define OP_PREFIX
#endif

/* out = a + b */
OP(test_add) {
  UNUSED;
  if (check_float_args("test_add", args, codes, num_args, 3) != 0) return -1;
  const float *a = DATA(0), *b = DATA(1);
  float* out = DATA(2);
  for (int64_t i = 0; i < SIZE(0); ++i) out[i] = a[i] + b[i];
  return 0;
}

/* out = max(a, 0) */
OP(test_relu) {
  UNUSED;
  if (check_float_args("test_relu", args, codes, num_args, 2) != 0) return -1;
  const float* a = DATA(0);
  float* out = DATA(1);
  for (int64_t i = 0; i < SIZE(0); ++i) out[i] = a[i] > 0 ? a[i] : 0;
  return 0;
}

/* Two outputs: out0 = 2a, out1 = a + 1 */
OP(test_two_outputs) {
  UNUSED;
  if (check_float_args("test_two_outputs", args, codes, num_args, 3) != 0) return -1;
  const float* a = DATA(0);
  float *out0 = DATA(1), *out1 = DATA(2);
  for (int64_t i = 0; i < SIZE(0); ++i) {
    out0[i] = 2 * a[i];
    out1[i] = a[i] + 1;
  }
  return 0;
}

/* out = 3a, through a workspace buffer that must be 64-byte aligned. */
OP(test_workspace) {
  UNUSED;
  if (check_float_args("test_workspace", args, codes, num_args, 2) != 0) return -1;
  int64_t n = SIZE(0);
  float* tmp = (float*)CALL_ALLOC(kDLCPU, 0, (uint64_t)n * sizeof(float), kDLFloat, 32);
  if (tmp == NULL) return -1;
  if ((uintptr_t)tmp % 64 != 0) return fail("test_workspace: workspace is not 64-byte aligned");
  for (int64_t i = 0; i < n; ++i) tmp[i] = 3 * DATA(0)[i];
  memcpy(DATA(1), tmp, (size_t)n * sizeof(float));
  return CALL_FREE(kDLCPU, 0, tmp);
}

/* out[i] = a[n-1-i]^2 in parallel: squares into a workspace, a barrier, then mirrored reads of
 * other tasks' chunks (wrong without the barrier). */
struct mirror_job {
  const float* a;
  float* tmp;
  float* out;
  int64_t n;
};

static int mirror_task(int task_id, TVMParallelGroupEnv* env, void* cdata) {
  struct mirror_job* job = (struct mirror_job*)cdata;
  int64_t chunk = (job->n + env->num_task - 1) / env->num_task;
  int64_t begin = task_id * chunk, end = begin + chunk < job->n ? begin + chunk : job->n;
  for (int64_t i = begin; i < end; ++i) job->tmp[i] = job->a[i] * job->a[i];
  if (CALL_BARRIER(task_id, env) != 0) return -1;
  for (int64_t i = begin; i < end; ++i) job->out[i] = job->tmp[job->n - 1 - i];
  return 0;
}

OP(test_parallel_mirror) {
  UNUSED;
  if (check_float_args("test_parallel_mirror", args, codes, num_args, 2) != 0) return -1;
  struct mirror_job job = {DATA(0), NULL, DATA(1), SIZE(0)};
  job.tmp = (float*)CALL_ALLOC(kDLCPU, 0, (uint64_t)job.n * sizeof(float), kDLFloat, 32);
  if (job.tmp == NULL) return -1;
  int status = CALL_LAUNCH(mirror_task, &job, 0);
  if (CALL_FREE(kDLCPU, 0, job.tmp) != 0) return -1;
  return status;
}

static int count_task(int task_id, TVMParallelGroupEnv* env, void* cdata) {
  if (task_id == 0) *(float*)cdata = (float)env->num_task;
  return 0;
}

/* out[0] = the number of tasks a launch of the default count (0) gets: the thread count. */
OP(test_thread_count) {
  UNUSED;
  if (check_float_args("test_thread_count", args, codes, num_args, 2) != 0) return -1;
  return CALL_LAUNCH(count_task, DATA(1), 0);
}

/* out = a, requiring 1-D arguments (the graph node has flatten_data = 1). */
OP(test_flat_copy) {
  UNUSED;
  if (check_float_args("test_flat_copy", args, codes, num_args, 2) != 0) return -1;
  for (int i = 0; i < 2; ++i) {
    if (((DLTensor*)args[i].v_handle)->ndim != 1) return fail("test_flat_copy: expected 1-D arguments");
  }
  memcpy(DATA(1), DATA(0), (size_t)SIZE(0) * sizeof(float));
  return 0;
}

/* Calls the function "test.negate" found through the environment: out = -a. */
OP(test_env_call) {
  UNUSED;
  if (check_float_args("test_env_call", args, codes, num_args, 2) != 0) return -1;
  TVMFunctionHandle negate = NULL;
  if (CALL_ENV(__tvm_module_ctx, "test.negate", &negate) != 0) return -1;
  TVMValue result;
  int result_code;
  return CALL_FUNC(negate, args, codes, 2, &result, &result_code);
}

/* Always fails, to test error reporting. */
OP(test_fail) {
  UNUSED;
  (void)args, (void)codes, (void)num_args;
  return fail("test_fail: deliberate failure");
}

#ifdef KILN_TEST_SYSTEM_LIB
/* What a system-lib build's static constructor does. */
__attribute__((constructor)) static void register_system_lib(void) {
  TVMBackendRegisterSystemLibSymbol("sys_test_add", (void*)&sys_test_add);
  TVMBackendRegisterSystemLibSymbol("sys_test_relu", (void*)&sys_test_relu);
  TVMBackendRegisterSystemLibSymbol("sys_test_workspace", (void*)&sys_test_workspace);
  TVMBackendRegisterSystemLibSymbol("sys_test_parallel_mirror", (void*)&sys_test_parallel_mirror);
  TVMBackendRegisterSystemLibSymbol("sys_test_env_call", (void*)&sys_test_env_call);
  TVMBackendRegisterSystemLibSymbol("sys___tvm_module_ctx", (void*)&__tvm_module_ctx);
}
#endif
