// A Triton model instance on a kiln executor: request checks, row-by-row runs, responses, statistics.
#include "serving/triton/instance.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include "runtime/dtype.h"
#include "runtime/error.h"
#include "serving/triton/data_types.h"
#include "serving/triton/triton_errors.h"

namespace kiln::triton {

using runtime::Check;
using runtime::ShapeToString;
using runtime::StrCat;

namespace {

uint64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

size_t RowBytes(const TensorSpec& tensor) {
  int64_t elements = 1;
  for (int64_t d : tensor.shape) elements *= d;
  return static_cast<size_t>(elements) * static_cast<size_t>(runtime::DTypeBytes(tensor.dtype));
}

// "[b, 8] with b from 1 to 4" or "[1, 8]": the shapes a model takes, for messages.
std::string TakenShapes(const ServedTensor& tensor, int64_t max_batch_size) {
  if (max_batch_size == 0) return ShapeToString(tensor.library.shape);
  std::string dims = "[b";
  for (int64_t d : tensor.dims) dims += StrCat(", ", d);
  return StrCat(dims, "] with b from 1 to ", max_batch_size);
}

void Report(TRITONSERVER_Error* error, const std::string& what) {
  if (error == nullptr) return;
  Log(TRITONSERVER_LOG_ERROR, what + ": " + TRITONSERVER_ErrorMessage(error));
  TRITONSERVER_ErrorDelete(error);
}

}  // namespace

Instance::Instance(std::shared_ptr<const ServedModel> model, std::string name)
    : model_(std::move(model)), name_(std::move(name)) {
  executor_ = model_->library->NewExecutor();
  executor_->SetNumThreads(model_->config.num_threads);  // until the first Execute
  for (const ServedTensor& input : model_->config.inputs) {
    input_index_.push_back(executor_->InputIndex(input.library.name));
    input_row_bytes_.push_back(RowBytes(input.library));
    gather_.emplace_back();
  }
  model_->live_instances.fetch_add(1);
}

Instance::~Instance() { model_->live_instances.fetch_sub(1); }

void Instance::UpdateThreadCount() {
  if (model_->config.num_threads_set) return;
  const int live = model_->live_instances.load();
  const int wanted = DefaultThreadCount(model_->cores, live);
  if (wanted == num_threads_) return;
  executor_->SetNumThreads(wanted);
  num_threads_ = wanted;
  Log(TRITONSERVER_LOG_INFO, StrCat("instance '", name_, "': ", wanted, " threads per run (", model_->cores,
                                    " threads over ", live, " live instances)"));
}

void Instance::Warmup() {
  for (size_t i = 0; i < input_index_.size(); ++i) {
    const TensorSpec& tensor = model_->config.inputs[i].library;
    runtime::NDArray zeros = runtime::NDArray::Empty(tensor.shape, tensor.dtype);
    std::memset(zeros.data(), 0, zeros.NumBytes());
    executor_->SetInput(input_index_[i], *zeros.get());
  }
  executor_->Run();
}

int64_t Instance::ReadInput(TRITONBACKEND_Request* request, size_t i, const char** data, bool* gathered) {
  const ServedTensor& served = model_->config.inputs[i];
  const std::string& model = model_->config.model_name;
  const int64_t max_batch_size = model_->config.max_batch_size;
  std::string where = StrCat("model '", model, "': input '", served.library.name, "'");

  TRITONBACKEND_Input* input = nullptr;
  ThrowIfError(TRITONBACKEND_RequestInput(request, served.library.name.c_str(), &input), where);
  TRITONSERVER_DataType type = TRITONSERVER_TYPE_INVALID;
  const int64_t* shape = nullptr;
  uint32_t rank = 0;
  uint64_t byte_size = 0;
  uint32_t buffer_count = 0;
  ThrowIfError(TRITONBACKEND_InputProperties(input, nullptr, &type, &shape, &rank, &byte_size, &buffer_count), where);

  if (type == TRITONSERVER_TYPE_BYTES) throw RequestError(where + ": BYTES tensors are not supported by the kiln backend");
  if (type != served.type) {
    throw RequestError(StrCat(where, ": the request's datatype is ", ProtocolTypeName(type), ", the model takes ",
                              ProtocolTypeName(served.type)));
  }
  std::vector<int64_t> got(shape, shape + rank);
  int64_t rows = 1;
  bool fits;
  if (max_batch_size == 0) {
    fits = got == served.library.shape;
  } else {
    fits = got.size() == served.dims.size() + 1 && std::equal(served.dims.begin(), served.dims.end(), got.begin() + 1);
    rows = fits ? got[0] : 0;
    fits = fits && rows >= 1 && rows <= max_batch_size;
  }
  if (!fits) {
    throw RequestError(StrCat(where, ": the request's shape is ", ShapeToString(got), ", the model takes ",
                              TakenShapes(served, max_batch_size)));
  }
  uint64_t expected = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(rows), static_cast<uint64_t>(input_row_bytes_[i]), &expected)) {
    throw RequestError(StrCat(where, ": the request's shape ", ShapeToString(got), " has more bytes than 2^64"));
  }
  if (byte_size != expected) {
    throw RequestError(StrCat(where, ": the request carries ", byte_size, " bytes, its shape ", ShapeToString(got),
                              " of ", ProtocolTypeName(type), " needs ", expected));
  }

  // One buffer: read in place. Several: gathered into this instance's buffer for the input.
  uint64_t offset = 0;
  for (uint32_t b = 0; b < buffer_count; ++b) {
    const void* buffer = nullptr;
    uint64_t buffer_size = 0;
    TRITONSERVER_MemoryType memory_type = TRITONSERVER_MEMORY_CPU;
    int64_t memory_type_id = 0;
    ThrowIfError(TRITONBACKEND_InputBuffer(input, b, &buffer, &buffer_size, &memory_type, &memory_type_id), where);
    if (memory_type == TRITONSERVER_MEMORY_GPU) {
      throw RequestError(where + ": the data is in GPU memory; kiln runs on the CPU");
    }
    if (buffer_size > expected - offset) {
      throw RequestError(StrCat(where, ": the request's buffers hold more than the ", expected, " bytes it declares"));
    }
    if (buffer_count == 1 && buffer_size == expected) {
      *data = static_cast<const char*>(buffer);
      *gathered = false;
      return rows;
    }
    if (buffer_size > 0) std::memcpy(GatherRoom(i, expected) + offset, buffer, buffer_size);
    offset += buffer_size;
  }
  if (offset != expected) {
    throw RequestError(StrCat(where, ": the request's buffers hold ", offset, " bytes, its shape needs ", expected));
  }
  *data = GatherRoom(i, expected);  // also what an empty tensor (no buffer) is bound to
  *gathered = true;
  return rows;
}

