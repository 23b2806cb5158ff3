// The exported C API (kiln/c_runtime_api.h and kiln/c_backend_api.h): thin wrappers that turn
// exceptions into -1 plus a per-thread last error.
#include <cstring>
#include <mutex>

#include "kiln/c_backend_api.h"
#include "kiln/c_runtime_api.h"
#include "runtime/error.h"
#include "runtime/last_error.h"
#include "runtime/module.h"
#include "runtime/system_lib.h"
#include "runtime/thread_pool.h"
#include "runtime/workspace_pool.h"

namespace kiln::runtime {

namespace {
thread_local std::string last_error;
}  // namespace

void SetLastError(std::string message) { last_error = std::move(message); }
const std::string& LastError() { return last_error; }

namespace {

template <typename Body>
int Guard(Body&& body) {
  try {
    body();
    return 0;
  } catch (const std::bad_alloc&) {
    SetLastError("out of memory");
  } catch (const std::exception& e) {
    SetLastError(e.what());
  } catch (...) {
    SetLastError("unknown error");
  }
  return -1;
}

template <typename T>
T& Deref(void* handle, const char* function, const char* what) {
  Check(handle != nullptr, function, ": the ", what, " handle is null");
  return *static_cast<T*>(handle);
}

// Hands a return value to a C caller: objects with a reference the caller frees, strings valid
// until the next call in this thread.
void ReturnToC(RetValue& result, TVMValue* value, int* code) {
  thread_local std::string string_storage;
  thread_local TVMByteArray bytes_storage;
  *code = result.code();
  switch (result.code()) {
    case kTVMStr:
      string_storage = result.string_payload();
      value->v_str = string_storage.c_str();
      break;
    case kTVMBytes:
      string_storage = result.string_payload();
      bytes_storage = TVMByteArray{string_storage.data(), string_storage.size()};
      value->v_handle = &bytes_storage;
      break;
    case kTVMNDArrayHandle: {
      NDArray array = result.AsNDArray();
      value->v_handle = array.ReleaseHandle();
      break;
    }
    case kTVMModuleHandle:
      value->v_handle = new Module(result.AsModule());
      break;
    case kTVMPackedFuncHandle:
      value->v_handle = new PackedFunc(result.AsFunc());
      break;
    default:
      *value = result.AsArg().value();
  }
}

void CheckRawTensor(const DLTensor* t, const char* function) {
  Check(t != nullptr, function, ": the array handle is null");
  Check(t->device.device_type == kDLCPU, function, ": the array is not in CPU memory");
  Check(IsCompact(*t), function, ": the array is not compact");
}

}  // namespace
}  // namespace kiln::runtime

using namespace kiln::runtime;  // NOLINT: this file only implements the C API

