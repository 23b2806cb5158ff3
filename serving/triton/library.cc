// Loading a kiln model library for Triton and making executors that share its weights.
#include "serving/triton/library.h"

#include <filesystem>

#include "runtime/error.h"
#include "runtime/graph_executor_module.h"
#include "runtime/graph_json.h"
#include "runtime/params.h"

namespace kiln::triton {

namespace fs = std::filesystem;
using runtime::Check;
using runtime::GraphExecutor;

std::shared_ptr<ModelLibrary> ModelLibrary::Load(const std::string& version_dir, const std::string& filename) {
  std::shared_ptr<ModelLibrary> library(new ModelLibrary());
  fs::path dir(version_dir);
  fs::path single = dir / filename;
  bool tvmc = !fs::exists(single) && fs::exists(dir / "mod.so") && fs::exists(dir / "mod.json") &&
              fs::exists(dir / "mod.params");
  if (tvmc) {
    library->path_ = (dir / "mod.so").string();
    library->root_ = runtime::LoadModuleFromFile(library->path_);
    library->code_ = library->root_;
    library->graph_json_ = runtime::ReadFile((dir / "mod.json").string());
    library->params_bytes_ = runtime::ReadFile((dir / "mod.params").string());
    library->first_ = std::make_shared<GraphExecutor>(runtime::ParseGraphJson(library->graph_json_), library->code_);
    library->first_->LoadParams(library->params_bytes_);
  } else {
    Check(fs::exists(single), "no model library in '", version_dir, "': expected '", filename,
          "' (a library written by `kiln compile`) or the tvmc layout (mod.so, mod.json, mod.params)");
    library->path_ = single.string();
    library->root_ = runtime::LoadModuleFromFile(library->path_);
    runtime::PackedFunc create = library->root_.GetFunction("default");
    Check(create.defined(), "'", library->path_,
          "' holds operators only, no graph (export the whole model with `kiln compile`, or use the "
          "tvmc layout)");
    runtime::Module executor_module = create(runtime::kCPU).AsModule();
    library->first_ = runtime::GetGraphExecutor(executor_module);
    library->graph_json_ = library->root_.GetFunction("get_graph_json")().AsString();
    library->params_bytes_ = library->root_.GetFunction("get_graph_params")().AsString();
    const auto& imports = library->root_->imports();
    Check(!imports.empty(), "'", library->path_, "' has no code module (the library is incomplete)");
    library->code_ = imports[0];
  }
  library->DescribeTensors();
  return library;
}

void ModelLibrary::DescribeTensors() {
  const runtime::Graph& graph = first_->graph();
  if (graph.has_batch()) {
    tensors_.batch_min = graph.batch.min;
    tensors_.batch_max = graph.batch.max;
  }
  for (const runtime::ShapeDim& dim : graph.dims) tensors_.dim_names.push_back(dim.name);
  // One sample's shape of a batched tensor (the executor reports the largest batch's).
  auto sample_shape = [&](const runtime::TensorInfo& info) {
    std::vector<int64_t> shape = info.shape;
    if (!info.batch_dim.empty()) shape[0] /= graph.batch.max;
    return shape;
  };
  auto varying = [](const runtime::TensorInfo& info) {
    std::vector<bool> axes;
    for (const std::string& dim : info.axis_dims) axes.push_back(!dim.empty());
    return axes;
  };
  for (const runtime::TensorInfo& info : first_->GetInputInfo()) {
    tensors_.inputs.push_back({info.name, sample_shape(info), info.dtype, -1, !info.batch_dim.empty(), varying(info)});
  }
  std::vector<runtime::TensorInfo> outputs = first_->GetOutputInfo();
  for (size_t i = 0; i < outputs.size(); ++i) {
    int axis = -1;
    for (const runtime::OutputTrim& trim : first_->graph().output_trims) {
      if (trim.output == i && !trim.whole_shape) axis = static_cast<int>(trim.axis);  // else: every extent -1
    }
    // A library keeps its inputs' names but not its outputs' (the graph's heads are operator
    // nodes): Triton sees output_0, output_1, ..., as `kiln run` and tvmc name them.
    tensors_.outputs.push_back({"output_" + std::to_string(i), sample_shape(outputs[i]), outputs[i].dtype, axis,
                                !outputs[i].batch_dim.empty(), varying(outputs[i])});
  }
}

std::shared_ptr<GraphExecutor> ModelLibrary::NewExecutor() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!first_handed_out_) {
    first_handed_out_ = true;
    return first_;
  }
  // The first executor's parameters are read, never written, by the executors that run; sharing
  // reads only them, so it is safe while the first one runs.
  auto executor = std::make_shared<GraphExecutor>(runtime::ParseGraphJson(graph_json_), code_);
  if (!params_bytes_.empty()) executor->ShareParams(*first_, params_bytes_);
  return executor;
}

}  // namespace kiln::triton