char* Instance::GatherRoom(size_t i, uint64_t bytes) {
  runtime::NDArray& room = gather_[i];
  if (!room.defined() || room.NumBytes() < bytes) {
    int64_t size = static_cast<int64_t>(std::max<uint64_t>(bytes, runtime::kAllocAlignment));
    room = runtime::NDArray::Empty({size}, DLDataType{kDLUInt, 8, 1});
  }
  return static_cast<char*>(room.data());
}

void Instance::BindRow(size_t i, const char* row, bool gathered) {
  const TensorSpec& tensor = model_->config.inputs[i].library;
  DLTensor view{};
  view.data = const_cast<char*>(row);  // kiln's operators only read inputs
  view.device = runtime::kCPU;
  view.ndim = static_cast<int32_t>(tensor.shape.size());
  view.dtype = tensor.dtype;
  view.shape = const_cast<int64_t*>(tensor.shape.data());
  if (reinterpret_cast<uintptr_t>(row) % runtime::kAllocAlignment == 0) {
    executor_->SetInputZeroCopy(input_index_[i], view);
    ++(gathered ? inputs_gathered_ : inputs_in_place_);
  } else {
    executor_->SetInput(input_index_[i], view);
    ++inputs_copied_;
  }
}

std::string Instance::Summary() const {
  return StrCat(rows_run_, " rows run; input rows: ", inputs_in_place_, " read in place, ", inputs_copied_, " copied, ",
                inputs_gathered_, " gathered");
}

void Instance::RunRequest(TRITONBACKEND_Request* request, TRITONBACKEND_Response* response, Timing& timing) {
  const ServingConfig& config = model_->config;
  std::vector<const char*> inputs(config.inputs.size());
  std::vector<bool> gathered(config.inputs.size(), false);
  int64_t rows = 1;  // a library without inputs runs once
  for (size_t i = 0; i < config.inputs.size(); ++i) {
    bool input_gathered = false;
    int64_t input_rows = ReadInput(request, i, &inputs[i], &input_gathered);
    gathered[i] = input_gathered;
    if (i > 0 && input_rows != rows) {
      throw RequestError(StrCat("model '", config.model_name, "': input '", config.inputs[i].library.name, "' has ",
                                input_rows, " rows, input '", config.inputs[0].library.name, "' ", rows));
    }
    rows = input_rows;
  }

  // The outputs the request asks for (Triton fills in all of them when it names none).
  uint32_t requested_count = 0;
  ThrowIfError(TRITONBACKEND_RequestOutputCount(request, &requested_count), "model '" + config.model_name + "'");
  std::vector<const ServedTensor*> outputs;
  for (uint32_t k = 0; k < requested_count; ++k) {
    const char* name = nullptr;
    ThrowIfError(TRITONBACKEND_RequestOutputName(request, k, &name), "model '" + config.model_name + "'");
    const ServedTensor* found = nullptr;
    for (const ServedTensor& output : config.outputs) {
      if (output.library.name == name) found = &output;
    }
    if (found == nullptr) {
      throw RequestError(StrCat("model '", config.model_name, "': the request asks for output '", name,
                                "', which the model does not have"));
    }
    outputs.push_back(found);
  }

  std::vector<char*> buffers(outputs.size(), nullptr);
  std::vector<size_t> row_bytes(outputs.size(), 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (size_t i = 0; i < inputs.size(); ++i) BindRow(i, inputs[i] + r * input_row_bytes_[i], gathered[i]);
    uint64_t start = NowNs();
    if (timing.compute_start_ns == 0) timing.compute_start_ns = start;
    try {
      executor_->Run();
    } catch (const runtime::Error& e) {
      throw runtime::Error(StrCat("model '", config.model_name, "': kiln could not run the request: ", e.what()));
    }
    timing.compute_end_ns = NowNs();
    ++timing.rows;
    ++rows_run_;

    for (size_t k = 0; k < outputs.size(); ++k) {
      runtime::NDArray result = executor_->GetOutput(outputs[k]->position);
      if (r == 0) {  // the shape is known once the first row ran (an extent may depend on the data)
        std::vector<int64_t> shape = result.shape();
        if (config.max_batch_size > 0) shape[0] = rows;
        row_bytes[k] = result.NumBytes();
        TRITONBACKEND_Output* output = nullptr;
        std::string where = StrCat("model '", config.model_name, "': output '", outputs[k]->library.name, "'");
        ThrowIfError(TRITONBACKEND_ResponseOutput(response, &output, outputs[k]->library.name.c_str(), outputs[k]->type,
                                                  shape.data(), static_cast<uint32_t>(shape.size())),
                     where);
        void* buffer = nullptr;
        TRITONSERVER_MemoryType memory_type = TRITONSERVER_MEMORY_CPU;
        int64_t memory_type_id = 0;
        ThrowIfError(TRITONBACKEND_OutputBuffer(output, &buffer, row_bytes[k] * rows, &memory_type, &memory_type_id),
                     where);
        Check(memory_type != TRITONSERVER_MEMORY_GPU, where, ": Triton gave a GPU buffer; kiln writes CPU memory");
        buffers[k] = static_cast<char*>(buffer);
      }
      if (row_bytes[k] > 0) std::memcpy(buffers[k] + r * row_bytes[k], result.data(), row_bytes[k]);
    }
  }
}

