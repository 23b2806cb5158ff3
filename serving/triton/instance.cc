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

// Bytes of `shape` of `dtype`; false when they pass 2^64.
bool ShapeBytes(const std::vector<int64_t>& shape, DLDataType dtype, uint64_t* bytes) {
  uint64_t count = static_cast<uint64_t>(runtime::DTypeBytes(dtype));
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(d), &count)) return false;
  }
  *bytes = count;
  return true;
}

size_t RowBytes(const TensorSpec& tensor) {
  uint64_t bytes = 0;
  ShapeBytes(tensor.shape, tensor.dtype, &bytes);  // the library's own shape: its memory holds it
  return static_cast<size_t>(bytes);
}

// "[b, 8] with b from 1 to 4", "[1, 8]" or "[1, -1] (-1: any value of the library's shape
// dimension)": the shapes a model takes, for messages.
std::string TakenShapes(const ServedTensor& tensor, int64_t max_batch_size) {
  std::vector<int64_t> dims = tensor.dims;
  if (max_batch_size == 0) dims = tensor.library.shape;
  for (size_t a = 0; a < tensor.library.varying.size(); ++a) {
    if (max_batch_size == 0 && tensor.library.varying[a]) dims[a] = -1;
  }
  bool varies = std::find(dims.begin(), dims.end(), -1) != dims.end();
  std::string text = max_batch_size == 0 ? ShapeToString(dims) : "[b";
  if (max_batch_size > 0) {
    for (int64_t d : dims) text += StrCat(", ", d);
    text += StrCat("] with b from 1 to ", max_batch_size);
  }
  return varies ? text + " (-1: any value of the library's shape dimension)" : text;
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
    combine_.emplace_back();
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
    std::vector<int64_t> shape = tensor.shape;
    if (tensor.batched) shape[0] *= std::max<int64_t>(1, model_->library->tensors().batch_min);
    runtime::NDArray zeros = runtime::NDArray::Empty(shape, tensor.dtype);
    std::memset(zeros.data(), 0, zeros.NumBytes());
    executor_->SetInput(input_index_[i], *zeros.get());
  }
  executor_->Run();
}

