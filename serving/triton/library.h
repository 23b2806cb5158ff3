// A kiln model library loaded once per Triton model: the code, the graph and the weights, and the
// executors made from it for the model's instances, which all share those weights.
//
// Two forms are read from a version directory: one exported library (`model.so`, or the
// configuration's default_model_filename), and the three files of the tvmc layout (`mod.so`,
// `mod.json`, `mod.params`).
//
// Thread safety: NewExecutor may be called from any thread. Failure: Load and NewExecutor throw
// kiln::runtime::Error naming the file and the problem.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/graph_executor.h"
#include "runtime/module.h"

namespace kiln::triton {

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;  // one sample's when `batched`
  DLDataType dtype{};
  int data_dependent_axis = -1;  // an output whose extent along this axis the data decides
  bool batched = false;          // axis 0 holds the samples of the library's batch dimension
  // Per axis, whether a shape dimension of the library (kiln compile --dims "S=1..512") decides
  // its extent at run time; `shape` then holds the largest. Empty when none does.
  std::vector<bool> varying{};
};

// What a library takes and gives: the inputs a request supplies (parameters excluded) and the
// outputs, in the library's order. Outputs are named output_<i> (i: the executor's output index).
// A library compiled with a batch dimension (kiln compile --dims) runs batch_min to batch_max
// samples at once; batch_max is 0 for a library of fixed shapes.
struct LibraryTensors {
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  int64_t batch_min = 0, batch_max = 0;
  std::vector<std::string> dim_names{};  // its shape dimensions besides the batch (graph JSON kiln_dims' order)
};

class ModelLibrary {
 public:
  // `version_dir` is <repository>/<model>/<version>; `filename` the library inside it.
  static std::shared_ptr<ModelLibrary> Load(const std::string& version_dir, const std::string& filename);

  const std::string& path() const { return path_; }
  const LibraryTensors& tensors() const { return tensors_; }

  // An executor for one instance. The first call hands out the executor the library was checked
  // with; later ones share its weights (GraphExecutor::ShareParams): only activations are new.
  std::shared_ptr<runtime::GraphExecutor> NewExecutor();

 private:
  ModelLibrary() = default;
  void DescribeTensors();

  std::string path_;
  runtime::Module root_;  // keeps the loaded library (and its code) alive
  runtime::Module code_;  // the operators
  std::string graph_json_;
  std::string params_bytes_;  // the weights that are not linked into the library's data
  std::mutex mutex_;
  std::shared_ptr<runtime::GraphExecutor> first_;
  bool first_handed_out_ = false;
  LibraryTensors tensors_;
};

}  // namespace kiln::triton