void Instance::Respond(TRITONBACKEND_ModelInstance* triton_instance, TRITONBACKEND_Request* request,
                       uint64_t exec_start, Timing& batch) {
  Timing timing;
  TRITONBACKEND_Response* response = nullptr;
  std::unique_ptr<TRITONSERVER_Error, void (*)(TRITONSERVER_Error*)> error(nullptr, TRITONSERVER_ErrorDelete);
  error.reset(TRITONBACKEND_ResponseNew(&response, request));
  if (error != nullptr) {
    // No response to carry the error: the client's request ends when it is released.
    Log(TRITONSERVER_LOG_ERROR, StrCat(name_, ": could not make a response; the request ends without one: ",
                                       TRITONSERVER_ErrorMessage(error.get())));
  } else {
    // Request errors are INVALID_ARG (HTTP 400); a failure to run a checked request, or in
    // Triton's output buffers, is INTERNAL (500); Triton's own errors keep their code.
    error.reset(Guard([&] { RunRequest(request, response, timing); }, TRITONSERVER_ERROR_INTERNAL));
    Report(TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, error.get()),
           "model '" + model_->config.model_name + "': sending a response");
  }
  const bool success = error == nullptr;
  if (!success) {
    Log(TRITONSERVER_LOG_VERBOSE, StrCat(name_, ": request failed: ", TRITONSERVER_ErrorMessage(error.get())));
  } else {
    batch.rows += timing.rows;
    if (batch.compute_start_ns == 0) batch.compute_start_ns = timing.compute_start_ns;
    batch.compute_end_ns = timing.compute_end_ns;
  }
  Report(TRITONBACKEND_ModelInstanceReportStatistics(triton_instance, request, success, exec_start,
                                                     timing.compute_start_ns, timing.compute_end_ns, NowNs()),
         name_ + ": reporting statistics");
}

void Instance::Execute(TRITONBACKEND_ModelInstance* triton_instance, TRITONBACKEND_Request** requests,
                       uint32_t count) {
  const uint64_t batch_start = NowNs();
  UpdateThreadCount();  // may throw (out of memory for its log line) before any request is ours
  Timing batch;
  for (uint32_t n = 0; n < count; ++n) {
    TRITONBACKEND_Request* request = requests[n];
    const uint64_t exec_start = n == 0 ? batch_start : NowNs();  // the requests run one after another
    try {
      Respond(triton_instance, request, exec_start, batch);
    } catch (...) {
      // Only running out of memory for a log line gets here (Respond's run is guarded); the request
      // is released all the same, since the requests before it are released already.
    }
    TRITONSERVER_Error* released = TRITONBACKEND_RequestRelease(request, TRITONSERVER_REQUEST_RELEASE_ALL);
    if (released != nullptr) {
      try {
        Report(released, name_ + ": releasing a request");
      } catch (...) {
        TRITONSERVER_ErrorDelete(released);
      }
    }
  }
  if (batch.rows > 0) {
    try {
      Report(TRITONBACKEND_ModelInstanceReportBatchStatistics(triton_instance, batch.rows, batch_start,
                                                              batch.compute_start_ns, batch.compute_end_ns, NowNs()),
             name_ + ": reporting batch statistics");
    } catch (...) {
    }
  }
}

}  // namespace kiln::triton