extern "C" {

const char* TVMGetLastError(void) { return LastError().c_str(); }

void TVMAPISetLastError(const char* msg) { SetLastError(msg != nullptr ? msg : ""); }

int TVMModLoadFromFile(const char* file_name, const char* format, TVMModuleHandle* out) {
  return Guard([&] {
    Check(file_name != nullptr && out != nullptr, "TVMModLoadFromFile: null argument");
    *out = new Module(LoadModuleFromFile(file_name, format != nullptr ? format : ""));
  });
}

int TVMModImport(TVMModuleHandle mod, TVMModuleHandle dep) {
  return Guard([&] {
    Module& module = Deref<Module>(mod, "TVMModImport", "module");
    module->Import(Deref<Module>(dep, "TVMModImport", "imported module"));
  });
}

int TVMModGetFunction(TVMModuleHandle mod, const char* func_name, int query_imports,
                      TVMFunctionHandle* out) {
  return Guard([&] {
    Check(func_name != nullptr && out != nullptr, "TVMModGetFunction: null argument");
    PackedFunc f = Deref<Module>(mod, "TVMModGetFunction", "module").GetFunction(func_name, query_imports != 0);
    *out = f ? new PackedFunc(std::move(f)) : nullptr;
  });
}

int TVMModFree(TVMModuleHandle mod) {
  return Guard([&] { delete static_cast<Module*>(mod); });
}

int TVMFuncFree(TVMFunctionHandle func) {
  return Guard([&] { delete static_cast<PackedFunc*>(func); });
}

int TVMFuncCall(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes, int num_args,
                TVMValue* ret_val, int* ret_type_code) {
  return Guard([&] {
    const PackedFunc& f = Deref<PackedFunc>(func, "TVMFuncCall", "function");
    Check(num_args == 0 || (arg_values != nullptr && type_codes != nullptr),
          "TVMFuncCall: null arguments");
    Check(ret_val != nullptr && ret_type_code != nullptr, "TVMFuncCall: null return slots");
    RetValue result;
    f.CallPacked(Args(arg_values, type_codes, num_args), &result);
    ReturnToC(result, ret_val, ret_type_code);
  });
}

int TVMFuncCreateFromCFunc(TVMPackedCFunc func, void* resource_handle, TVMPackedCFuncFinalizer fin,
                           TVMFunctionHandle* out) {
  return Guard([&] {
    Check(func != nullptr && out != nullptr, "TVMFuncCreateFromCFunc: null argument");
    std::shared_ptr<void> resource(resource_handle, [fin](void* r) {
      if (fin != nullptr) fin(r);
    });
    *out = new PackedFunc([func, resource](const Args& args, RetValue* result) {
      int status = func(const_cast<TVMValue*>(args.values()), const_cast<int*>(args.codes()),
                        args.size(), result, resource.get());
      if (status != 0) throw Error(LastError().empty() ? "C function failed without a message" : LastError());
    });
  });
}

int TVMCFuncSetReturn(TVMRetValueHandle ret, TVMValue* value, int* type_code, int num_ret) {
  return Guard([&] {
    RetValue& result = Deref<RetValue>(ret, "TVMCFuncSetReturn", "return value");
    Check(num_ret == 1, "TVMCFuncSetReturn: exactly one return value is supported");
    Check(value != nullptr && type_code != nullptr, "TVMCFuncSetReturn: null value");
    // Object values are moved: the caller's reference becomes the return value's.
    switch (*type_code) {
      case kTVMNDArrayHandle: {
        NDArray array = NDArray::FromHandle(static_cast<DLTensor*>(value->v_handle));
        NDArray::FreeHandle(static_cast<DLTensor*>(value->v_handle));
        result.Set(std::move(array));
        break;
      }
      case kTVMModuleHandle: {
        std::unique_ptr<Module> module(static_cast<Module*>(value->v_handle));
        result.Set(*module);
        break;
      }
      case kTVMPackedFuncHandle: {
        std::unique_ptr<PackedFunc> f(static_cast<PackedFunc*>(value->v_handle));
        result.Set(*f);
        break;
      }
      case kTVMBytes: {
        const auto* bytes = static_cast<const TVMByteArray*>(value->v_handle);
        result.SetBytes(std::string(bytes->data, bytes->size));
        break;
      }
      default:
        result.SetPlain(*value, *type_code);
    }
  });
}

int TVMFuncGetGlobal(const char* name, TVMFunctionHandle* out) {
  return Guard([&] {
    Check(name != nullptr && out != nullptr, "TVMFuncGetGlobal: null argument");
    PackedFunc f = GetGlobalFunction(name);
    *out = f ? new PackedFunc(std::move(f)) : nullptr;
  });
}

int TVMFuncRegisterGlobal(const char* name, TVMFunctionHandle f, int override) {
  return Guard([&] {
    Check(name != nullptr, "TVMFuncRegisterGlobal: null name");
    RegisterGlobalFunction(name, Deref<PackedFunc>(f, "TVMFuncRegisterGlobal", "function"),
                           override != 0);
  });
}

int TVMArrayAlloc(const tvm_index_t* shape, int ndim, int dtype_code, int dtype_bits,
                  int dtype_lanes, int device_type, int device_id, TVMArrayHandle* out) {
  return Guard([&] {
    Check(out != nullptr && ndim >= 0 && (ndim == 0 || shape != nullptr),
          "TVMArrayAlloc: null output or shape, or negative ndim");
    Check(dtype_code >= 0 && dtype_code <= 255 && dtype_bits > 0 && dtype_bits <= 255 &&
              dtype_lanes > 0 && dtype_lanes <= 65535,
          "TVMArrayAlloc: dtype (code ", dtype_code, ", bits ", dtype_bits, ", lanes ", dtype_lanes,
          ") is out of range");
    DLDataType dtype{static_cast<uint8_t>(dtype_code), static_cast<uint8_t>(dtype_bits),
                     static_cast<uint16_t>(dtype_lanes)};
    DLDevice device{static_cast<DLDeviceType>(device_type), device_id};
    *out = NDArray::Empty(std::vector<int64_t>(shape, shape + ndim), dtype, device).ReleaseHandle();
  });
}

int TVMArrayFree(TVMArrayHandle handle) {
  return Guard([&] { NDArray::FreeHandle(handle); });
}

int TVMArrayCopyFromBytes(TVMArrayHandle handle, void* data, size_t nbytes) {
  return Guard([&] {
    CheckRawTensor(handle, "TVMArrayCopyFromBytes");
    size_t size = DataBytes(*handle);
    Check(nbytes == size, "TVMArrayCopyFromBytes: the array holds ", size, " bytes, got ", nbytes);
    Check(data != nullptr || nbytes == 0, "TVMArrayCopyFromBytes: null data");
    if (nbytes > 0) std::memcpy(static_cast<char*>(handle->data) + handle->byte_offset, data, nbytes);
  });
}

int TVMArrayCopyToBytes(TVMArrayHandle handle, void* data, size_t nbytes) {
  return Guard([&] {
    CheckRawTensor(handle, "TVMArrayCopyToBytes");
    size_t size = DataBytes(*handle);
    Check(nbytes == size, "TVMArrayCopyToBytes: the array holds ", size, " bytes, got room for ", nbytes);
    Check(data != nullptr || nbytes == 0, "TVMArrayCopyToBytes: null data");
    if (nbytes > 0) std::memcpy(data, static_cast<char*>(handle->data) + handle->byte_offset, nbytes);
  });
}

int TVMArrayCopyFromTo(TVMArrayHandle from, TVMArrayHandle to, TVMStreamHandle) {
  return Guard([&] {
    CheckRawTensor(from, "TVMArrayCopyFromTo");
    CheckRawTensor(to, "TVMArrayCopyFromTo");
    CheckSameType(*to, *from, "TVMArrayCopyFromTo");
    size_t size = DataBytes(*from);
    if (size > 0) {
      std::memcpy(static_cast<char*>(to->data) + to->byte_offset,
                  static_cast<char*>(from->data) + from->byte_offset, size);
    }
  });
}

int TVMBackendGetFuncFromEnv(void* mod_node, const char* func_name, TVMFunctionHandle* out) {
  return Guard([&] {
    Check(mod_node != nullptr && func_name != nullptr && out != nullptr,
          "TVMBackendGetFuncFromEnv: null argument (is the library's __tvm_module_ctx set?)");
    const PackedFunc* f = static_cast<ModuleNode*>(mod_node)->GetFuncFromEnv(func_name);
    Check(f != nullptr, "TVMBackendGetFuncFromEnv: no function '", func_name,
          "' in the module's imports or the global functions");
    *out = const_cast<PackedFunc*>(f);  // owned by the module
  });
}

int TVMBackendRegisterSystemLibSymbol(const char* name, void* ptr) {
  return Guard([&] { RegisterSystemLibSymbol(name, ptr); });
}

void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes, int, int) {
  void* pointer = nullptr;
  int status = Guard([&] {
    Check(device_type == kDLCPU, "TVMBackendAllocWorkspace: device type ", device_type, " (id ",
          device_id, ") is not supported; kiln runs on the CPU only");
    pointer = AllocWorkspace(nbytes);
  });
  return status == 0 ? pointer : nullptr;
}

int TVMBackendFreeWorkspace(int device_type, int, void* ptr) {
  return Guard([&] {
    Check(device_type == kDLCPU, "TVMBackendFreeWorkspace: device type ", device_type,
          " is not supported");
    FreeWorkspace(ptr);
  });
}

int TVMBackendParallelLaunch(FTVMParallelLambda flambda, void* cdata, int num_task) {
  return ParallelLaunch(flambda, cdata, num_task);
}

int TVMBackendParallelBarrier(int task_id, TVMParallelGroupEnv* penv) {
  return ParallelBarrier(task_id, penv);
}

int TVMBackendRunOnce(void** handle, int (*f)(void*), void* cdata, int) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (*handle != nullptr) return 0;
  int status = f(cdata);
  if (status == 0) *handle = reinterpret_cast<void*>(1);
  return status;
}

}  // extern "C"
