// The system library: operators linked statically into the executable register their symbols
// with TVMBackendRegisterSystemLibSymbol (from a static constructor of the generated code); the
// SystemLib module serves them, optionally under a symbol prefix so that several models can
// live in one binary. `<prefix>__tvm_dev_mblob`, when registered, supplies the module tree.
#include "runtime/system_lib.h"

#include <cstring>
#include <map>
#include <mutex>

#include "runtime/error.h"

namespace kiln::runtime {
namespace {

struct SymbolTable {
  std::mutex mutex;
  std::map<std::string, void*> symbols;
};

SymbolTable& Symbols() {
  static SymbolTable* table = new SymbolTable();  // never destroyed: constructors of other
  return *table;                                  // translation units may still register
}

void* FindSymbol(const std::string& name) {
  SymbolTable& table = Symbols();
  std::lock_guard<std::mutex> lock(table.mutex);
  auto it = table.symbols.find(name);
  return it == table.symbols.end() ? nullptr : it->second;
}

class SystemLibModuleNode final : public ModuleNode {
 public:
  explicit SystemLibModuleNode(std::string prefix) : prefix_(std::move(prefix)) {}
  const char* type_key() const override { return "system_lib"; }
  bool IsDSOExportable() const override { return true; }

  PackedFunc GetFunction(const std::string& name) override {
    std::string symbol = name;
    if (name == "__tvm_main__") {
      const char* entry = static_cast<const char*>(FindSymbol(prefix_ + "__tvm_main__"));
      if (entry == nullptr) return PackedFunc();
      symbol = entry;
    }
    auto* function = reinterpret_cast<TVMBackendPackedCFunc>(FindSymbol(prefix_ + symbol));
    if (function == nullptr) return PackedFunc();
    return WrapCompiledFunction(function, shared_from_this());
  }

 private:
  std::string prefix_;
};

}  // namespace

void RegisterSystemLibSymbol(const char* name, void* pointer) {
  Check(name != nullptr, "TVMBackendRegisterSystemLibSymbol: the name is null");
  SymbolTable& table = Symbols();
  std::lock_guard<std::mutex> lock(table.mutex);
  auto [it, inserted] = table.symbols.emplace(name, pointer);
  Check(inserted || it->second == pointer, "system library symbol '", name,
        "' is registered twice with different addresses (two models without distinct prefixes?)");
}

Module GetSystemLib(const std::string& prefix) {
  static std::mutex mutex;
  static std::map<std::string, Module>* cache = new std::map<std::string, Module>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache->find(prefix);
  if (it != cache->end()) return it->second;

  auto node = std::make_shared<SystemLibModuleNode>(prefix);
  Module lib(node);
  Module root = lib;
  if (const char* blob = static_cast<const char*>(FindSymbol(prefix + "__tvm_dev_mblob"))) {
    uint64_t nbytes = 0;
    std::memcpy(&nbytes, blob, sizeof(nbytes));
    root = ProcessModuleBlob(std::string_view(blob + sizeof(nbytes), nbytes), lib);
  }
  if (void** context = static_cast<void**>(FindSymbol(prefix + "__tvm_module_ctx"))) {
    *context = node.get();
  }
  cache->emplace(prefix, root);
  return root;
}

}  // namespace kiln::runtime
