// Compile, load, run once.
#include "backend/constant_evaluator.h"

#include <unistd.h>

#include <filesystem>

#include "backend/codegen/host_codegen.h"
#include "backend/graph_codegen.h"
#include "runtime/error.h"
#include "runtime/graph_executor.h"
#include "runtime/module.h"
#include "transform/fuse_ops.h"

namespace kiln::backend {

std::vector<runtime::NDArray> EvaluateConstantFunction(const ir::Expr& function, const CompilerOptions& options) {
  GraphCodegenResult graph = GenerateGraph(transform::FuseOps(function), "fold");
  std::vector<SourceFile> sources;
  for (const OperatorFunction& f : graph.functions) {
    sources.push_back({f.symbol + ".cc", OperatorSourcePrelude() + GenerateOperatorSource(f.symbol, f.function)});
  }
  std::vector<std::string> objects = CompileObjects(sources, options);
  std::string path = MakeTempFile(std::filesystem::temp_directory_path().string(), "kiln-fold-", ".so");
  runtime::Module lib;
  try {
    LinkSharedLibrary(objects, "", path, options);
    lib = runtime::LoadModuleFromFile(path);
  } catch (...) {
    std::filesystem::remove(path);
    throw;
  }
  std::filesystem::remove(path);  // the loaded library stays mapped
  runtime::GraphExecutor executor(graph.graph, lib);
  executor.LoadParams(graph.params);
  executor.Run();
  std::vector<runtime::NDArray> values;
  for (int i = 0; i < executor.NumOutputs(); ++i) values.push_back(executor.GetOutput(i).Clone());
  return values;
}

}  // namespace kiln::backend