int64_t Instance::ReadInput(TRITONBACKEND_Request* request, size_t i, const char** data, bool* gathered,
                            std::vector<int64_t>* row_shape) {
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
  // One row's shape as the library takes it: the request's whole shape, or (batching) the
  // library's leading extent and the request's shape after its rows.
  const std::vector<int64_t>& library = served.library.shape;
  const size_t lead = max_batch_size == 0 ? 0 : 1;
  int64_t rows = max_batch_size == 0 ? 1 : (got.empty() ? 0 : got[0]);
  bool fits = got.size() == library.size() && (max_batch_size == 0 || (rows >= 1 && rows <= max_batch_size));
  *row_shape = library;
  for (size_t a = lead; fits && a < library.size(); ++a) {
    // Along a shape dimension's axis any extent here; the executor checks its range below.
    bool varying = a < served.library.varying.size() && served.library.varying[a];
    fits = varying ? got[a] >= 0 : got[a] == library[a];
    (*row_shape)[a] = got[a];
  }
  if (!fits) {
    throw RequestError(StrCat(where, ": the request's shape is ", ShapeToString(got), ", the model takes ",
                              TakenShapes(served, max_batch_size)));
  }
  uint64_t row_bytes = 0, expected = 0;
  if (!ShapeBytes(*row_shape, served.library.dtype, &row_bytes) ||
      __builtin_mul_overflow(static_cast<uint64_t>(rows), row_bytes, &expected)) {
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

std::vector<int64_t> Instance::BoundShape(size_t i, const std::vector<int64_t>& row_shape, int64_t rows) const {
  std::vector<int64_t> shape = row_shape;
  if (model_->config.inputs[i].library.batched) shape[0] *= rows;  // a library with a batch dimension: `rows` samples
  return shape;
}

void Instance::Bind(size_t i, const char* data, RowsFrom from, int64_t rows, const std::vector<int64_t>& row_shape) {
  const TensorSpec& tensor = model_->config.inputs[i].library;
  std::vector<int64_t> shape = BoundShape(i, row_shape, rows);
  DLTensor view{};
  view.data = const_cast<char*>(data);  // kiln's operators only read inputs
  view.device = runtime::kCPU;
  view.ndim = static_cast<int32_t>(shape.size());
  view.dtype = tensor.dtype;
  view.shape = shape.data();
  if (reinterpret_cast<uintptr_t>(data) % runtime::kAllocAlignment == 0) {
    executor_->SetInputZeroCopy(input_index_[i], view);
    uint64_t& counted = from == RowsFrom::kTriton ? inputs_in_place_
                        : from == RowsFrom::kGatherRoom ? inputs_gathered_ : inputs_copied_;
    counted += static_cast<uint64_t>(rows);
  } else {
    executor_->SetInput(input_index_[i], view);
    inputs_copied_ += static_cast<uint64_t>(rows);
  }
}

std::string Instance::Summary() const {
  return StrCat(rows_run_, " rows run in ", runs_, " runs; input rows: ", inputs_in_place_, " read in place, ",
                inputs_copied_, " copied, ", inputs_gathered_, " gathered");
}

Instance::Prepared Instance::Prepare(TRITONBACKEND_Request* request) {
  const ServingConfig& config = model_->config;
  Prepared prepared;
  prepared.inputs.resize(config.inputs.size());
  prepared.gathered.assign(config.inputs.size(), false);
  prepared.row_shapes.resize(config.inputs.size());
  prepared.rows = 1;  // a library without inputs runs once
  for (size_t i = 0; i < config.inputs.size(); ++i) {
    bool input_gathered = false;
    int64_t input_rows = ReadInput(request, i, &prepared.inputs[i], &input_gathered, &prepared.row_shapes[i]);
    prepared.gathered[i] = input_gathered;
    if (i > 0 && input_rows != prepared.rows) {
      throw RequestError(StrCat("model '", config.model_name, "': input '", config.inputs[i].library.name, "' has ",
                                input_rows, " rows, input '", config.inputs[0].library.name, "' ", prepared.rows));
    }
    prepared.rows = input_rows;
    uint64_t row_bytes = 0;
    ShapeBytes(prepared.row_shapes[i], config.inputs[i].library.dtype, &row_bytes);  // checked by ReadInput
    prepared.row_bytes.push_back(static_cast<size_t>(row_bytes));
  }
  if (prepared.rows < config.run_rows_min) {
    throw RequestError(StrCat("model '", config.model_name, "': the request has ", prepared.rows,
                              " rows; the library runs batches of ", config.run_rows_min, " to ", config.run_rows_max));
  }
  // A library with shape dimensions: the values the inputs give, in range and in agreement, then
  // every input's shape at them (an extent such as S+1 that no axis of its own gives).
  auto shape_dims = [&](size_t i, const std::vector<int64_t>* given) {
    std::vector<int64_t> shape = BoundShape(i, prepared.row_shapes[i], std::min(prepared.rows, config.run_rows_max));
    try {
      return executor_->InputShapeDims(input_index_[i], shape, config.inputs[i].library.dtype, given);
    } catch (const runtime::Error& e) {
      throw RequestError(StrCat("model '", config.model_name, "': ", e.what()));
    }
  };
  for (size_t i = 0; i < config.inputs.size(); ++i) {
    std::vector<int64_t> dims = shape_dims(i, nullptr);
    if (prepared.dims.empty()) prepared.dims = dims;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] < 0) continue;
      if (prepared.dims[d] >= 0 && prepared.dims[d] != dims[d]) {
        throw RequestError(StrCat("model '", config.model_name, "': input '", config.inputs[i].library.name,
                                  "' gives the shape dimension ", model_->library->tensors().dim_names[d], " the value ",
                                  dims[d], ", an earlier input ", prepared.dims[d]));
      }
      prepared.dims[d] = dims[d];
    }
  }
  for (size_t i = 0; i < config.inputs.size() && !prepared.dims.empty(); ++i) shape_dims(i, &prepared.dims);

  // The outputs the request asks for (Triton fills in all of them when it names none).
  uint32_t requested_count = 0;
  ThrowIfError(TRITONBACKEND_RequestOutputCount(request, &requested_count), "model '" + config.model_name + "'");
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
    prepared.outputs.push_back(found);
  }
  return prepared;
}

