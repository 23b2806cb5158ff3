// The context pointers of a model library, argument checks and parallel loops.
#include <algorithm>
#include <atomic>
#include <cstdio>

#include "kernels/backend_api.h"
#include "kernels/kernels.h"

extern "C" {
TVM_DLL void* __tvm_module_ctx = nullptr;
TVM_DLL void (*__TVMAPISetLastError)(const char*) = nullptr;
TVM_DLL void* (*__TVMBackendAllocWorkspace)(int, int, uint64_t, int, int) = nullptr;
TVM_DLL int (*__TVMBackendFreeWorkspace)(int, int, void*) = nullptr;
TVM_DLL int (*__TVMBackendParallelLaunch)(FTVMParallelLambda, void*, int) = nullptr;
TVM_DLL int (*__TVMBackendParallelBarrier)(int, TVMParallelGroupEnv*) = nullptr;
}

namespace kiln::kernels {

int Fail(const char* message) {
  __TVMAPISetLastError(message);
  return -1;
}

namespace {

// Whether `t` is a compact CPU tensor of the dtype and shape of `s`, its axis 0 `samples` times
// as long.
bool Fits(const DLTensor* t, const ArgSpec& s, int64_t samples = 1) {
  bool ok = t != nullptr && t->device.device_type == kDLCPU && t->dtype.code == s.dtype_code &&
            t->dtype.bits == s.dtype_bits && t->dtype.lanes == 1 && t->ndim == s.ndim;
  int64_t expected_stride = 1;
  for (int d = s.ndim - 1; ok && d >= 0; --d) {
    int64_t extent = s.shape == nullptr ? t->shape[d] : d == 0 ? s.shape[d] * samples : s.shape[d];
    ok = t->shape[d] == extent && (t->strides == nullptr || t->shape[d] == 1 || t->strides[d] == expected_stride);
    expected_stride *= extent;
  }
  return ok;
}

int NotFitting(const char* function, const char* what, int i) {
  char message[512];
  std::snprintf(message, sizeof(message),
                "%s: %s %d does not have the dtype, shape, layout or device the function was compiled for", function,
                what, i);
  return Fail(message);
}

}  // namespace

namespace {

// The argument count and that every argument is a tensor.
int CheckArgCount(const char* function, const int* type_codes, int num_args, int num_specs) {
  char message[512];
  if (num_args != num_specs) {
    std::snprintf(message, sizeof(message), "%s: expected %d arguments, got %d", function, num_specs, num_args);
    return Fail(message);
  }
  for (int i = 0; i < num_args; ++i) {
    if (type_codes[i] != kTVMDLTensorHandle && type_codes[i] != kTVMNDArrayHandle) {
      std::snprintf(message, sizeof(message), "%s: argument %d is not a tensor (type code %d)", function, i,
                    type_codes[i]);
      return Fail(message);
    }
  }
  return 0;
}

}  // namespace

int CheckArgs(const char* function, const TVMValue* args, const int* type_codes, int num_args,
              const ArgSpec* specs, int num_specs) {
  if (CheckArgCount(function, type_codes, num_args, num_specs) != 0) return -1;
  for (int i = 0; i < num_args; ++i) {
    if (!Fits(static_cast<const DLTensor*>(args[i].v_handle), specs[i])) return NotFitting(function, "argument", i);
  }
  return 0;
}

int CheckBatchedArgs(const char* function, const TVMValue* args, const int* type_codes, int num_args,
                     const ArgSpec* specs, const unsigned char* batched, int num_specs, int64_t* samples) {
  if (CheckArgCount(function, type_codes, num_args, num_specs) != 0) return -1;
  *samples = 0;
  for (int i = 0; i < num_args; ++i) {
    const auto* t = static_cast<const DLTensor*>(args[i].v_handle);
    if (batched[i] && *samples == 0 && t != nullptr && t->ndim == specs[i].ndim && t->ndim > 0 &&
        specs[i].shape != nullptr && specs[i].shape[0] > 0) {
      *samples = t->shape[0] / specs[i].shape[0];
    }
    if (!Fits(t, specs[i], batched[i] ? *samples : 1) || (batched[i] && *samples < 1)) {
      return NotFitting(function, "argument", i);
    }
  }
  return 0;
}

int DimArgs(const char* function, const TVMValue* args, const int* type_codes, int num_args, int num_tensors,
            int64_t* dims, int num_dims) {
  char message[512];
  if (num_args != num_tensors + num_dims) {
    std::snprintf(message, sizeof(message), "%s: expected %d tensors and %d shape dimensions, got %d arguments",
                  function, num_tensors, num_dims, num_args);
    return Fail(message);
  }
  for (int d = 0; d < num_dims; ++d) {
    int code = type_codes[num_tensors + d];
    int64_t value = args[num_tensors + d].v_int64;
    if (code != kDLInt || value < 1) {
      std::snprintf(message, sizeof(message), "%s: shape dimension %d (argument %d) is not a positive integer", function,
                    d, num_tensors + d);
      return Fail(message);
    }
    dims[d] = value;
  }
  return 0;
}

int ConstantArrayArgs(const char* function, const TVMValue* args, const int* type_codes, int num_args,
                      const ArgSpec* specs, int num_specs, const DLTensor** tensors) {
  char message[512];
  if (num_args != 1 || type_codes[0] != kTVMObjectHandle) {
    if (num_args == 0) {
      std::snprintf(message, sizeof(message), "%s: expected TVM's Array<NDArray> of its %d constants, got no argument",
                    function, num_specs);
    } else {
      std::snprintf(message, sizeof(message),
                    "%s: expected one argument, TVM's Array<NDArray> of its %d constants (type code %d), got %d "
                    "arguments, the first of type code %d",
                    function, num_specs, static_cast<int>(kTVMObjectHandle), num_args, type_codes[0]);
    }
    return Fail(message);
  }
  auto* array = static_cast<KilnTvmArray*>(args[0].v_handle);
  if (array == nullptr || array->object.type_index != kKilnTvmArrayTypeIndex || array->size != num_specs) {
    std::snprintf(message, sizeof(message), "%s: its argument is not an Array of its %d constants", function, num_specs);
    return Fail(message);
  }
  for (int i = 0; i < num_specs; ++i) {
    KilnTvmObject* element = KilnTvmArrayElements(array)[i];
    if (element == nullptr || element->type_index != kKilnTvmNDArrayTypeIndex) {
      std::snprintf(message, sizeof(message), "%s: constant %d is not an NDArray", function, i);
      return Fail(message);
    }
    tensors[i] = &reinterpret_cast<KilnTvmNDArray*>(element)->dl_tensor;
    if (!Fits(tensors[i], specs[i])) return NotFitting(function, "constant", i);
  }
  return 0;
}

namespace {

// Items go in grains, a few per task. Each task has a home range of the items, the same range at
// every launch of the same count, and takes its grains from the front of it; a task whose range
// is done takes grains from the front of the others'. Task 0 is the launching thread's; with two
// threads task 1 is the worker's, so each thread computes the same part of every layer each time
// (the part it computed of the layer before is in its own caches: with grains claimed from one
// shared counter, which part a thread got changed from launch to launch). With more threads the
// workers claim tasks 1.. in whatever order they wake. A thread that runs slower (preempted by
// another process, or given costlier items) takes fewer grains and the others more, instead of the
// launch waiting for its fixed share (with the thread pool's claimed tasks, runtime/thread_pool.cc).
constexpr int64_t kGrainsPerTask = 4;
constexpr int kMaxHomes = 16;  // launches of more tasks: task t starts on home t % 16

struct alignas(64) GrainCounter {
  std::atomic<int64_t> claimed{0};  // grains of the home range taken
};

struct ParallelForJob {
  int64_t count;
  void (*body)(int64_t, int64_t, void*);
  void* context;
  GrainCounter homes[kMaxHomes];
};

int RunGrains(int task, TVMParallelGroupEnv* env, void* cdata) {
  auto* job = static_cast<ParallelForJob*>(cdata);
  const int64_t tasks = env->num_task, count = job->count;
  const int64_t grain = (count + tasks * kGrainsPerTask - 1) / (tasks * kGrainsPerTask);
  const int64_t homes = std::min<int64_t>(tasks, kMaxHomes);
  for (int64_t h = 0; h < homes; ++h) {
    const int64_t home = (task + h) % homes;
    const int64_t begin = count * home / homes, end = count * (home + 1) / homes;
    for (;;) {
      int64_t first = begin + job->homes[home].claimed.fetch_add(1, std::memory_order_relaxed) * grain;
      if (first >= end) break;
      job->body(first, std::min(first + grain, end), job->context);
    }
  }
  return 0;
}

}  // namespace

int ParallelFor(int64_t count, void (*body)(int64_t, int64_t, void*), void* context, bool split) {
  if (count <= 0) return 0;
  if (count == 1 || !split || __TVMBackendParallelLaunch == nullptr) {
    body(0, count, context);
    return 0;
  }
  ParallelForJob job{count, body, context, {}};
  return __TVMBackendParallelLaunch(RunGrains, &job, 0);
}

}  // namespace kiln::kernels
