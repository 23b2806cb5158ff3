// The build pipeline and export.
#include "backend/build.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "backend/codegen/host_codegen.h"
#include "backend/generalize_dims.h"
#include "backend/graph_codegen.h"
#include "backend/c_source_module.h"
#include "backend/host_module.h"
#include "backend/linked_params.h"
#include "ir/provenance.h"
#include "runtime/const_loader_module.h"
#include "runtime/error.h"
#include "runtime/text.h"
#include "runtime/graph_executor_factory.h"

namespace kiln::backend {
namespace {

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  runtime::Check(out.good(), "cannot write '", path, "'");
}

// The graph, params and operator sources of `main` (the pass pipeline, graph codegen, lowering),
// and the external functions still to generate. Passes print to `log` when given.
struct GeneratedCode {
  SampleCode code;
  std::map<std::string, std::string> implementations;  // function symbol -> what computes it
  std::vector<OperatorFunction> external_functions;
};

GeneratedCode Generate(const ir::Expr& main, const BuildOptions& options, int num_dims, BuildReport& r,
                       std::ostream* log) {
  transform::PassEnvironment environment{options.pass_context, options.target};
  std::ostringstream discard;
  ir::Expr fused = transform::RunPipeline(main, environment, log != nullptr ? *log : discard, &r.pass_timings);
  GraphCodegenResult graph = runtime::ReportingBugsAt([] { return std::string("planning the graph"); },
                                                      [&] { return GenerateGraph(fused, options.module_name); });
  GeneratedCode generated;
  for (const OperatorFunction& f : graph.functions) {
    runtime::ReportingBugsAt([&] { return "generating code for " + f.symbol + ir::DescribeSources(f.function); }, [&] {
      Plan plan = LowerPrimitiveFunction(f.symbol, f.function, options.target, num_dims > 0);
      FunctionSource source{f.symbol, GenerateOperatorSource(plan, f.batched, num_dims), ""};
      if (num_dims > 0) {
        Plan fixed = LowerPrimitiveFunction(f.symbol, f.function, options.target);
        source.fixed_source = GenerateOperatorSource(fixed, f.batched, num_dims);
      }
      generated.code.functions.push_back(std::move(source));
      generated.implementations[f.symbol] = plan.Implementations();
    });
  }
  r.primitive_functions = static_cast<int>(graph.functions.size());
  for (const runtime::GraphNode& node : graph.graph.nodes) r.primitive_calls += node.is_input() ? 0 : 1;
  r.planned_bytes = graph.planned_bytes;
  r.unshared_bytes = graph.unshared_bytes;
  generated.code.graph = std::move(graph.graph);
  generated.code.params = std::move(graph.params);
  generated.external_functions = std::move(graph.external_functions);
  return generated;
}

}  // namespace