void Instance::RunOnce(int64_t rows, Timing& timing) {
  uint64_t start = NowNs();
  if (timing.compute_start_ns == 0) timing.compute_start_ns = start;
  try {
    executor_->Run();
  } catch (const runtime::Error& e) {
    throw runtime::Error(StrCat("model '", model_->config.model_name, "': kiln could not run the request: ", e.what()));
  }
  timing.compute_end_ns = NowNs();
  timing.rows += static_cast<uint64_t>(rows);
  rows_run_ += static_cast<uint64_t>(rows);
  ++runs_;
}

void Instance::CopyRows(const Prepared& prepared, TRITONBACKEND_Response* response, int64_t first, int64_t rows,
                        int64_t result_first, std::vector<char*>& buffers) {
  const ServingConfig& config = model_->config;
  for (size_t k = 0; k < prepared.outputs.size(); ++k) {
    const ServedTensor& served = *prepared.outputs[k];
    runtime::NDArray result = executor_->GetOutput(served.position);
    // One sample's (row's) bytes: the result holds the run's rows (a fixed library: one).
    size_t row_bytes = result.NumBytes() / static_cast<size_t>(std::max<int64_t>(1, RowsOf(result, served)));
    if (first == 0) {  // the shape is known once the first rows ran (an extent may depend on the data)
      std::vector<int64_t> shape = result.shape();
      if (config.max_batch_size > 0) shape[0] = prepared.rows;
      TRITONBACKEND_Output* output = nullptr;
      std::string where = StrCat("model '", config.model_name, "': output '", served.library.name, "'");
      ThrowIfError(TRITONBACKEND_ResponseOutput(response, &output, served.library.name.c_str(), served.type,
                                                shape.data(), static_cast<uint32_t>(shape.size())),
                   where);
      void* buffer = nullptr;
      TRITONSERVER_MemoryType memory_type = TRITONSERVER_MEMORY_CPU;
      int64_t memory_type_id = 0;
      ThrowIfError(TRITONBACKEND_OutputBuffer(output, &buffer, row_bytes * static_cast<size_t>(prepared.rows),
                                              &memory_type, &memory_type_id),
                   where);
      Check(memory_type != TRITONSERVER_MEMORY_GPU, where, ": Triton gave a GPU buffer; kiln writes CPU memory");
      buffers[k] = static_cast<char*>(buffer);
    }
    if (row_bytes > 0) {
      std::memcpy(buffers[k] + first * row_bytes, static_cast<const char*>(result.data()) + result_first * row_bytes,
                  static_cast<size_t>(rows) * row_bytes);
    }
  }
}

int64_t Instance::RowsOf(const runtime::NDArray& result, const ServedTensor& served) const {
  return served.library.batched && model_->config.run_rows_max > 1 ? result.shape()[0] / served.library.shape[0] : 1;
}

void Instance::RunRequest(TRITONBACKEND_Request* request, TRITONBACKEND_Response* response, Timing& timing) {
  RunPrepared(Prepare(request), response, timing);
}

void Instance::RunPrepared(const Prepared& prepared, TRITONBACKEND_Response* response, Timing& timing) {
  const ServingConfig& config = model_->config;
  std::vector<char*> buffers(prepared.outputs.size(), nullptr);
  for (int64_t first = 0; first < prepared.rows;) {
    // As many rows as the library runs at once, leaving at least its minimum for the last run.
    int64_t rows = std::min(prepared.rows - first, config.run_rows_max);
    int64_t left = prepared.rows - first - rows;
    if (left > 0 && left < config.run_rows_min) rows -= config.run_rows_min - left;
    for (size_t i = 0; i < config.inputs.size(); ++i) {
      Bind(i, prepared.inputs[i] + first * prepared.row_bytes[i],
           prepared.gathered[i] ? RowsFrom::kGatherRoom : RowsFrom::kTriton, rows, prepared.row_shapes[i]);
    }
    RunOnce(rows, timing);
    CopyRows(prepared, response, first, rows, 0, buffers);
    first += rows;
  }
}

void Instance::Respond(TRITONBACKEND_ModelInstance* triton_instance, TRITONBACKEND_Request* request,
                       uint64_t exec_start, Timing& batch) {
  TRITONBACKEND_Response* response = NewResponse(request);
  if (response == nullptr) return;
  Timing timing;
  // Request errors are INVALID_ARG (HTTP 400); a failure to run a checked request, or in
  // Triton's output buffers, is INTERNAL (500); Triton's own errors keep their code.
  TRITONSERVER_Error* error = Guard([&] { RunRequest(request, response, timing); }, TRITONSERVER_ERROR_INTERNAL);
  Finish(triton_instance, request, response, error, exec_start, timing, batch);
}

