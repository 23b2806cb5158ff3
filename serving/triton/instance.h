// One Triton model instance: a kiln executor (sharing the library's weights with the model's other
// instances) with its own thread count, and the execution of Triton's requests on it.
//
// A request is checked against the library before anything runs (datatype, shape, rows, byte
// size, memory type), since a configuration with -1 dims lets more through than the library takes.
// Its rows run one at a time, or as batches for a library with a batch dimension, the rows of a
// dynamic batch's requests together (see model_config.h); input rows lying in one 64-byte aligned
// CPU buffer of Triton's are read in place (GraphExecutor::SetInputZeroCopy), others are copied or
// gathered first. Each request gets one response: its outputs, or Triton's error with kiln's
// message. Compute time goes to Triton's statistics.
//
// Thread safety: Triton calls Execute for one instance from one thread at a time.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "runtime/graph_executor.h"
#include "runtime/ndarray.h"
#include "serving/triton/library.h"
#include "serving/triton/model_config.h"
#include "serving/triton/triton_api.h"

namespace kiln::triton {

// What a Triton model is to the backend: its library and its checked configuration, and the
// count of its live instances.
struct ServedModel {
  std::shared_ptr<ModelLibrary> library;
  ServingConfig config;
  int cores = 1;  // the process's thread count at load (KILN_NUM_THREADS, else the cores)
  // Instances alive now (each Instance counts itself from construction to destruction, that is
  // from TRITONBACKEND_ModelInstanceInitialize to ...Finalize): Triton 2.51 adds and removes
  // instances of a loaded model in place when only its instance_group changes. The only field
  // that changes after load, hence mutable and atomic (instances start and end in parallel).
  mutable std::atomic<int> live_instances{0};
};

class Instance {
 public:
  // Throws Error when the executor cannot be made.
  Instance(std::shared_ptr<const ServedModel> model, std::string name);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  // Runs once on zeros (the "warmup" parameter); throws Error when the run fails.
  void Warmup();

  // "<n> rows run in <r> runs; input rows: <a> read in place, <b> copied, <c> gathered" (for the
  // log when the instance ends).
  std::string Summary() const;

  // Responds to and releases every request. Without a "num_threads" parameter, first sets the
  // executor's thread count to DefaultThreadCount(cores, live instances). Throws (std::bad_alloc)
  // only before it has taken any request, so that the caller may return an error and leave all
  // the requests to Triton.
  void Execute(TRITONBACKEND_ModelInstance* triton_instance, TRITONBACKEND_Request** requests,
               uint32_t count);