ir::Expr BindParams(const ir::Expr& main, const runtime::NamedArrays& params) {
  if (params.empty()) return main;
  const auto* function = main->As<ir::FunctionNode>();
  runtime::Check(function != nullptr, "build: main is not a function");
  std::map<std::string, const runtime::NDArray*> values;
  for (const auto& [name, value] : params) {
    runtime::Check(value.defined(), "build: param '", name, "' has no value");
    runtime::Check(values.emplace(name, &value).second, "build: param '", name, "' is given twice");
  }
  std::map<const ir::ExprNode*, ir::Expr> constants;
  std::vector<ir::Expr> kept;
  std::string names;
  for (const ir::Expr& param : function->params) {
    const std::string& name = param->As<ir::VarNode>()->name;
    names += (names.empty() ? "" : ", ") + name;
    auto it = values.find(name);
    if (it == values.end()) {
      kept.push_back(param);
      continue;
    }
    ir::Expr constant = ir::Constant(it->second->Clone());  // later changes to the array do not leak in
    runtime::Check(constant->type() == param->type(), "build: param '", name, "' is ", constant->type().ToString(),
                   " but main's parameter of that name is ", param->type().ToString());
    constants[param.get()] = constant;
    values.erase(it);
  }
  if (!values.empty()) {
    runtime::Fail("build: main has no parameter '", values.begin()->first, "' (parameters: ", names, ")");
  }
  ir::Expr body = ir::Rewrite(function->body, [&](const ir::Expr& original, const std::vector<ir::Expr>& inputs) {
    auto it = constants.find(original.get());
    return it != constants.end() ? it->second : ir::WithInputs(original, inputs);
  });
  ir::Attrs attrs = function->attrs;
  if (attrs.Has(ir::attr::kBatchInputs)) {  // the batch's inputs by their index among those kept
    std::vector<int64_t> batch_inputs;
    for (int64_t index : attrs.GetInts(ir::attr::kBatchInputs)) {
      const ir::Expr& param = function->params.at(static_cast<size_t>(index));
      runtime::Check(constants.count(param.get()) == 0, "build: param '", param->As<ir::VarNode>()->name,
                     "' holds the batch dimension ", attrs.GetString(ir::attr::kBatchDim), "; it cannot be bound");
      batch_inputs.push_back(std::find(kept.begin(), kept.end(), param) - kept.begin());
    }
    attrs.Set(ir::attr::kBatchInputs, batch_inputs);
  }
  return ir::Function(std::move(kept), std::move(body), std::move(attrs));
}

target::Target ResolveTarget(const std::string& text, const CompilerOptions& options) {
  std::string march = MarchForTarget(text);
  target::Target t = march == "native" ? target::HostTarget() : target::TargetFor(march, CompilerIsa(march, options));
  for (const ExternalCodegen& codegen : ExternalCodegens()) {
    t.dnnl = t.dnnl || (codegen.name == "dnnl" && codegen.enabled());
  }
  return t;
}

