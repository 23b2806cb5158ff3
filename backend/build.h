// build and export_library: the compile flow from a main function to an executor factory
// (graph JSON + compiled operators + params) and from the factory to files the runtime loads.
#pragma once

#include <string>
#include <vector>

#include "backend/compiler.h"
#include "backend/external_codegen.h"
#include "ir/dim_samples.h"
#include "ir/expr.h"
#include "runtime/module.h"
#include "runtime/params.h"
#include "transform/pass_context.h"
#include "transform/pipeline.h"

namespace kiln::backend {

// The target a --target string names (MarchForTarget's forms): this machine for "native", "cpu"
// and "llvm"; for a named CPU, its instruction set as the compiler sees it (CompilerIsa) with this
// machine's cores and caches. Says whether this build has the oneDNN codegen.
target::Target ResolveTarget(const std::string& text, const CompilerOptions& options = {});

struct BuildOptions {
  transform::PassContext pass_context;  // opt level, required/disabled passes, config, printing
  std::string module_name = "default";
  // What to compile for: passes and lowering choose kernels for it (target/kernel_choice.h), and
  // the compiler gets its -march (replacing compiler.march).
  target::Target target = ResolveTarget("native");
  CompilerOptions compiler;
  // Values for parameters of `main`, by name (TVM's relay.build params): each becomes a constant
  // and is no longer an input. A name main has no parameter of, or a value of another shape or
  // dtype, is an Error.
  runtime::NamedArrays params;
  // The codegens external functions are sent to; null: ExternalCodegens(), this build's table.
  const std::vector<ExternalCodegen>* external_codegens = nullptr;
  // A model with shape dimensions: its main function at each sample (the first is the main
  // function Build is given), compiled into one library for every value (generalize_dims.h).
  const ir::DimSamples* dim_samples = nullptr;
};

struct BuildReport {
  int imported_ops = 0;         // op calls before optimization
  int primitive_functions = 0;  // distinct compiled operator functions
  int primitive_calls = 0;      // operator calls in the graph
  std::vector<transform::PassTiming> pass_timings;
  CompileReport compile;
  int64_t planned_bytes = 0;
  int64_t unshared_bytes = 0;
};

// What Build returns (TVM's GraphExecutorFactoryModule before export): the graph, its params and
// the modules holding its code. Without external functions the code is kiln's compiled host code
// (a HostCodeModule); with them, as in TVM v0.19, a const-loader module holding the external
// constants, which imports the host code and one module per external function. Export writes
// the tree factory -> code.
class ExecutorFactory {
 public:
  ExecutorFactory(std::string graph_json, runtime::NamedArrays params, runtime::Module host,
                  std::vector<ExternalModule> external, std::string module_name, CompilerOptions compiler);

  const std::string& graph_json() const { return graph_json_; }
  const runtime::NamedArrays& params() const { return params_; }
  const std::string& module_name() const { return module_name_; }
  // The root of the code: the host code module, or the const loader above it and the external
  // modules.
  const runtime::Module& code() const { return code_; }
  const std::vector<runtime::Module>& external_modules() const { return external_; }
  // The C++ of the compiled operator functions (TVM's lib.get_lib().get_source()).
  const std::string& GetSource() const;

  // One shared library holding the operators and, in its import blob, the graph and params:
  // `load_module(path)["default"](cpu)` runs it (TVM's export_library).
  void ExportLibrary(const std::string& path) const;
  // The three-file form: <dir>/mod.so (operators only), mod.json, mod.params (tvmc's layout).
  void ExportThreeFiles(const std::string& directory) const;
  // The module ExportLibrary + LoadModuleFromFile would give, without a file to keep: the library
  // is linked to a unique temporary file, loaded and the file removed (the code stays mapped).
  runtime::Module Load() const;

 private:
  // The object files of the host code.
  std::vector<std::string> Objects() const;

  std::string graph_json_;
  runtime::NamedArrays params_;
  runtime::Module host_;
  runtime::Module code_;
  std::vector<runtime::Module> external_;
  std::string module_name_;
  CompilerOptions compiler_;
};

// `main` with the named parameters replaced by constants (see BuildOptions::params).
ir::Expr BindParams(const ir::Expr& main, const runtime::NamedArrays& params);

// Optimizes (the pass pipeline), lowers and compiles `main`; pass output (printed IR, timings)
// goes to `log`. Throws Error for what cannot be compiled.
ExecutorFactory Build(const ir::Expr& main, const BuildOptions& options = {}, BuildReport* report = nullptr,
                      std::ostream* log = nullptr);

}  // namespace kiln::backend