TRITONBACKEND_Response* Instance::NewResponse(TRITONBACKEND_Request* request) {
  TRITONBACKEND_Response* response = nullptr;
  TRITONSERVER_Error* error = TRITONBACKEND_ResponseNew(&response, request);
  if (error == nullptr) return response;
  // No response to carry the error: the client's request ends when it is released.
  std::string message = TRITONSERVER_ErrorMessage(error);
  TRITONSERVER_ErrorDelete(error);
  Log(TRITONSERVER_LOG_ERROR, StrCat(name_, ": could not make a response; the request ends without one: ", message));
  return nullptr;
}

void Instance::Finish(TRITONBACKEND_ModelInstance* triton_instance, TRITONBACKEND_Request* request,
                      TRITONBACKEND_Response* response, TRITONSERVER_Error* error, uint64_t exec_start,
                      const Timing& timing, Timing& batch) {
  std::unique_ptr<TRITONSERVER_Error, void (*)(TRITONSERVER_Error*)> owned(error, TRITONSERVER_ErrorDelete);
  Report(TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, owned.get()),
         "model '" + model_->config.model_name + "': sending a response");
  const bool success = owned == nullptr;
  if (!success) {
    Log(TRITONSERVER_LOG_VERBOSE, StrCat(name_, ": request failed: ", TRITONSERVER_ErrorMessage(owned.get())));
  } else {
    batch.rows += timing.rows;
    if (batch.compute_start_ns == 0) batch.compute_start_ns = timing.compute_start_ns;
    batch.compute_end_ns = timing.compute_end_ns;
  }
  Report(TRITONBACKEND_ModelInstanceReportStatistics(triton_instance, request, success, exec_start,
                                                     timing.compute_start_ns, timing.compute_end_ns, NowNs()),
         name_ + ": reporting statistics");
}

char* Instance::CombineRoom(size_t i, uint64_t bytes) {
  runtime::NDArray& room = combine_[i];
  if (!room.defined() || room.NumBytes() < bytes) {
    // Room for the library's largest run, at once: the group's rows are never moved.
    uint64_t largest = static_cast<uint64_t>(model_->config.run_rows_max) * input_row_bytes_[i];
    int64_t size = static_cast<int64_t>(std::max<uint64_t>({bytes, largest, runtime::kAllocAlignment}));
    room = runtime::NDArray::Empty({size}, DLDataType{kDLUInt, 8, 1});
  }
  return static_cast<char*>(room.data());
}