ExecutorFactory Build(const ir::Expr& unbound_main, const BuildOptions& options, BuildReport* report,
                      std::ostream* log) {
  runtime::Check(unbound_main != nullptr && unbound_main->As<ir::FunctionNode>() != nullptr,
                 "build: main is not a function");
  const std::string& name = options.module_name;
  auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  bool identifier = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                    std::all_of(name.begin(), name.end(), word_char);
  runtime::Check(identifier, "build: the module name '", runtime::EscapeForDisplay(name),
                 "' must be a C identifier (letters, digits and _, not starting with a digit): it names the "
                 "library's functions (tvmgen_<name>_...)");
  ir::Expr main = BindParams(unbound_main, options.params);
  int opt_level = options.pass_context.opt_level;
  runtime::Check(opt_level >= 0 && opt_level <= 3, "opt_level must be 0 to 3, got ", opt_level);
  BuildReport local;
  BuildReport& r = report != nullptr ? *report : local;
  std::function<void(const ir::Expr&)> count_ops = [&](const ir::Expr& body) {
    for (const ir::Expr& e : ir::PostOrder(body)) {
      const auto* call = e->As<ir::CallNode>();
      if (call == nullptr) continue;
      if (call->op != nullptr) ++r.imported_ops;
      if (call->op == nullptr) count_ops(call->function->As<ir::FunctionNode>()->body);  // external, composite
    }
  };
  count_ops(main->As<ir::FunctionNode>()->body);
  GeneratedCode generated;
  if (options.dim_samples == nullptr || options.dim_samples->empty()) {
    generated = Generate(main, options, 0, r, log);
  } else {
    // Every sample through the whole flow (its passes printed and timed once), then one code.
    const ir::DimSamples& samples = *options.dim_samples;
    try {
      runtime::Check(samples.mains.size() == samples.points.size(), "build: the model's shape dimensions have ",
                     samples.points.size(), " samples but ", samples.mains.size(), " imported main functions");
      std::vector<SampleCode> codes;
      for (size_t p = 0; p < samples.points.size(); ++p) {
        BuildReport scratch;
        GeneratedCode one = Generate(p == 0 ? main : BindParams(samples.mains[p], options.params), options,
                                     static_cast<int>(samples.dims.size()), p == 0 ? r : scratch, p == 0 ? log : nullptr);
        runtime::Check(one.external_functions.empty(), "external codegens (--byoc) take fixed shapes only; compile ",
                       "without --byoc, or without shape dimensions");
        if (p == 0) generated.implementations = one.implementations;
        codes.push_back(std::move(one.code));
      }
      generated.code = GeneralizeDims(samples, codes);
    } catch (const runtime::Error& e) {
      if (samples.batch_refusal.empty()) throw;
      runtime::Fail(e.what(), " (compiled as a shape dimension, since as a batch: ", samples.batch_refusal, ")");
    }
  }
  runtime::Graph& graph = generated.code.graph;
  // Operator functions go into objects of kFunctionsPerObject each: every object begins by loading
  // the precompiled prelude, which took most of the time of one function's object.
  constexpr size_t kFunctionsPerObject = 8;
  std::vector<SourceFile> sources;
  for (size_t i = 0; i < generated.code.functions.size(); ++i) {
    const std::string& symbol = generated.code.functions[i].symbol;
    const std::string& text = generated.code.functions[i].source;
    if (i % kFunctionsPerObject == 0) sources.push_back({"", "", {}});
    sources.back().name += (sources.back().name.empty() ? "" : ", ") + symbol;
    sources.back().text += (sources.back().text.empty() ? "" : "\n") + text;
  }
  for (SourceFile& file : sources) file.name = "the operators " + file.name;
  std::map<std::string, std::string>& implementations = generated.implementations;
  // External functions first: an unknown or disabled codegen fails before anything is compiled.
  std::vector<ExternalModule> external;
  const std::vector<ExternalCodegen>& codegens =
      options.external_codegens != nullptr ? *options.external_codegens : ExternalCodegens();
  for (const OperatorFunction& f : generated.external_functions) {
    const std::string& compiler = f.function->As<ir::FunctionNode>()->attrs.GetString(ir::attr::kCompiler);
    const ExternalCodegen& codegen = FindExternalCodegen(compiler, codegens);
    external.push_back(runtime::ReportingBugsAt(
        [&] { return "the " + compiler + " codegen, generating " + f.symbol + ir::DescribeSources(f.function); },
        [&] { return codegen.generate(f.symbol, f.function); }));
    runtime::CheckInternal(external.back().module.defined(), "the external codegen '", compiler,
                           "' made no module for ", f.symbol);
    implementations[f.symbol] = compiler + " (external)";
  }
  for (runtime::GraphNode& node : graph.nodes) {
    auto it = implementations.find(node.func_name);
    if (!node.is_input() && it != implementations.end()) node.attrs[runtime::kImplementationAttr] = it->second;
  }
  CompilerOptions compiler = options.compiler;
  runtime::Check(compiler.march == CompilerOptions().march || compiler.march == options.target.march,
                 "build: compiler.march is ", compiler.march, " but the target's is ", options.target.march,
                 "; set BuildOptions::target (ResolveTarget) instead");
  compiler.march = options.target.march;
  // External code in C source modules (ccompiler) is compiled with the host code.
  for (const ExternalModule& m : external) {
    if (const auto* c = dynamic_cast<const CSourceModule*>(m.module.get())) {
      sources.push_back({m.symbol + ".cc", c->code(), {}});
    }
  }
  std::string source = OperatorSourcePrelude();
  for (const SourceFile& file : sources) source += "// ---- " + file.name + "\n" + file.text;
  runtime::Module host(std::make_shared<HostCodeModule>(
      CompileObjects(sources, OperatorSourcePrelude(), compiler, &r.compile), source));
  return ExecutorFactory(runtime::WriteGraphJson(graph), std::move(generated.code.params), std::move(host),
                         std::move(external), options.module_name, compiler);
}