 private:
  struct Timing {
    uint64_t compute_start_ns = 0;
    uint64_t compute_end_ns = 0;
    uint64_t rows = 0;
  };
  // A checked request: its inputs' bytes (contiguous; perhaps in the gather rooms, valid until the
  // next request is read), their rows, and the outputs it asks for. Per input, one row's shape as
  // the library takes it (the request's extents where a shape dimension decides them) and bytes;
  // and the shape dimensions' values the request gives (empty for a library without them).
  struct Prepared {
    std::vector<const char*> inputs;
    std::vector<bool> gathered;
    int64_t rows = 1;
    std::vector<const ServedTensor*> outputs;
    std::vector<std::vector<int64_t>> row_shapes;
    std::vector<size_t> row_bytes;
    std::vector<int64_t> dims;
  };
  // Makes the request's response, runs it (RunRequest) and sends it, reports its statistics and
  // adds its rows and compute times to `batch`; does not release it. Throws only std::bad_alloc
  // (from a log line).
  void Respond(TRITONBACKEND_ModelInstance* triton_instance, TRITONBACKEND_Request* request, uint64_t exec_start,
               Timing& batch);
  // The request's response, or null (logged) when Triton cannot make one.
  TRITONBACKEND_Response* NewResponse(TRITONBACKEND_Request* request);
  // Sends the response (with `error`, taken over, when not null), reports the request's
  // statistics and adds a success's rows and compute times to `batch`.
  void Finish(TRITONBACKEND_ModelInstance* triton_instance, TRITONBACKEND_Request* request,
              TRITONBACKEND_Response* response, TRITONSERVER_Error* error, uint64_t exec_start, const Timing& timing,
              Timing& batch);
  // Per request of ExecuteTogether: its response once made, and whether it was sent (or none
  // could be made), so that an exception midway leaves no request without an answer.
  struct Answer {
    TRITONBACKEND_Response* response = nullptr;
    bool answered = false;
  };
  // The requests of one Execute for a library with a batch dimension: their rows gathered into
  // runs of up to the library's largest batch, each request answered with its rows.
  void ExecuteTogether(TRITONBACKEND_ModelInstance* triton_instance, TRITONBACKEND_Request** requests, uint32_t count,
                       uint64_t batch_start, Timing& batch, std::vector<Answer>& answers);
  // Runs one request into `response`; throws Error (RequestError for a request kiln cannot run).
  void RunRequest(TRITONBACKEND_Request* request, TRITONBACKEND_Response* response, Timing& timing);
  // Checks the request's inputs and requested outputs; throws RequestError.
  Prepared Prepare(TRITONBACKEND_Request* request);
  // Runs a prepared request's rows, as many at once as the library takes, into `response`.
  void RunPrepared(const Prepared& prepared, TRITONBACKEND_Response* response, Timing& timing);
  // One run of the executor over `rows` bound rows, timed.
  void RunOnce(int64_t rows, Timing& timing);
  // Copies `rows` rows of the last run's outputs, from its row `result_first`, to the request's
  // outputs from its row `first` (making them, with `buffers`, when `first` is 0).
  void CopyRows(const Prepared& prepared, TRITONBACKEND_Response* response, int64_t first, int64_t rows,
                int64_t result_first, std::vector<char*>& buffers);
  // The rows a result of the last run holds for a served output.
  int64_t RowsOf(const runtime::NDArray& result, const ServedTensor& served) const;
  // Checks served input i of the request; returns its rows and sets `data` to its bytes,
  // contiguous, `gathered` to whether they are in this instance's gather room, and `row_shape` to
  // one row's shape as the library takes it.
  int64_t ReadInput(TRITONBACKEND_Request* request, size_t i, const char** data, bool* gathered,
                    std::vector<int64_t>* row_shape);
  // The shape served input i is bound with for `rows` rows of `row_shape`.
  std::vector<int64_t> BoundShape(size_t i, const std::vector<int64_t>& row_shape, int64_t rows) const;
  // Where bound rows lie: in Triton's buffer, in the gather room (they came in several buffers),
  // or copied into the combine room with other requests' rows.
  enum class RowsFrom { kTriton, kGatherRoom, kTogether };
  // Binds `rows` rows (samples) of served input i, each of `row_shape`, at `data`: in place when
  // 64-byte aligned.
  void Bind(size_t i, const char* data, RowsFrom from, int64_t rows, const std::vector<int64_t>& row_shape);
  // This instance's aligned room for served input i's rows of a group of requests, made once
  // for the library's largest run.
  char* CombineRoom(size_t i, uint64_t bytes);
  // Follows the count of live instances (without a "num_threads" parameter).
  void UpdateThreadCount();
  // This instance's 64-byte aligned room of at least `bytes` for served input i, kept between requests.
  char* GatherRoom(size_t i, uint64_t bytes);

  std::shared_ptr<const ServedModel> model_;
  std::string name_;
  std::shared_ptr<runtime::GraphExecutor> executor_;
  std::vector<int> input_index_;        // per served input: the executor's input index
  std::vector<size_t> input_row_bytes_;  // per served input: bytes of one row at the library's largest shape
  std::vector<runtime::NDArray> gather_;  // per served input: aligned room for inputs in several buffers
  std::vector<runtime::NDArray> combine_;  // per served input: the rows of a group of requests run together
  int num_threads_ = 0;  // the thread count UpdateThreadCount set (0: none yet; it logs each change)
  uint64_t rows_run_ = 0;
  uint64_t runs_ = 0;
  uint64_t inputs_in_place_ = 0;  // input rows bound where Triton's buffer holds them
  uint64_t inputs_copied_ = 0;    // input rows copied (not 64-byte aligned, or run with other requests' rows)
  uint64_t inputs_gathered_ = 0;  // input rows bound in the gather room (they came in several buffers)
};

}  // namespace kiln::triton
