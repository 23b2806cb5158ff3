// The DSO module: a compiled library opened with dlopen. Loading fills the library's `__TVM*`
// context pointers and `__tvm_module_ctx`, then builds the module tree of its `__tvm_dev_mblob`.
#include <dlfcn.h>

#include <cstring>
#include <map>
#include <mutex>

#include "runtime/error.h"
#include "runtime/library_file.h"
#include "runtime/module.h"
#include "runtime/text.h"

namespace kiln::runtime {
namespace {

class DSOModuleNode final : public ModuleNode {
 public:
  explicit DSOModuleNode(void* handle) : handle_(handle) {}
  ~DSOModuleNode() override { dlclose(handle_); }

  const char* type_key() const override { return "library"; }
  bool IsDSOExportable() const override { return true; }

  PackedFunc GetFunction(const std::string& name) override {
    std::string symbol = name;
    if (name == "__tvm_main__") {
      // `__tvm_main__` holds the name of the entry function.
      const char* entry = static_cast<const char*>(Symbol("__tvm_main__"));
      if (entry == nullptr) return PackedFunc();
      symbol = entry;
    }
    auto* function = reinterpret_cast<TVMBackendPackedCFunc>(Symbol(symbol.c_str()));
    if (function == nullptr) return PackedFunc();
    return WrapCompiledFunction(function, shared_from_this());
  }

  void* Symbol(const char* name) const { return dlsym(handle_, name); }

  // Stores the runtime's functions into the library's context pointers (those it has).
  void InitContextFunctions() {
    struct Slot { const char* name; void* function; };
    const Slot slots[] = {
        {"__TVMFuncCall", reinterpret_cast<void*>(&TVMFuncCall)},
        {"__TVMAPISetLastError", reinterpret_cast<void*>(&TVMAPISetLastError)},
        {"__TVMBackendGetFuncFromEnv", reinterpret_cast<void*>(&TVMBackendGetFuncFromEnv)},
        {"__TVMBackendAllocWorkspace", reinterpret_cast<void*>(&TVMBackendAllocWorkspace)},
        {"__TVMBackendFreeWorkspace", reinterpret_cast<void*>(&TVMBackendFreeWorkspace)},
        {"__TVMBackendParallelLaunch", reinterpret_cast<void*>(&TVMBackendParallelLaunch)},
        {"__TVMBackendParallelBarrier", reinterpret_cast<void*>(&TVMBackendParallelBarrier)},
    };
    for (const Slot& slot : slots) {
      if (void** pointer = static_cast<void**>(Symbol(slot.name))) *pointer = slot.function;
    }
  }

  // The import blob payload. CheckLibraryFile has checked, before dlopen, that the symbol holds the
  // length it starts with and that many bytes.
  std::string_view ImportBlob() const {
    const char* blob = static_cast<const char*>(Symbol("__tvm_dev_mblob"));
    if (blob == nullptr) return {};
    uint64_t nbytes = 0;
    std::memcpy(&nbytes, blob, sizeof(nbytes));
    return std::string_view(blob + sizeof(uint64_t), nbytes);
  }

 private:
  void* handle_;
};

}  // namespace

Module LoadModuleFromFile(const std::string& path, const std::string& format) {
  std::string fmt = format;
  if (fmt.empty()) {
    size_t dot = path.rfind('.');
    fmt = dot == std::string::npos ? "" : path.substr(dot + 1);
  }
  Check(fmt == "so" || fmt == "dso", "cannot load '", path, "': format '", fmt,
        "' is not a library this runtime loads (expected a .so file)");
  // RTLD_LOCAL keeps the operators of two libraries apart; they find the runtime's API through
  // the context pointers set below or through libkiln_runtime's global symbols.
  // A name without a slash would be searched on the library path, not in the current directory.
  std::string dl_path = path.find('/') == std::string::npos ? "./" + path : path;
  CheckLibraryFile(path);  // a damaged file gets an error here instead of a crash in the loader
  // RTLD_NOW: a symbol the library needs and nothing provides is an error here; bound lazily, it
  // would make the loader end the process at the first call.
  void* handle = dlopen(dl_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();  // may quote names from the file
    Fail("cannot load library '", path, "': ", why != nullptr ? ValidUtf8(why) : "unknown dlopen error");
  }
  // A library's globals (context pointers, __tvm_module_ctx) exist once per process, so while a
  // module tree of the library is alive, loading it again returns that tree instead of pointing
  // the globals at a second one.
  static std::mutex mutex;
  static std::map<void*, std::weak_ptr<ModuleNode>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (std::shared_ptr<ModuleNode> alive = loaded[handle].lock()) {
    dlclose(handle);  // drop the reference this dlopen added; the live module holds one
    return Module(alive);
  }
  auto node = std::make_shared<DSOModuleNode>(handle);
  node->InitContextFunctions();
  Module lib(node);
  Module root = lib;
  std::string_view blob = node->ImportBlob();
  if (blob.data() != nullptr) {
    try {
      root = ProcessModuleBlob(blob, lib);
    } catch (const Error& e) {
      Fail("cannot load library '", path, "': ", e.what());
    }
  }
  if (void** context = static_cast<void**>(node->Symbol("__tvm_module_ctx"))) *context = node.get();
  loaded[handle] = root.node();
  return root;
}

}  // namespace kiln::runtime
