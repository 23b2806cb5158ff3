// The build pipeline and export.
#include "backend/build.h"

#include <filesystem>
#include <fstream>

#include "backend/codegen/host_codegen.h"
#include "backend/graph_codegen.h"
#include "runtime/error.h"
#include "runtime/graph_executor_factory.h"
#include "transform/fuse_ops.h"

namespace kiln::backend {
namespace {

// Stands for the compiled code in the import tree of an exported library (written as `_lib`).
class CompiledCode final : public runtime::ModuleNode {
 public:
  const char* type_key() const override { return "library"; }
  bool IsDSOExportable() const override { return true; }
  runtime::PackedFunc GetFunction(const std::string&) override { return runtime::PackedFunc(); }
};

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  runtime::Check(out.good(), "cannot write '", path, "'");
}

}  // namespace

ExecutorFactory Build(const ir::Expr& main, const BuildOptions& options, BuildReport* report) {
  runtime::Check(options.opt_level >= 0 && options.opt_level <= 3, "opt_level must be 0 to 3, got ", options.opt_level);
  transform::FuseOptions fuse;
  fuse.max_depth = options.opt_level == 0 ? 1 : 256;  // as TVM: no fusion at opt level 0
  ir::Expr fused = transform::FuseOps(main, fuse);
  GraphCodegenResult graph = GenerateGraph(fused, options.module_name);
  std::vector<SourceFile> sources;
  for (const OperatorFunction& f : graph.functions) {
    sources.push_back({f.symbol + ".cc", OperatorSourcePrelude() + GenerateOperatorSource(f.symbol, f.function)});
  }
  BuildReport local;
  BuildReport& r = report != nullptr ? *report : local;
  r.primitive_functions = static_cast<int>(graph.functions.size());
  r.planned_bytes = graph.planned_bytes;
  r.unshared_bytes = graph.unshared_bytes;
  std::vector<std::string> objects = CompileObjects(sources, options.compiler, &r.compile);
  return ExecutorFactory(runtime::WriteGraphJson(graph.graph), std::move(graph.params), std::move(objects),
                         options.module_name, options.compiler);
}

void ExecutorFactory::ExportLibrary(const std::string& path) const {
  runtime::Module code(std::make_shared<CompiledCode>());
  runtime::Module factory = runtime::CreateGraphExecutorFactory(graph_json_, params_, module_name_, code);
  LinkSharedLibrary(objects_, runtime::SerializeModuleBlob(factory), path, compiler_);
}

void ExecutorFactory::ExportThreeFiles(const std::string& directory) const {
  std::filesystem::create_directories(directory);
  LinkSharedLibrary(objects_, "", directory + "/mod.so", compiler_);
  WriteFile(directory + "/mod.json", graph_json_);
  WriteFile(directory + "/mod.params", runtime::SaveParams(params_));
}

}  // namespace kiln::backend
