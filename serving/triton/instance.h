// One Triton model instance: a kiln executor (sharing the library's weights with the model's other
// instances) with its own thread count, and the execution of Triton's requests on it.
//
// A request is checked against the library before anything runs (datatype, shape, rows, byte
// size, memory type), since a configuration with -1 dims lets more through than the library takes.
// Its rows run one at a time (see model_config.h); an input row lying in one 64-byte aligned CPU
// buffer of Triton's is read in place (GraphExecutor::SetInputZeroCopy), others are copied or
// gathered first. Each request gets one response: its outputs, or Triton's error with kiln's
// message. Compute time goes to Triton's statistics.
//
// Thread safety: Triton calls Execute for one instance from one thread at a time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/graph_executor.h"
#include "runtime/ndarray.h"
#include "serving/triton/library.h"
#include "serving/triton/model_config.h"
#include "serving/triton/triton_api.h"

namespace kiln::triton {

// What a Triton model is to the backend: its library and its checked configuration.
struct ServedModel {
  std::shared_ptr<ModelLibrary> library;
  ServingConfig config;
};

class Instance {
 public:
  // Throws Error when the executor cannot be made.
  Instance(std::shared_ptr<const ServedModel> model, std::string name);

  // Runs once on zeros (the "warmup" parameter); throws Error when the run fails.
  void Warmup();

  // "<n> rows run, inputs: <a> read in place, <b> copied" (for the log when the instance ends).
  std::string Summary() const;

  // Responds to and releases every request. Never throws.
  void Execute(TRITONBACKEND_ModelInstance* triton_instance, TRITONBACKEND_Request** requests,
               uint32_t count);

 private:
  struct Timing {
    uint64_t compute_start_ns = 0;
    uint64_t compute_end_ns = 0;
    uint64_t rows = 0;
  };
  // One input of one request, checked: where each row's bytes are.

  // Runs one request into `response`; throws Error (RequestError for a request kiln cannot run).
  void RunRequest(TRITONBACKEND_Request* request, TRITONBACKEND_Response* response, Timing& timing);
  // Checks served input i of the request; returns its rows and sets `data` to its bytes, contiguous.
  int64_t ReadInput(TRITONBACKEND_Request* request, size_t i, const char** data);
  void BindRow(size_t i, const char* row);
  // This instance's 64-byte aligned room of at least `bytes` for served input i, kept between requests.
  char* GatherRoom(size_t i, uint64_t bytes);

  std::shared_ptr<const ServedModel> model_;
  std::string name_;
  std::shared_ptr<runtime::GraphExecutor> executor_;
  std::vector<int> input_index_;        // per served input: the executor's input index
  std::vector<size_t> input_row_bytes_;  // per served input: bytes of one row (the library's shape)
  std::vector<runtime::NDArray> gather_;  // per served input: aligned room for inputs in several buffers
  uint64_t rows_run_ = 0;
  uint64_t inputs_in_place_ = 0;  // input rows bound where Triton's buffer holds them
  uint64_t inputs_copied_ = 0;    // input rows copied (not 64-byte aligned)
};

}  // namespace kiln::triton
