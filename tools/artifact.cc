// Opening artifacts in either form.
#include "tools/artifact.h"

#include <filesystem>

#include "runtime/error.h"
#include "runtime/graph_executor_module.h"
#include "runtime/params.h"

namespace kiln::tools {

Artifact OpenArtifact(const std::string& path, bool debug) {
  namespace fs = std::filesystem;
  Artifact a;
  a.debug = debug;
  runtime::Module gmod;
  if (fs::is_directory(path)) {
    for (const char* file : {"mod.so", "mod.json", "mod.params"}) {
      runtime::Check(fs::exists(fs::path(path) / file), "'", path, "' is a directory without ", file,
                     " (expected the tvmc layout: mod.so, mod.json, mod.params)");
    }
    a.lib = runtime::LoadModuleFromFile((fs::path(path) / "mod.so").string());
    a.graph_json = runtime::ReadFile((fs::path(path) / "mod.json").string());
    a.params = runtime::ReadFile((fs::path(path) / "mod.params").string());
    const char* create = debug ? "tvm.graph_executor_debug.create" : "tvm.graph_executor.create";
    gmod = runtime::GetGlobalFunction(create)(a.graph_json, a.lib, int{kDLCPU}, 0).AsModule();
    a.executor = runtime::GetGraphExecutor(gmod);
    a.executor->LoadParams(a.params);
    return a;
  }
  runtime::Check(fs::exists(path), "'", path, "' does not exist");
  a.lib = runtime::LoadModuleFromFile(path);
  runtime::PackedFunc get_json = a.lib.GetFunction("get_graph_json");
  runtime::Check(get_json.defined(), "'", path, "' holds no graph (it is not a model library exported by kiln compile;"
                 " for operators only, use the tvmc layout)");
  a.graph_json = get_json().AsString();
  gmod = debug ? a.lib.GetFunction("debug_create")("default", runtime::kCPU).AsModule()
               : a.lib.GetFunction("default")(runtime::kCPU).AsModule();
  a.executor = runtime::GetGraphExecutor(gmod);
  return a;
}

}  // namespace kiln::tools
