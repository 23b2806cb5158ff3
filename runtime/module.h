// Modules: named collections of packed functions with imports, a type key and, for modules that
// travel inside a library's `__tvm_dev_mblob`, a binary form. Loading a library file builds the
// module tree (DSO module + the modules of its import blob); each blob entry is read by the
// loader registered for its type key in module_loaders.cc.
//
// Thread safety: GetFunction and the environment lookup may be called from any thread.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/packed_func.h"
#include "runtime/stream.h"

namespace kiln::runtime {

class ModuleNode : public std::enable_shared_from_this<ModuleNode> {
 public:
  virtual ~ModuleNode() = default;
  virtual const char* type_key() const = 0;
  // An empty PackedFunc when the module has no such function. Returned functions keep the
  // module alive.
  virtual PackedFunc GetFunction(const std::string& name) = 0;

  // Modules written into an import blob under their type key.
  virtual bool IsBinarySerializable() const { return false; }
  virtual void SaveToBinary(ByteWriter& writer) const;
  // The compiled code of a library itself (written as `_lib` in the import blob).
  virtual bool IsDSOExportable() const { return false; }

  const std::vector<Module>& imports() const { return imports_; }
  void Import(Module module) { imports_.push_back(std::move(module)); }

  // What TVMBackendGetFuncFromEnv answers: `name` from the imports, else a global function. The
  // returned pointer stays valid while the module lives; null when nothing has that name.
  const PackedFunc* GetFuncFromEnv(const std::string& name);

 private:
  std::vector<Module> imports_;
  std::mutex env_mutex_;
  std::map<std::string, PackedFunc> env_functions_;
};

// Reads a module of one type key from its binary form in an import blob.
using BinaryLoader = Module (*)(ByteReader& reader);
// The loader for `type_key`, or null when this build has none (module_loaders.cc lists them).
// Loading an import blob falls back to a global function `runtime.module.loadbinary_<type_key>`
// taking the ByteReader* as an opaque handle and returning the module.
BinaryLoader FindBinaryLoader(const std::string& type_key);
// For a type key whose runtime lives in a library of its own (dnnl_json: libkiln_dnnl, found
// beside libkiln_runtime or on the library path): loads it, which registers its
// `runtime.module.loadbinary_<type_key>`, and returns true; false with `why` set when that fails,
// false with `why` untouched for any other key.
bool LoadRuntimeLibraryFor(const std::string& type_key, std::string* why);

// Loads a library file (`.so`, format "so" or deduced from the extension) and the module tree of
// its import blob; returns the root. Throws Error for a missing or malformed file.
Module LoadModuleFromFile(const std::string& path, const std::string& format = "");

// Builds the module tree from an import blob payload (without its 8-byte length prefix). `lib` is
// the module holding the compiled code (the `_lib` entries). Returns the root.
Module ProcessModuleBlob(std::string_view payload, const Module& lib);
// The import blob payload (without length prefix) describing `root` and its imports: what
// export_library puts into `__tvm_dev_mblob`.
std::string SerializeModuleBlob(const Module& root);

// Global functions (TVMFuncGetGlobal). The runtime's own are listed in global_functions.cc.
PackedFunc GetGlobalFunction(const std::string& name);  // empty when absent
void RegisterGlobalFunction(const std::string& name, PackedFunc f, bool override_existing);

}  // namespace kiln::runtime

#include "kiln/c_backend_api.h"

namespace kiln::runtime {

// A PackedFunc over a compiled operator of the packed C ABI; a non-zero return becomes an Error
// carrying the message the operator set with TVMAPISetLastError. `owner` is kept alive.
PackedFunc WrapCompiledFunction(TVMBackendPackedCFunc function, std::shared_ptr<ModuleNode> owner);

}  // namespace kiln::runtime
