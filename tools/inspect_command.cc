// kiln inspect ARTIFACT: inputs, outputs, parameters, operator functions (with what computes
// each: kernel implementations, loops; an external function with the ops it holds), the module
// tree and the memory plan.
#include <cstdio>
#include <map>
#include <set>

#include "runtime/error.h"
#include "runtime/graph_json.h"
#include "runtime/json_runtime.h"
#include "runtime/text.h"
#include "tools/artifact.h"
#include "tools/cli_args.h"
#include "tools/commands.h"

namespace kiln::tools {

namespace {

const std::vector<OptionSpec> kOptions = {{"--help", "-h", false, "show this help"}};

// "float32[1, 3, 224, 224]"; the axes decided at run time named: "float32[N, 3, 224, 224]",
// "float32[16*N, 64]", "float32[N, S, 768]".
std::string TypeText(const runtime::TensorInfo& info) {
  if (info.batch_dim.empty() && info.axis_dims.empty()) {
    return runtime::DTypeToString(info.dtype) + runtime::ShapeToString(info.shape);
  }
  std::string text = runtime::DTypeToString(info.dtype) + "[";
  for (size_t i = 0; i < info.shape.size(); ++i) {
    std::string extent = i == 0 && !info.batch_dim.empty()                  ? info.batch_dim
                         : i < info.axis_dims.size() && !info.axis_dims[i].empty() ? info.axis_dims[i]
                                                                                  : std::to_string(info.shape[i]);
    text += (i == 0 ? "" : ", ") + extent;
  }
  return text + "]";
}

// One line per module, its imports indented below it; a JSON runtime module (dnnl_json, ...)
// with its function and the kernels of its subgraph.
void PrintModuleTree(const runtime::Module& module, int depth) {
  std::string line(static_cast<size_t>(depth) * 2, ' ');
  line += module.type_key();
  if (const auto* json = dynamic_cast<const runtime::JsonRuntimeBase*>(module.get())) {
    line += " " + json->symbol() + ":";
    for (const runtime::JsonNode& node : json->graph().nodes) {
      if (node.op == "kernel") line += " " + node.name;
    }
  }
  std::printf("%s\n", runtime::EscapeForDisplay(line).c_str());
  for (const runtime::Module& import : module->imports()) PrintModuleTree(import, depth + 1);
}

}  // namespace

int InspectCommand(const std::vector<std::string>& args) {
  CliArgs cli(args, kOptions);
  if (cli.Has("--help")) {
    std::printf("%s", Usage("inspect", "ARTIFACT", kOptions).c_str());
    return 0;
  }
  runtime::Check(cli.positionals().size() == 1, "kiln inspect needs one artifact");
  Artifact artifact = OpenArtifact(cli.positionals()[0]);
  const runtime::GraphExecutor& exec = *artifact.executor;
  const runtime::Graph& g = exec.graph();

  if (g.has_batch()) {
    std::printf("Batch dimension: %s from %lld to %lld (decided at run time)\n", g.batch.name.c_str(),
                static_cast<long long>(g.batch.min), static_cast<long long>(g.batch.max));
  }
  for (const runtime::ShapeDim& dim : g.dims) {
    std::printf("Shape dimension: %s (decided at run time)\n", dim.RangeText().c_str());
  }
  std::printf("Inputs:\n");
  for (const runtime::TensorInfo& info : exec.GetInputInfo()) {
    std::printf("  %-24s %s\n", runtime::EscapeForDisplay(info.name).c_str(), TypeText(info).c_str());
  }
  size_t params = exec.NumInputs() - exec.GetInputInfo().size(), linked = 0;
  int64_t param_bytes = 0;
  for (int i = 0; i < exec.NumInputs(); ++i) {
    param_bytes += exec.GetInput(i).NumBytes();
    linked += exec.IsLinkedParam(i) ? 1 : 0;
  }
  for (const runtime::TensorInfo& info : exec.GetInputInfo()) {
    param_bytes -= static_cast<int64_t>(exec.GetInput(exec.InputIndex(info.name)).NumBytes());
  }
  std::printf("Parameters: %zu arrays, %.2f MB (%zu read in place from the library)\n", params,
              param_bytes / 1048576.0, linked);
  std::printf("Outputs:\n");
  for (const runtime::TensorInfo& info : exec.GetOutputInfo()) {
    std::printf("  %-24s %s\n", runtime::EscapeForDisplay(info.name).c_str(), TypeText(info).c_str());
  }
  struct FunctionInfo {
    int calls = 0;
    std::string pattern, ops, implementation;
  };
  std::map<std::string, FunctionInfo> functions;
  size_t op_nodes = 0, conditional_nodes = 0;
  std::set<uint32_t> conditions;  // their entries
  for (const runtime::GraphNode& node : g.nodes) {
    if (node.is_input()) continue;
    ++op_nodes;
    if (!node.run_if.empty()) ++conditional_nodes;
    for (const runtime::RunCondition& c : node.run_if) conditions.insert(g.EntryId(c.condition));
    FunctionInfo& info = functions[node.func_name];
    ++info.calls;
    auto attr = [&](const char* key) {
      auto it = node.attrs.find(key);
      return it == node.attrs.end() ? std::string("?") : it->second;
    };
    info.pattern = attr("kiln_pattern");
    info.ops = attr("kiln_ops");
    info.implementation = attr(runtime::kImplementationAttr);
  }
  std::printf("Operator functions: %zu distinct, %zu calls\n", functions.size(), op_nodes);
  std::printf("  %5s  %-20s  %-24s  %s\n", "calls", "pattern", "implementation", "function (ops)");
  for (const auto& [name, info] : functions) {
    std::printf("  %5d  %-20s  %-24s  %s (%s)\n", info.calls, runtime::EscapeForDisplay(info.pattern).c_str(),
                runtime::EscapeForDisplay(info.implementation).c_str(), runtime::EscapeForDisplay(name).c_str(),
                runtime::EscapeForDisplay(info.ops).c_str());
  }
  if (conditional_nodes > 0) {
    std::printf("Conditional calls: %zu of %zu run only when their side of a run-time If is taken (%zu conditions)\n",
                conditional_nodes, op_nodes, conditions.size());
  }
  std::printf("Module tree:\n");
  PrintModuleTree(artifact.lib, 1);
  std::set<uint32_t> storage(g.storage_ids.begin(), g.storage_ids.end());
  std::printf("Memory plan: %zu entries in %zu storage buffers, %.2f MB allocated by the executor\n", g.num_entries(),
              storage.size(), exec.OwnedStorageBytes() / 1048576.0);
  return 0;
}

}  // namespace kiln::tools