ExecutorFactory::ExecutorFactory(std::string graph_json, runtime::NamedArrays params, runtime::Module host,
                                 std::vector<ExternalModule> external, std::string module_name,
                                 CompilerOptions compiler)
    : graph_json_(std::move(graph_json)), params_(std::move(params)), host_(std::move(host)),
      module_name_(std::move(module_name)), compiler_(std::move(compiler)) {
  runtime::CheckInternal(host_.defined() && dynamic_cast<const HostCodeModule*>(host_.get()) != nullptr,
                         "ExecutorFactory: the code module must be the compiled host code");
  if (external.empty()) {
    code_ = host_;
    return;
  }
  // TVM's tree: the const loader owns the external constants and imports the host code and the
  // external modules.
  runtime::NamedArrays constants;
  std::vector<std::pair<std::string, std::vector<std::string>>> by_symbol;
  for (const ExternalModule& m : external) {
    runtime::CheckInternal(m.module.defined() && (m.module->IsDSOExportable() || m.module->IsBinarySerializable()),
                           "ExecutorFactory: an external function's module must be compiled into the library or "
                           "serializable into it");
    // Every external symbol, with or without constants, as TVM lists them: TVM's const loader
    // calls `__init_` (the JSON runtimes build their engines there) only for the symbols it lists.
    std::vector<std::string> names;
    for (const auto& [name, array] : m.constants) names.push_back(name);
    by_symbol.emplace_back(m.symbol, names);
    constants.insert(constants.end(), m.constants.begin(), m.constants.end());
  }
  code_ = runtime::CreateConstLoaderModule(std::move(constants), std::move(by_symbol));
  code_->Import(host_);
  for (const ExternalModule& m : external) {
    external_.push_back(m.module);
    if (!m.module->IsDSOExportable()) code_->Import(m.module);  // else its code is in the host's
  }
}

std::vector<std::string> ExecutorFactory::Objects() const {
  return static_cast<const HostCodeModule*>(host_.get())->objects();
}

const std::string& ExecutorFactory::GetSource() const {
  return static_cast<const HostCodeModule*>(host_.get())->source();
}

void ExecutorFactory::ExportLibrary(const std::string& path) const {
  // The parameters lie in the library's data, used in place by every executor (TVM's
  // link-params); the factory keeps only those that cannot be.
  LinkedParams linked = LinkParams(runtime::ParseGraphJson(graph_json_), params_);
  runtime::Module factory = runtime::CreateGraphExecutorFactory(graph_json_, linked.unlinked, module_name_, code_);
  LinkSharedLibrary(Objects(), runtime::SerializeModuleBlob(factory), linked.image, path, compiler_);
}

runtime::Module ExecutorFactory::Load() const {
  // A new file per call, so dlopen never mistakes it for a library loaded before.
  std::string path = MakeTempFile(std::filesystem::temp_directory_path().string(), "kiln-load-", ".so");
  std::error_code ignored;
  try {
    ExportLibrary(path);
    runtime::Module module = runtime::LoadModuleFromFile(path);
    std::filesystem::remove(path, ignored);
    return module;
  } catch (...) {
    std::filesystem::remove(path, ignored);
    throw;
  }
}

void ExecutorFactory::ExportThreeFiles(const std::string& directory) const {
  std::filesystem::create_directories(directory);
  // mod.so holds the const loader and the external modules in its import blob, so that it runs
  // on its own.
  std::string blob = code_.get() != host_.get() ? runtime::SerializeModuleBlob(code_) : "";
  LinkSharedLibrary(Objects(), blob, {}, directory + "/mod.so", compiler_);
  WriteFile(directory + "/mod.json", graph_json_);
  WriteFile(directory + "/mod.params", runtime::SaveParams(params_));
}

}  // namespace kiln::backend
