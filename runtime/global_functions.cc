// Global functions (TVMFuncGetGlobal / TVMFuncRegisterGlobal). The runtime's own are listed here,
// in plain code, and registered the first time the table is used.
#include <map>
#include <mutex>

#include "runtime/error.h"
#include "runtime/graph_executor_module.h"
#include "runtime/module.h"
#include "runtime/system_lib.h"
#include "runtime/thread_pool.h"

namespace kiln::runtime {
namespace {

// tvm.graph_executor.create(graph_json, lib, devices...) and its debug twin.
PackedFunc MakeExecutorCreator(bool debug) {
  return PackedFunc([debug](const Args& args, RetValue* result) {
    args.CheckCount(debug ? "tvm.graph_executor_debug.create" : "tvm.graph_executor.create", 2, 64);
    int first_device = 2;
    // TVM allows a lookup function for linked parameters here; kiln does not link parameters.
    if (args.size() > 2 && args[2].code() == kTVMPackedFuncHandle) {
      Fail("graph executor create: linked parameters (a lookup function) are not supported");
    }
    auto executor = std::make_shared<GraphExecutor>(ParseGraphJson(args[0].AsString()),
                                                    args[1].AsModule(), DevicesFromArgs(args, first_device));
    result->Set(CreateGraphExecutorModule(executor, debug));
  });
}

std::map<std::string, PackedFunc> RuntimeGlobals() {
  std::map<std::string, PackedFunc> globals;
  globals["tvm.graph_executor.create"] = MakeExecutorCreator(false);
  globals["tvm.graph_executor_debug.create"] = MakeExecutorCreator(true);
  globals["runtime.SystemLib"] = PackedFunc([](const Args& args, RetValue* result) {
    args.CheckCount("runtime.SystemLib", 0, 1);
    result->Set(GetSystemLib(args.size() == 1 ? args[0].AsString() : ""));
  });
  globals["runtime.module.loadfile_so"] = PackedFunc([](const Args& args, RetValue* result) {
    args.CheckCount("runtime.module.loadfile_so", 1, 2);
    result->Set(LoadModuleFromFile(args[0].AsString(), "so"));
  });
  globals["runtime.NumThreads"] = PackedFunc([](const Args& args, RetValue* result) {
    args.CheckCount("runtime.NumThreads", 0, 0);
    result->SetInt(NumThreads());
  });
  // runtime.config_threadpool(mode, nthreads): kiln has one kind of core, so mode is ignored.
  globals["runtime.config_threadpool"] = PackedFunc([](const Args& args, RetValue*) {
    args.CheckCount("runtime.config_threadpool", 2, 2);
    SetNumThreads(static_cast<int>(args[1].AsInt()));
  });
  return globals;
}

struct GlobalTable {
  std::mutex mutex;
  std::map<std::string, PackedFunc> functions = RuntimeGlobals();
};

GlobalTable& Globals() {
  static GlobalTable* table = new GlobalTable();  // never destroyed, like the functions in it
  return *table;
}

}  // namespace

PackedFunc GetGlobalFunction(const std::string& name) {
  GlobalTable& table = Globals();
  std::lock_guard<std::mutex> lock(table.mutex);
  auto it = table.functions.find(name);
  return it == table.functions.end() ? PackedFunc() : it->second;
}

void RegisterGlobalFunction(const std::string& name, PackedFunc f, bool override_existing) {
  Check(f.defined(), "cannot register an empty function as '", name, "'");
  GlobalTable& table = Globals();
  std::lock_guard<std::mutex> lock(table.mutex);
  auto [it, inserted] = table.functions.emplace(name, f);
  if (inserted) return;
  Check(override_existing, "global function '", name, "' is already registered");
  it->second = std::move(f);
}

}  // namespace kiln::runtime
