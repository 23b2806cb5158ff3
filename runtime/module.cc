// ModuleNode basics, environment lookups, and reading/writing the import blob that ties the
// modules of a library together (`__tvm_dev_mblob`, see tvm-formats.md A.3).
#include "runtime/module.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "runtime/error.h"
#include "runtime/last_error.h"

namespace kiln::runtime {
namespace {

constexpr const char* kLibKey = "_lib";
constexpr const char* kImportTreeKey = "_import_tree";
constexpr size_t kMaxImportDepth = 64;

// Checks the CSR import tree and returns, per module, the modules it imports. Rejects cycles
// and trees deeper than kMaxImportDepth (lookups through imports recurse).
std::vector<std::vector<size_t>> CheckImportTree(const std::vector<uint64_t>& row_ptr,
                                                 const std::vector<uint64_t>& children,
                                                 size_t num_modules, ByteReader& reader) {
  if (row_ptr.size() != num_modules + 1) {
    reader.FailAt(StrCat("import tree has ", row_ptr.size(), " row pointers for ", num_modules,
                         " modules (expected ", num_modules + 1, ")"));
  }
  if (row_ptr.front() != 0 || row_ptr.back() != children.size()) {
    reader.FailAt("import tree row pointers do not span its child list");
  }
  std::vector<std::vector<size_t>> imports(num_modules);
  std::vector<size_t> in_degree(num_modules, 0);
  for (size_t m = 0; m < num_modules; ++m) {
    if (row_ptr[m] > row_ptr[m + 1]) reader.FailAt("import tree row pointers decrease");
  }
  for (size_t m = 0; m < num_modules; ++m) {
    for (uint64_t j = row_ptr[m]; j < row_ptr[m + 1]; ++j) {
      if (children[j] >= num_modules) {
        reader.FailAt(StrCat("import tree: module ", m, " imports module ", children[j],
                             " but there are only ", num_modules));
      }
      imports[m].push_back(children[j]);
      ++in_degree[children[j]];
    }
  }
  // Kahn's algorithm: every module must be reached, else there is a cycle.
  std::vector<size_t> depth(num_modules, 1);
  std::deque<size_t> ready;
  for (size_t m = 0; m < num_modules; ++m) {
    if (in_degree[m] == 0) ready.push_back(m);
  }
  size_t visited = 0;
  while (!ready.empty()) {
    size_t m = ready.front();
    ready.pop_front();
    ++visited;
    for (size_t child : imports[m]) {
      depth[child] = std::max(depth[child], depth[m] + 1);
      if (depth[child] > kMaxImportDepth) {
        reader.FailAt(StrCat("import tree is deeper than ", kMaxImportDepth, " levels"));
      }
      if (--in_degree[child] == 0) ready.push_back(child);
    }
  }
  if (visited != num_modules) reader.FailAt("import tree has a cycle");
  return imports;
}

// A module of type `key` from its blob entry: by the loader this build lists, else by a global
// function `runtime.module.loadbinary_<key>` (TVM's convention, so runtimes outside libkiln_runtime
// can register theirs) called with the ByteReader* as an opaque handle.
Module LoadBinaryModule(const std::string& key, ByteReader& reader) {
  if (BinaryLoader loader = FindBinaryLoader(key)) return loader(reader);
  PackedFunc load = GetGlobalFunction("runtime.module.loadbinary_" + key);
  if (!load) {
    std::string why;
    if (LoadRuntimeLibraryFor(key, &why)) load = GetGlobalFunction("runtime.module.loadbinary_" + key);
    if (!why.empty()) reader.FailAt(why);
  }
  if (!load) reader.FailAt(StrCat("module type '", key, "' is not supported by this build of kiln"));
  Module module = load(static_cast<void*>(&reader)).AsModule();
  if (!module.defined()) reader.FailAt(StrCat("the loader of module type '", key, "' returned no module"));
  return module;
}

}  // namespace

void ModuleNode::SaveToBinary(ByteWriter&) const {
  Fail("module of type '", type_key(), "' cannot be serialized");
}

const PackedFunc* ModuleNode::GetFuncFromEnv(const std::string& name) {
  std::lock_guard<std::mutex> lock(env_mutex_);
  auto it = env_functions_.find(name);
  if (it != env_functions_.end()) return &it->second;
  PackedFunc f;
  for (const Module& import : imports_) {
    f = import.GetFunction(name, true);
    if (f) break;
  }
  if (!f) f = GetGlobalFunction(name);
  if (!f) return nullptr;
  return &env_functions_.emplace(name, std::move(f)).first->second;
}

PackedFunc WrapCompiledFunction(TVMBackendPackedCFunc function, std::shared_ptr<ModuleNode> owner) {
  return PackedFunc([function, owner = std::move(owner)](const Args& args, RetValue* result) {
    TVMValue ret{};
    int ret_code = kTVMNullptr;
    int status = function(const_cast<TVMValue*>(args.values()), const_cast<int*>(args.codes()),
                          args.size(), &ret, &ret_code, nullptr);
    if (status != 0) {
      const std::string& message = LastError();
      throw Error(message.empty() ? "compiled function failed without setting an error message"
                                  : message);
    }
    result->SetPlain(ret, ret_code);
  });
}

Module ProcessModuleBlob(std::string_view payload, const Module& lib) {
  ByteReader reader(payload, "library import blob (__tvm_dev_mblob)");
  uint64_t count = reader.ReadCount("entry count", sizeof(uint64_t));
  std::vector<Module> modules;
  std::vector<uint64_t> row_ptr, children;
  bool has_tree = false, has_lib = false;
  for (uint64_t i = 0; i < count; ++i) {
    std::string key = reader.ReadString("entry type key");
    if (key == kLibKey) {
      // Like TVM: all compiled code is one library. Two entries would be one module at two
      // places in the tree, so a tree could make it import itself (a reference cycle).
      if (has_lib) reader.FailAt("more than one '_lib' entry");
      has_lib = true;
      modules.push_back(lib);
    } else if (key == kImportTreeKey) {
      if (has_tree) reader.FailAt("more than one import tree");
      row_ptr = reader.ReadU64Vector("import tree row pointers");
      children = reader.ReadU64Vector("import tree children");
      has_tree = true;
    } else {
      modules.push_back(LoadBinaryModule(key, reader));
    }
  }
  if (reader.remaining() != 0) {
    reader.FailAt(StrCat(reader.remaining(), " bytes are left after the last entry"));
  }
  if (!has_tree) {
    // Libraries from before the import tree: every module is an import of the library.
    for (Module& m : modules) {
      if (m.get() != lib.get()) lib->Import(m);
    }
    return lib;
  }
  if (modules.empty()) reader.FailAt("import tree without modules");
  std::vector<std::vector<size_t>> imports = CheckImportTree(row_ptr, children, modules.size(), reader);
  for (size_t m = 0; m < modules.size(); ++m) {
    for (size_t child : imports[m]) modules[m]->Import(modules[child]);
  }
  return modules[0];
}

std::string SerializeModuleBlob(const Module& root) {
  // Numbered as TVM v0.19's ModuleSerializer (src/target/codegen.cc) numbers them, so kiln writes
  // the bytes TVM writes: a depth-first walk first numbers the modules outside compiled code; all
  // compiled (DSO-exportable) modules are then one library, one `_lib` entry, numbered after them;
  // a second walk from the library numbers what it imports. Each walk pops the last module pushed.
  std::vector<std::vector<ModuleNode*>> entries;  // per index, the module(s) written there
  std::map<ModuleNode*, size_t> index_of;
  std::set<ModuleNode*> visited = {root.get()};
  auto push_imports = [&](ModuleNode* m, std::vector<ModuleNode*>& stack) {
    for (const Module& child : m->imports()) {
      if (visited.insert(child.get()).second) stack.push_back(child.get());
    }
  };
  auto number = [&](ModuleNode* m) {
    index_of[m] = entries.size();
    entries.push_back({m});
  };
  std::vector<ModuleNode*> stack = {root.get()}, compiled;
  while (!stack.empty()) {
    ModuleNode* m = stack.back();
    stack.pop_back();
    if (m->IsDSOExportable()) {
      compiled.push_back(m);
    } else {
      number(m);
      push_imports(m, stack);
    }
  }
  if (!compiled.empty()) {
    size_t lib_index = entries.size();
    entries.emplace_back();
    stack = std::move(compiled);
    while (!stack.empty()) {
      ModuleNode* m = stack.back();
      stack.pop_back();
      if (m->IsDSOExportable()) {
        index_of[m] = lib_index;
        entries[lib_index].push_back(m);
      } else {
        number(m);
      }
      push_imports(m, stack);
    }
  }
  std::vector<uint64_t> row_ptr = {0}, children;
  for (size_t index = 0; index < entries.size(); ++index) {
    for (ModuleNode* m : entries[index]) {
      for (const Module& child : m->imports()) {
        size_t child_index = index_of.at(child.get());
        if (child_index != index) children.push_back(child_index);
      }
    }
    row_ptr.push_back(children.size());
  }

  ByteWriter writer;
  writer.Write<uint64_t>(entries.size() + 1);
  for (const std::vector<ModuleNode*>& group : entries) {
    ModuleNode* m = group.front();
    if (m->IsDSOExportable()) {
      writer.WriteString(kLibKey);
    } else {
      Check(m->IsBinarySerializable(), "module of type '", m->type_key(),
            "' cannot be exported into a library");
      writer.WriteString(m->type_key());
      m->SaveToBinary(writer);
    }
  }
  writer.WriteString(kImportTreeKey);
  writer.WriteU64Vector(row_ptr);
  writer.WriteU64Vector(children);
  return writer.Take();
}

}  // namespace kiln::runtime