void Instance::ExecuteTogether(TRITONBACKEND_ModelInstance* triton_instance, TRITONBACKEND_Request** requests,
                               uint32_t count, uint64_t batch_start, Timing& batch, std::vector<Answer>& answers) {
  const ServingConfig& config = model_->config;
  // Sends request n's response and marks it answered.
  auto finish = [&](uint32_t n, TRITONSERVER_Error* error, uint64_t exec_start, const Timing& timing) {
    answers[n].answered = true;
    Finish(triton_instance, requests[n], answers[n].response, error, exec_start, timing, batch);
  };
  struct Member {
    uint32_t n;  // the request's index
    Prepared prepared;
    int64_t first_row;  // in the group's run
    uint64_t exec_start;
  };
  std::vector<Member> group;
  int64_t group_rows = 0;
  // One run of the library over the group's rows, gathered one request after another; each
  // request gets its rows of the outputs.
  auto run_group = [&] {
    Timing timing;
    TRITONSERVER_Error* run_error = Guard([&] {
      for (size_t i = 0; i < config.inputs.size(); ++i) {
        Bind(i, CombineRoom(i, 0), RowsFrom::kTogether, group_rows, group.front().prepared.row_shapes[i]);
      }
      RunOnce(group_rows, timing);
    }, TRITONSERVER_ERROR_INTERNAL);
    for (Member& m : group) {
      Timing share = timing;
      share.rows = static_cast<uint64_t>(m.prepared.rows);
      TRITONSERVER_Error* error = run_error != nullptr
                                      ? TRITONSERVER_ErrorNew(TRITONSERVER_ErrorCode(run_error), TRITONSERVER_ErrorMessage(run_error))
                                      : Guard([&] {
                                          std::vector<char*> buffers(m.prepared.outputs.size(), nullptr);
                                          CopyRows(m.prepared, answers[m.n].response, 0, m.prepared.rows, m.first_row,
                                                   buffers);
                                        }, TRITONSERVER_ERROR_INTERNAL);
      finish(m.n, error, m.exec_start, share);
    }
    if (run_error != nullptr) TRITONSERVER_ErrorDelete(run_error);
    group.clear();
    group_rows = 0;
  };
  for (uint32_t n = 0; n < count; ++n) {
    const uint64_t exec_start = n == 0 ? batch_start : NowNs();
    TRITONBACKEND_Response* response = NewResponse(requests[n]);
    answers[n].response = response;
    if (response == nullptr) {
      answers[n].answered = true;  // nothing can carry an answer: the request ends when released
      continue;
    }
    Prepared prepared;
    TRITONSERVER_Error* error = Guard([&] { prepared = Prepare(requests[n]); }, TRITONSERVER_ERROR_INTERNAL);
    if (error == nullptr && prepared.rows > config.run_rows_max) {
      // More rows than one run takes: this request runs alone, in runs of its own.
      Timing timing;
      error = Guard([&] { RunPrepared(prepared, response, timing); }, TRITONSERVER_ERROR_INTERNAL);
      finish(n, error, exec_start, timing);
      continue;
    }
    if (error != nullptr) {
      finish(n, error, exec_start, Timing{});
      continue;
    }
    // A group runs at one shape per input (one value of each shape dimension): a request of
    // other shapes starts a new one.
    bool other_shapes = !group.empty() && group.front().prepared.row_shapes != prepared.row_shapes;
    if (group_rows + prepared.rows > config.run_rows_max || other_shapes) run_group();
    // Its rows into the group's rooms now: the next request may read into the same gather room.
    error = Guard([&] {
      for (size_t i = 0; i < config.inputs.size(); ++i) {
        uint64_t bytes = static_cast<uint64_t>(prepared.rows) * prepared.row_bytes[i];
        uint64_t offset = static_cast<uint64_t>(group_rows) * prepared.row_bytes[i];
        char* room = CombineRoom(i, offset + bytes);  // made for the largest run: never moves within a group
        if (bytes > 0) std::memcpy(room + offset, prepared.inputs[i], bytes);
      }
    }, TRITONSERVER_ERROR_INTERNAL);
    if (error != nullptr) {
      finish(n, error, exec_start, Timing{});
      continue;
    }
    group.push_back({n, std::move(prepared), group_rows, exec_start});
    group_rows += group.back().prepared.rows;
  }
  if (!group.empty()) run_group();
}

void Instance::Execute(TRITONBACKEND_ModelInstance* triton_instance, TRITONBACKEND_Request** requests,
                       uint32_t count) {
  const uint64_t batch_start = NowNs();
  UpdateThreadCount();  // may throw (out of memory for its log line) before any request is ours
  Timing batch;
  if (model_->config.run_rows_max > 1 && count > 1) {
    std::vector<Answer> answers(count);
    try {
      ExecuteTogether(triton_instance, requests, count, batch_start, batch, answers);
    } catch (...) {
      // Out of memory midway: each request not answered yet gets an error, every one is released
      // below.
      for (uint32_t n = 0; n < count; ++n) {
        if (answers[n].answered) continue;
        TRITONBACKEND_Response* response = answers[n].response;
        if (response == nullptr && TRITONBACKEND_ResponseNew(&response, requests[n]) != nullptr) continue;
        TRITONSERVER_Error* error = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "kiln ran out of memory");
        TRITONSERVER_Error* sent = TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, error);
        if (error != nullptr) TRITONSERVER_ErrorDelete(error);
        if (sent != nullptr) TRITONSERVER_ErrorDelete(sent);
      }
    }
  }
  for (uint32_t n = 0; n < count; ++n) {
    TRITONBACKEND_Request* request = requests[n];
    const uint64_t exec_start = n == 0 ? batch_start : NowNs();  // the requests run one after another
    try {
      if (model_->config.run_rows_max <= 1 || count == 1) Respond(triton_instance, request, exec_start, batch);
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
