// The Triton model configuration (config.pbtxt, as Triton's JSON) against a kiln library:
// completing a minimal configuration from the library's inputs and outputs, checking a written
// one, and reading the backend's parameters. No Triton calls: the JSON comes in and goes out.
//
// Batching: with max_batch_size > 0, every input and output of the library must have a leading
// dimension of 1 (per sample); the configuration's dims are the library's without it. A library
// of fixed shapes runs a request of k rows as k runs, one row each; a library with a batch
// dimension (kiln compile --dims N=MIN..MAX) runs up to MAX rows at once, the rows of several
// requests of a dynamic batch together, and a configuration without max_batch_size gets MAX.
// Any other leading dimension is a configuration error.
//
// Failure: every function throws kiln::runtime::Error with a sentence naming the model and the
// tensor or field (also for a field of the wrong JSON type).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "serving/triton/library.h"
#include "serving/triton/triton_api.h"

namespace kiln::triton {

// One tensor as the model serves it: the library's tensor and its shape as Triton sees it
// (without the batch dimension when the model batches).
struct ServedTensor {
  TensorSpec library;
  int position = 0;  // in LibraryTensors::inputs or outputs; for outputs, the executor's output index
  TRITONSERVER_DataType type = TRITONSERVER_TYPE_INVALID;
  std::vector<int64_t> dims;
};

struct ServingConfig {
  std::string model_name;
  int64_t max_batch_size = 0;            // 0: requests carry the library's whole shape
  // Rows one run of the library takes: a library with a batch dimension, served with
  // max_batch_size > 0, from its MIN to its MAX; else 1 to 1.
  int64_t run_rows_min = 1, run_rows_max = 1;
  std::vector<ServedTensor> inputs;      // every input of the library
  std::vector<ServedTensor> outputs;     // the outputs the configuration lists
  int instance_count = 1;                // over all instance groups
  int num_threads = 0;                   // per instance; set from parameter "num_threads" or cores / instances
  bool num_threads_set = false;          // parameter "num_threads" gave it; else it follows the live instances
  bool warmup = false;                   // parameter "warmup": one run on zeros when an instance starts
  std::vector<std::string> warnings;     // what the backend ignores (unknown parameters), to log
};

// Adds to `config` what a one-line configuration leaves out: "input" and "output" from the
// library (name, data_type, dims), and max_batch_size for a library with a batch dimension. Returns whether it changed anything. A configuration that
// already lists inputs or outputs keeps them as written (CheckConfig checks them).
bool AutoCompleteConfig(nlohmann::json& config, const LibraryTensors& library);

// Checks the configuration against the library and reads the parameters. `cores` is the thread
// count the process would use (the default per instance is max(1, cores / instance_count)).
ServingConfig CheckConfig(const nlohmann::json& config, const LibraryTensors& library, int cores);

// The default thread count of one instance: max(1, cores / instances), so that the instances
// together do not oversubscribe the cores. Used at load with the configured count, and before
// each run with the count of live instances (Triton changes instance groups in place, without
// loading the model again).
int DefaultThreadCount(int cores, int instances);

// The file name of the library in a version directory: default_model_filename, else "model.so".
std::string LibraryFileName(const nlohmann::json& config);

}  // namespace kiln::triton
