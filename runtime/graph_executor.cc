// Graph executor: storage planning from storage ids, prepared operator calls, zero-copy binding
// and parameter loading/sharing.
#include "runtime/graph_executor.h"

#include <cstring>
#include <numeric>

#include "runtime/error.h"
#include "runtime/thread_pool.h"

namespace kiln::runtime {
namespace {

constexpr DLDataType kBytes{kDLUInt, 8, 1};
// The most a sized entry (graph().sized_entries) may take: 16 GiB, more than a CPU inference needs.
constexpr int64_t kMaxSizedBytes = int64_t{1} << 34;

std::string NodeLabel(const Graph& graph, uint32_t node) {
  return StrCat("graph node ", node, " '", graph.nodes[node].name, "'");
}

// The `bytes` bytes at `data` inside the library `lib`, as an array that keeps the library loaded.
NDArray LibraryBytes(void* data, size_t bytes, const Module& lib) {
  struct Holder {
    DLManagedTensor managed;
    int64_t shape;
    Module lib;
  };
  auto* holder = new Holder{{}, static_cast<int64_t>(bytes), lib};
  holder->managed.dl_tensor = DLTensor{data, kCPU, 1, kBytes, &holder->shape, nullptr, 0};
  holder->managed.manager_ctx = holder;
  holder->managed.deleter = [](DLManagedTensor* self) { delete static_cast<Holder*>(self->manager_ctx); };
  return NDArray::FromDLPack(&holder->managed);
}

}  // namespace

GraphExecutor::GraphExecutor(Graph graph, Module lib, const std::vector<DLDevice>& devices)
    : graph_(std::move(graph)), lib_(std::move(lib)) {
  Check(lib_.defined(), "graph executor: the operator library is empty");
  Check(!devices.empty(), "graph executor: no device given");
  for (DLDevice device : devices) {
    Check(device.device_type == kDLCPU, "graph executor: device type ", int{device.device_type},
          " is not supported; this build of kiln runs on the CPU only");
  }
  for (size_t e = 0; e < graph_.device_types.size(); ++e) {
    Check(graph_.device_types[e] == kDLCPU, "graph JSON: entry ", e, " is placed on device type ",
          graph_.device_types[e], ", but this build of kiln runs on the CPU only");
  }
  for (int i = 0; i < NumInputs(); ++i) input_index_[InputName(i)] = i;
  is_param_.assign(graph_.arg_nodes.size(), false);
  num_outputs_ = static_cast<int>(graph_.num_model_outputs());
  if (graph_.has_batch()) {
    sample_rows_.assign(graph_.num_entries(), 0);
    for (uint32_t e = 0; e < graph_.num_entries(); ++e) {
      if (graph_.batched_entries[e]) sample_rows_[e] = graph_.shapes[e][0] / graph_.batch.max;
    }
    input_samples_.assign(graph_.arg_nodes.size(), 0);
    output_samples_.assign(num_outputs_, 0);
    samples_ = graph_.batch.max;  // storage is allocated for the largest batch
  }
  largest_shapes_ = graph_.shapes;
  front_param_.assign(graph_.num_entries(), false);
  for (uint32_t e : graph_.front_params) front_param_[e] = true;
  if (graph_.has_dims()) {  // storage is allocated for every dimension's max
    for (const ShapeDim& dim : graph_.dims) dim_values_.push_back(dim.max);
    input_dims_.assign(graph_.arg_nodes.size(), {});
    output_dims_.assign(num_outputs_, {});
    input_bound_shapes_.assign(graph_.arg_nodes.size(), {});
    output_bound_shapes_.assign(num_outputs_, {});
  }
  AllocateStorage();
  BuildSteps();
  // A sized entry holds one element until a run sizes it: enough for what an output of no axes
  // shows before any run.
  for (const SizedEntry& sized : graph_.sized_entries) GrowSizedEntry(sized.entry, 1);
  // Until a run sets them, the counts and shapes say that data-dependent outputs are empty.
  for (const OutputTrim& trim : graph_.output_trims) {
    const NDArray& count = entries_[graph_.EntryId(graph_.heads[trim.count_output])];
    std::memset(count.data(), 0, count.NumBytes());
  }
}

void GraphExecutor::AllocateStorage() {
  size_t num_entries = graph_.num_entries();
  std::vector<size_t> bytes(num_entries, 0);  // per storage id (ids are below num_entries)
  uint32_t num_storage = 0;
  for (size_t e = 0; e < num_entries; ++e) {
    DLTensor t = EntryTensor(static_cast<uint32_t>(e), nullptr);
    uint32_t sid = graph_.storage_ids[e];
    try {  // every entry is checked before any storage is allocated
      size_t entry_bytes = DataBytes(t);
      CheckTensorBytes(static_cast<int64_t>(entry_bytes), "a tensor of shape " + ShapeToString(t.shape, t.ndim));
      bytes[sid] = std::max(bytes[sid], entry_bytes);
    } catch (const Error& error) {
      Fail("graph JSON: entry ", e, ": ", error.what());
    }
    num_storage = std::max(num_storage, sid + 1);
  }
  storage_.resize(num_storage);
  storage_bytes_.assign(bytes.begin(), bytes.begin() + num_storage);
  storage_linked_.assign(num_storage, false);
  entry_linked_.assign(num_entries, false);
  entries_.resize(num_entries);
  // Parameters linked into the library (TVM's link-params) are used where they lie, as TVM's
  // executor does: the library's lookup gives their address by storage id.
  PackedFunc lookup_linked = lib_.GetFunction("_lookup_linked_param", /*query_imports=*/true);
  for (size_t e = 0; e < num_entries; ++e) {
    uint32_t sid = graph_.storage_ids[e];
    if (!storage_[sid].defined() && lookup_linked.defined()) {
      if (void* linked = lookup_linked(static_cast<int64_t>(sid)).AsArg().AsHandle()) {
        storage_[sid] = LibraryBytes(linked, bytes[sid], lib_);
        storage_linked_[sid] = true;
      }
    }
    if (!storage_[sid].defined()) {
      storage_[sid] = NDArray::Empty({static_cast<int64_t>(bytes[sid])}, kBytes);
    }
    entries_[e] = storage_[sid].CreateView(graph_.shapes[e], graph_.dtypes[e]);
    entry_linked_[e] = storage_linked_[sid];
  }
  for (int i = 0; i < NumInputs(); ++i) is_param_[i] = entry_linked_[InputEntry(i)];
  entry_data_.resize(num_entries);
  for (size_t e = 0; e < num_entries; ++e) entry_data_[e] = entries_[e].data();
  entry_args_.assign(num_entries, {});
  entry_shared_.assign(num_entries, false);

  // Entries joined by a __nop that keeps the storage id are one memory: bind them together.
  std::vector<uint32_t> parent(num_entries);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](uint32_t e) {
    while (parent[e] != e) e = parent[e] = parent[parent[e]];
    return e;
  };
  for (size_t n = 0; n < graph_.nodes.size(); ++n) {
    const GraphNode& node = graph_.nodes[n];
    if (node.func_name != "__nop" || node.inputs.size() != 1) continue;
    uint32_t in = graph_.EntryId(node.inputs[0]);
    uint32_t out = graph_.EntryId(static_cast<uint32_t>(n), 0);
    if (graph_.storage_ids[in] == graph_.storage_ids[out]) parent[find(out)] = find(in);
  }
  alias_root_.resize(num_entries);
  alias_members_.assign(num_entries, {});
  for (uint32_t e = 0; e < num_entries; ++e) {
    alias_root_[e] = find(e);
    alias_members_[alias_root_[e]].push_back(e);
  }
}

void GraphExecutor::BuildSteps() {
  for (uint32_t n = 0; n < graph_.nodes.size(); ++n) {
    const GraphNode& node = graph_.nodes[n];
    if (node.is_input()) continue;
    std::string where = NodeLabel(graph_, n);
    Check(!node.flatten_data || (!graph_.has_batch() && !graph_.has_dims()), "graph JSON: ", where,
          " has flatten_data, which a graph with a batch or shape dimensions does not support");
    Step step;
    step.node = n;
    for (const RunCondition& c : node.run_if) step.run_if.emplace_back(graph_.EntryId(c.condition), c.taken);
    std::vector<uint32_t> args;
    for (const GraphEntryRef& in : node.inputs) args.push_back(graph_.EntryId(in));
    for (uint32_t k = 0; k < node.num_outputs; ++k) args.push_back(graph_.EntryId(n, k));
    for (const SizedEntry& sized : graph_.sized_entries) {
      if (sized.entry >= graph_.EntryId(n, 0) && sized.entry < graph_.EntryId(n, 0) + node.num_outputs) {
        step.sized.push_back(sized);
      }
    }

    if (node.func_name == "__nop" || node.func_name == "__copy") {
      Check(node.inputs.size() == 1 && node.num_outputs == 1, "graph JSON: ", where, ": ",
            node.func_name, " needs exactly one input and one output");
      DLTensor in = EntryTensor(args[0], nullptr), out = EntryTensor(args[1], nullptr);
      Check(DataBytes(in) == DataBytes(out), "graph JSON: ", where, ": ", node.func_name,
            " from ", DTypeToString(in.dtype), ShapeToString(in.shape, in.ndim), " to ",
            DTypeToString(out.dtype), ShapeToString(out.shape, out.ndim), " changes the size");
      if (node.func_name == "__nop" && graph_.storage_ids[args[0]] == graph_.storage_ids[args[1]]) {
        continue;  // same memory: nothing to do
      }
      step.kind = Step::Kind::kCopy;
    } else {
      step.function = lib_.GetFunction(node.func_name, /*query_imports=*/true);
      Check(step.function.defined(), where, ": function '", node.func_name,
            "' is not in the library");
    }
    step.tensors.resize(args.size());
    step.flat_shapes.resize(args.size());
    step.values.resize(args.size());
    step.codes.assign(args.size(), kTVMDLTensorHandle);
    for (size_t i = 0; i < args.size(); ++i) {
      DLTensor& t = step.tensors[i];
      t = EntryTensor(args[i], entry_data_[args[i]]);
      if (node.flatten_data) {
        step.flat_shapes[i] = NumElements(t);
        t.ndim = 1;
        t.shape = &step.flat_shapes[i];
      }
      step.values[i].v_handle = &t;
      entry_args_[args[i]].push_back(&t);  // stable: the step's vectors never grow again
    }
    // The operators of a library with shape dimensions take their values after the tensors.
    if (step.kind == Step::Kind::kCall) {
      for (int64_t value : dim_values_) {
        step.values.emplace_back().v_int64 = value;
        step.codes.push_back(kDLInt);
      }
    }
    steps_.push_back(std::move(step));
  }
}

DLTensor GraphExecutor::EntryTensor(uint32_t entry, void* data) const {
  DLTensor t{};
  t.data = data;
  t.device = kCPU;
  t.ndim = static_cast<int>(graph_.shapes[entry].size());
  t.dtype = graph_.dtypes[entry];
  t.shape = const_cast<int64_t*>(graph_.shapes[entry].data());
  return t;
}

void GraphExecutor::Run() {
  PrepareRun();
  for (size_t i = 0; i < steps_.size(); ++i) RunStep(i);
}

void GraphExecutor::PrepareRun() {
  int64_t samples = samples_;
  if (graph_.has_batch()) {
    samples = InputSamples();
    for (int i = 0; i < NumOutputs(); ++i) {
      Check(output_samples_[i] == 0 || output_samples_[i] == samples, "run: output ", i, " is bound to a buffer of ",
            output_samples_[i], " samples, but the inputs hold ", samples);
    }
  }
  std::vector<int64_t> dims = graph_.has_dims() ? InputDims() : dim_values_;
  for (int i = 0; i < static_cast<int>(output_dims_.size()); ++i) {
    for (size_t d = 0; d < dims.size(); ++d) {
      int64_t bound = output_dims_[i].empty() ? -1 : output_dims_[i][d];
      Check(bound < 0 || bound == dims[d], "run: output ", i, " is bound to a buffer for ", graph_.dims[d].name,
            " = ", bound, ", but the inputs give ", dims[d]);
    }
  }
  // Buffers bound with zero copy hold exactly what the run reads or writes (an extent that is not
  // one dimension, 4*S, is not decided by the buffer: checked here).
  auto check_bound = [&](const std::vector<int64_t>& bound, uint32_t e, const std::string& what) {
    if (bound.empty()) return;
    std::vector<int64_t> shape = EvaluateShape(graph_.entry_extents[e], dims);
    if (Batched(e)) shape[0] *= samples;
    Check(bound == shape, "run: ", what, " is bound to a buffer of shape ", ShapeToString(bound),
          ", but the inputs give it ", ShapeToString(shape));
  };
  for (int i = 0; i < static_cast<int>(input_bound_shapes_.size()); ++i) {
    if (front_param_[InputEntry(i)]) continue;  // bound whole; the operators read its front
    check_bound(input_bound_shapes_[i], InputEntry(i), StrCat("input '", InputName(i), "'"));
  }
  for (int i = 0; i < static_cast<int>(output_bound_shapes_.size()); ++i) {
    check_bound(output_bound_shapes_[i], OutputEntry(i), StrCat("output ", i));
  }
  SetShapes(samples, dims);
}

void GraphExecutor::SetNumThreads(int num_threads) {
  Check(num_threads >= 0 && num_threads <= 1024, "set_num_threads: expected a thread count from 0 (the process's) ",
        "to 1024, got ", num_threads);
  num_threads_ = num_threads;
}

void GraphExecutor::RunStep(size_t index) {
  ScopedThreadCount threads(num_threads_);
  Step& step = steps_[index];
  for (const auto& [entry, taken] : step.run_if) {
    if ((*static_cast<const uint8_t*>(entry_data_[entry]) != 0) != taken) return;
  }
  for (const SizedEntry& sized : step.sized) SizeEntry(sized, step.node);
  if (step.kind == Step::Kind::kCopy) {
    const DLTensor& from = step.tensors[0];
    const DLTensor& to = step.tensors[1];
    if (from.data != to.data) std::memcpy(to.data, from.data, DataBytes(from));
    return;
  }
  try {
    step.function.CallPacked(Args(step.values.data(), step.codes.data(),
                                  static_cast<int>(step.values.size())),
                             &result_);
  } catch (const std::exception& e) {
    const GraphNode& node = graph_.nodes[step.node];
    Fail(NodeLabel(graph_, step.node), " (", node.func_name, ") failed: ", e.what());
  }
}

void GraphExecutor::SizeEntry(const SizedEntry& sized, uint32_t node) {
  const auto* extents = static_cast<const int64_t*>(entry_data_[sized.shape_entry]);
  std::vector<int64_t> shape(extents, extents + graph_.shapes[sized.shape_entry][0]);
  int64_t elements = 1, bytes = 0;
  for (int64_t extent : shape) {
    Check(extent >= 0 && !__builtin_mul_overflow(elements, extent, &elements), NodeLabel(graph_, node),
          ": its output's shape ", ShapeToString(shape), " is not a shape");
  }
  Check(!__builtin_mul_overflow(elements, DTypeBytes(graph_.dtypes[sized.entry]), &bytes) && bytes <= kMaxSizedBytes,
        NodeLabel(graph_, node), ": its output's shape ", ShapeToString(shape), " needs more than ", kMaxSizedBytes,
        " bytes");
  try {
    GrowSizedEntry(sized.entry, elements);
  } catch (const Error& error) {  // out of memory: say whose output it was
    Fail(NodeLabel(graph_, node), ": its output of shape ", ShapeToString(shape), ": ", error.what());
  }
}

void GraphExecutor::GrowSizedEntry(uint32_t entry, int64_t elements) {
  if (elements > NumElements(*entries_[entry].get())) {
    NDArray grown = NDArray::Empty({elements}, graph_.dtypes[entry]);
    std::memset(grown.data(), 0, grown.NumBytes());
    entries_[entry] = grown;
    entry_data_[entry] = grown.data();
    for (DLTensor* t : entry_args_[entry]) t->data = grown.data();
  }
  graph_.shapes[entry][0] = elements;  // the operators' DLTensors point here
}

int GraphExecutor::GetInputIndex(const std::string& name) const {
  auto it = input_index_.find(name);
  return it == input_index_.end() ? -1 : it->second;
}

int GraphExecutor::GetOutputIndex(const std::string& name) const {
  for (int i = 0; i < NumOutputs(); ++i) {
    const GraphEntryRef& head = graph_.heads[i];
    const std::string& node_name = graph_.nodes[head.node_id].name;
    if (name == StrCat(node_name, ":", head.index) || (head.index == 0 && name == node_name)) {
      return i;
    }
  }
  return -1;
}

int GraphExecutor::InputIndex(const std::string& name) const {
  int index = GetInputIndex(name);
  if (index >= 0) return index;
  std::string known;
  for (int i = 0; i < NumInputs(); ++i) known += (i > 0 ? ", " : "") + InputName(i);
  Fail("the graph has no input named '", name, "' (its inputs are: ", known, ")");
}

int GraphExecutor::OutputIndex(const std::string& name) const {
  int index = GetOutputIndex(name);
  if (index >= 0) return index;
  std::string known;
  for (const TensorInfo& info : GetOutputInfo()) known += (known.empty() ? "" : ", ") + info.name;
  Fail("the graph has no output named '", name, "' (its outputs are: ", known, ")");
}

const std::string& GraphExecutor::InputName(int index) const {
  CheckInputIndex(index);
  return graph_.nodes[graph_.arg_nodes[index]].name;
}

std::vector<TensorInfo> GraphExecutor::GetInputInfo() const {
  std::vector<TensorInfo> infos;
  for (int i = 0; i < NumInputs(); ++i) {
    if (is_param_[i]) continue;
    uint32_t e = InputEntry(i);
    infos.push_back(TensorInfo{InputName(i), LargestShape(e), graph_.dtypes[e], BatchDimOf(e), AxisDims(e)});
  }
  return infos;
}

std::vector<TensorInfo> GraphExecutor::GetOutputInfo() const {
  std::vector<TensorInfo> infos;
  for (int i = 0; i < NumOutputs(); ++i) {
    const GraphEntryRef& head = graph_.heads[i];
    uint32_t e = OutputEntry(i);
    std::vector<int64_t> shape = LargestShape(e);
    if (const OutputTrim* trim = TrimOf(i); trim != nullptr && trim->whole_shape) {  // every extent unknown
      shape.assign(graph_.shapes[graph_.EntryId(graph_.heads[trim->count_output])][0], -1);
    }
    infos.push_back(TensorInfo{StrCat(graph_.nodes[head.node_id].name, ":", head.index), std::move(shape),
                               graph_.dtypes[e], BatchDimOf(e), AxisDims(e)});
  }
  return infos;
}

void GraphExecutor::CheckInputIndex(int index) const {
  Check(index >= 0 && index < NumInputs(), "input index ", index, " is out of range (the graph has ",
        NumInputs(), " inputs)");
}

void GraphExecutor::CheckOutputIndex(int index) const {
  Check(index >= 0 && index < NumOutputs(), "output index ", index,
        " is out of range (the graph has ", NumOutputs(), " outputs)");
}

uint32_t GraphExecutor::InputEntry(int index) const {
  CheckInputIndex(index);
  return graph_.EntryId(graph_.arg_nodes[index], 0);
}

uint32_t GraphExecutor::OutputEntry(int index) const {
  CheckOutputIndex(index);
  return graph_.EntryId(graph_.heads[index]);
}

void GraphExecutor::Bind(uint32_t entry, void* data) {
  for (uint32_t member : alias_members_[alias_root_[entry]]) {
    entry_data_[member] = data;
    for (DLTensor* t : entry_args_[member]) {
      t->data = data;
      t->byte_offset = 0;
    }
  }
}

int64_t GraphExecutor::CheckZeroCopyBuffer(uint32_t entry, const DLTensor& data,
                                           const std::string& what) const {
  bool batched = Batched(entry);
  bool with_dims = graph_.has_dims() && !graph_.entry_extents[entry].empty() && !front_param_[entry];
  int64_t samples = batched && !with_dims ? SamplesIn(entry, data, what) : 0;
  if (with_dims) DimsIn(entry, data, what, batched ? &samples : nullptr);
  if (!batched && !with_dims) {
    DLTensor largest = EntryTensor(entry, nullptr);  // a constant whose front is read: whole
    largest.shape = const_cast<int64_t*>(largest_shapes_[entry].data());
    CheckSameType(largest, data, what);
  }
  Check(data.device.device_type == kDLCPU, what, ": the buffer is not in CPU memory");
  Check(IsCompact(data), what, ": the buffer is not compact (row-major without gaps)");
  auto address = reinterpret_cast<uintptr_t>(data.data) + data.byte_offset;
  Check(data.data != nullptr && address % kAllocAlignment == 0, what, ": the buffer at address 0x",
        std::hex, address, std::dec, " is not ", kAllocAlignment,
        "-byte aligned (kiln's operators assume aligned data; use set_input to copy instead)");
  return samples;
}

int64_t GraphExecutor::SamplesIn(uint32_t entry, const DLTensor& data, const std::string& what) const {
  const std::vector<int64_t>& shape = graph_.shapes[entry];
  const BatchDim& batch = graph_.batch;
  int64_t rows = sample_rows_[entry];
  bool fits = data.dtype == graph_.dtypes[entry] && data.ndim == static_cast<int>(shape.size()) && data.ndim > 0 &&
              std::equal(shape.begin() + 1, shape.end(), data.shape + 1);
  std::string dim = BatchDimOf(entry);
  std::string expected = DTypeToString(graph_.dtypes[entry]) + "[" + dim;
  for (size_t i = 1; i < shape.size(); ++i) expected += StrCat(", ", shape[i]);
  Check(fits, what, ": expected ", expected, "] with ", batch.name, " from ", batch.min, " to ", batch.max, ", got ",
        DTypeToString(data.dtype), ShapeToString(data.shape, data.ndim));
  int64_t samples = data.shape[0] / rows;
  Check(data.shape[0] % rows == 0 && samples >= batch.min && samples <= batch.max, what, ": dimension 0 is ",
        data.shape[0], ", which is not ", dim, " with ", batch.name, " from ", batch.min, " to ", batch.max);
  return samples;
}

void GraphExecutor::SetShapes(int64_t samples, const std::vector<int64_t>& dims) {
  if (samples == samples_ && dims == dim_values_) return;
  // Every shape first (an extent that does not fit its storage is an error before any change).
  std::vector<std::pair<uint32_t, std::vector<int64_t>>> shapes;
  for (uint32_t e = 0; e < graph_.num_entries(); ++e) {
    bool batched = Batched(e);
    bool with_dims = graph_.has_dims() && !graph_.entry_extents[e].empty();
    if (!batched && !with_dims) continue;
    std::vector<int64_t> shape = largest_shapes_[e];
    try {
      if (with_dims) shape = EvaluateShape(graph_.entry_extents[e], dims);
      if (batched && !with_dims) shape[0] /= graph_.batch.max;
      if (batched) shape[0] *= samples;
      DLTensor t = EntryTensor(e, nullptr);
      t.shape = shape.data();
      Check(DataBytes(t) <= storage_bytes_[graph_.storage_ids[e]], "its shape ", ShapeToString(shape),
            " needs more memory than its storage holds");
    } catch (const Error& error) {
      Fail("graph JSON: entry ", e, ": ", error.what());
    }
    shapes.emplace_back(e, std::move(shape));
  }
  for (auto& [e, shape] : shapes) {
    if (Batched(e)) sample_rows_[e] = shape[0] / samples;
    std::copy(shape.begin(), shape.end(), graph_.shapes[e].begin());  // the operators' DLTensors point here
  }
  for (Step& step : steps_) {
    if (step.kind != Step::Kind::kCall) continue;
    for (size_t d = 0; d < dims.size(); ++d) step.values[step.tensors.size() + d].v_int64 = dims[d];
  }
  samples_ = samples;
  dim_values_ = dims;
}

std::vector<int64_t> GraphExecutor::InputDims() const {
  std::vector<int64_t> dims = dim_values_;
  std::vector<int> decided_by(dims.size(), -1);
  for (int i = 0; i < NumInputs(); ++i) {
    if (is_param_[i] || front_param_[InputEntry(i)] || input_dims_[i].empty()) continue;
    for (size_t d = 0; d < dims.size(); ++d) {
      int64_t value = input_dims_[i][d];
      if (value < 0) continue;
      if (decided_by[d] >= 0) {
        Check(value == dims[d], "run: input '", InputName(decided_by[d]), "' gives ", graph_.dims[d].name, " = ",
              dims[d], " and input '", InputName(i), "' ", value, "; set every input for the same dimensions");
      }
      dims[d] = value;
      decided_by[d] = i;
    }
  }
  return dims;
}

std::vector<int64_t> GraphExecutor::DimsIn(uint32_t entry, const DLTensor& data, const std::string& what,
                                           int64_t* samples, const std::vector<int64_t>* given) const {
  const std::vector<DimPolynomial>& extents = graph_.entry_extents[entry];
  bool batched = Batched(entry);
  std::string expected = TypeWithDims(entry);
  Check(data.dtype == graph_.dtypes[entry] && data.ndim == static_cast<int>(extents.size()), what, ": expected ",
        expected, ", got ", DTypeToString(data.dtype), ShapeToString(data.shape, data.ndim));
  std::vector<int64_t> dims(graph_.dims.size(), -1);
  for (int axis = 0; axis < data.ndim; ++axis) {
    int d = extents[axis].SingleDim();
    if (d < 0 || (batched && axis == 0)) continue;
    const ShapeDim& dim = graph_.dims[d];
    int64_t value = data.shape[axis];
    Check(dim.Allows(value), what, ": dimension ", axis, " is ", value, ", but ", dim.RangeText(), " (expected ",
          expected, ")");
    Check(dims[d] < 0 || dims[d] == value, what, ": dimensions ", axis, " and an earlier one give ", dim.name,
          " two values (", dims[d], " and ", value, ")");
    dims[d] = value;
  }
  // An extent of dimensions this data does not give: at those the inputs set (as the next run
  // takes them), checked again at run.
  std::vector<int64_t> at = dim_values_;
  try {
    at = InputDims();
  } catch (const Error&) {  // inputs that disagree: the run says so
  }
  for (size_t d = 0; d < dims.size(); ++d) {
    if (given != nullptr && d < given->size() && (*given)[d] >= 0) at[d] = (*given)[d];
    if (dims[d] >= 0) at[d] = dims[d];
  }
  std::vector<int64_t> shape = EvaluateShape(extents, at);
  if (batched) {
    Check(samples != nullptr && extents[0].IsConstant() && shape[0] > 0, "graph JSON: entry ", entry,
          " holds the batch along an axis whose extent depends on a shape dimension");
    int64_t rows = shape[0];
    *samples = data.shape[0] / rows;
    const BatchDim& batch = graph_.batch;
    Check(data.shape[0] % rows == 0 && *samples >= batch.min && *samples <= batch.max, what, ": dimension 0 is ",
          data.shape[0], ", which is not ", BatchDimOf(entry), " with ", batch.name, " from ", batch.min, " to ",
          batch.max, " (expected ", expected, ")");
    shape[0] = data.shape[0];
  }
  Check(std::equal(shape.begin(), shape.end(), data.shape), what, ": expected ", expected, " (at these dimensions ",
        ShapeToString(shape), "), got ", ShapeToString(data.shape, data.ndim));
  return dims;
}

std::vector<std::string> GraphExecutor::AxisDims(uint32_t entry) const {
  if (!graph_.has_dims() || graph_.entry_extents[entry].empty()) return {};
  std::vector<std::string> names, axes;
  for (const ShapeDim& dim : graph_.dims) names.push_back(dim.name);
  bool batched = Batched(entry);
  for (size_t axis = 0; axis < graph_.entry_extents[entry].size(); ++axis) {
    const DimPolynomial& extent = graph_.entry_extents[entry][axis];
    axes.push_back(extent.IsConstant() || (batched && axis == 0) ? "" : extent.ToText(names));
  }
  return axes;
}

std::string GraphExecutor::TypeWithDims(uint32_t entry) const {
  std::vector<std::string> axes = AxisDims(entry);
  std::string batch = BatchDimOf(entry);
  const std::vector<int64_t>& shape = largest_shapes_[entry];
  std::string text = DTypeToString(graph_.dtypes[entry]) + "[";
  for (size_t axis = 0; axis < shape.size(); ++axis) {
    std::string extent = axis == 0 && !batch.empty()            ? batch
                         : axis < axes.size() && !axes[axis].empty() ? axes[axis]
                                                                      : std::to_string(shape[axis]);
    text += (axis == 0 ? "" : ", ") + extent;
  }
  return text + "]";
}

int64_t GraphExecutor::InputSamples() const {
  int64_t samples = 0;
  int first = -1;
  for (int i = 0; i < NumInputs(); ++i) {
    if (is_param_[i] || input_samples_[i] == 0) continue;  // not batched, or never set (zeros at any batch)
    int64_t n = input_samples_[i];
    if (first >= 0) {
      Check(n == samples, "run: input '", InputName(first), "' holds ", samples, " samples of batch dimension ",
            graph_.batch.name, " and input '", InputName(i), "' ", n, "; set every batched input to the same number");
    }
    samples = n;
    if (first < 0) first = i;
  }
  return first < 0 ? samples_ : samples;
}

std::vector<int64_t> GraphExecutor::InputShapeDims(int index, const std::vector<int64_t>& shape, DLDataType dtype,
                                                   const std::vector<int64_t>* given) const {
  uint32_t e = InputEntry(index);
  if (!graph_.has_dims() || graph_.entry_extents[e].empty() || is_param_[index] || front_param_[e]) return {};
  DLTensor view{};
  view.dtype = dtype;
  view.ndim = static_cast<int32_t>(shape.size());
  view.shape = const_cast<int64_t*>(shape.data());
  int64_t samples = 0;
  return DimsIn(e, view, StrCat("input '", InputName(index), "'"), Batched(e) ? &samples : nullptr, given);
}

void GraphExecutor::SetInput(int index, const DLTensor& data) {
  uint32_t e = InputEntry(index);
  std::string what = StrCat("set_input '", InputName(index), "'");
  // A parameter is set whole, at its largest shape, whatever the dimensions.
  bool param = is_param_[index] || entry_linked_[e] || front_param_[e];
  if (graph_.has_dims() && !graph_.entry_extents[e].empty() && !param) {
    bool batched = Batched(e);
    int64_t samples = 0;
    std::vector<int64_t> dims = DimsIn(e, data, what, batched ? &samples : nullptr);
    Check(data.device.device_type == kDLCPU, what, ": the data is not in CPU memory");
    Check(IsCompact(data), what, ": the data is not compact (row-major without gaps)");
    Check(DataBytes(data) <= entries_[e].NumBytes(), what, ": the data needs more memory than the input holds");
    if (entry_data_[e] != entries_[e].data()) Bind(e, entries_[e].data());
    std::memcpy(entries_[e].data(), static_cast<const char*>(data.data) + data.byte_offset, DataBytes(data));
    input_dims_[index] = dims;  // the operators see them at the next run
    input_bound_shapes_[index].clear();
    if (batched) input_samples_[index] = samples;
    return;
  }
  if (Batched(e)) {
    int64_t samples = SamplesIn(e, data, what);
    Check(data.device.device_type == kDLCPU, what, ": the data is not in CPU memory");
    Check(IsCompact(data), what, ": the data is not compact (row-major without gaps)");
    if (entry_data_[e] != entries_[e].data()) Bind(e, entries_[e].data());
    std::memcpy(entries_[e].data(), static_cast<const char*>(data.data) + data.byte_offset, DataBytes(data));
    input_samples_[index] = samples;  // the operators see it at the next run
    return;
  }
  CheckSameType(*entries_[e].get(), data, what);
  Check(data.device.device_type == kDLCPU, what,
        ": the data is not in CPU memory");
  Check(IsCompact(data), what, ": the data is not compact (row-major without gaps)");
  if (entry_linked_[e]) {
    // The library's pages are shared by every executor and process: the input gets memory of its own.
    NDArray own = NDArray::Empty({static_cast<int64_t>(DataBytes(*entries_[e].get()))}, kBytes);
    for (uint32_t member : alias_members_[alias_root_[e]]) {
      entries_[member] = own.CreateView(largest_shapes_[member], graph_.dtypes[member]);
      entry_linked_[member] = entry_shared_[member] = false;
    }
    uint32_t sid = graph_.storage_ids[e];
    storage_[sid] = own;
    storage_linked_[sid] = false;
  }
  if (entry_data_[e] != entries_[e].data()) Bind(e, entries_[e].data());
  entries_[e].CopyFrom(data);
}

void GraphExecutor::SetInputZeroCopy(int index, const DLTensor& data) {
  uint32_t e = InputEntry(index);
  std::string what = StrCat("set_input_zero_copy '", InputName(index), "'");
  int64_t samples = CheckZeroCopyBuffer(e, data, what);
  Bind(e, static_cast<char*>(data.data) + data.byte_offset);
  if (samples != 0) input_samples_[index] = samples;  // the operators see it at the next run
  if (graph_.has_dims() && !graph_.entry_extents[e].empty() && !front_param_[e]) {
    input_dims_[index] = DimsIn(e, data, what, &samples);
    input_bound_shapes_[index].assign(data.shape, data.shape + data.ndim);
  }
}

void GraphExecutor::SetOutputZeroCopy(int index, const DLTensor& data) {
  uint32_t e = OutputEntry(index);
  std::string what = StrCat("set_output_zero_copy ", index);
  Check(TrimOf(index) == nullptr, what, ": the output's shape is decided as the graph runs, so no buffer fits it ",
        "beforehand; use get_output");
  for (uint32_t arg : graph_.arg_nodes) {
    Check(alias_root_[graph_.EntryId(arg, 0)] != alias_root_[e], what, ": the output is the graph input '",
          graph_.nodes[arg].name, "' itself (or a reshape of it); bind the input instead");
  }
  int64_t samples = CheckZeroCopyBuffer(e, data, what);
  Bind(e, static_cast<char*>(data.data) + data.byte_offset);
  if (samples != 0) output_samples_[index] = samples;
  if (graph_.has_dims() && !graph_.entry_extents[e].empty()) {
    output_dims_[index] = DimsIn(e, data, what, &samples);
    output_bound_shapes_[index].assign(data.shape, data.shape + data.ndim);
  }
}

NDArray GraphExecutor::GetInput(int index) const {
  uint32_t e = InputEntry(index);
  std::vector<int64_t> shape = graph_.shapes[e];
  if (graph_.has_dims() && !input_dims_[index].empty()) {  // as set, though no run has seen it yet
    std::vector<int64_t> at = dim_values_;
    for (size_t d = 0; d < at.size(); ++d) at[d] = input_dims_[index][d] >= 0 ? input_dims_[index][d] : at[d];
    shape = EvaluateShape(graph_.entry_extents[e], at);
    if (Batched(e)) shape[0] *= input_samples_[index];
  } else if (Batched(e) && input_samples_[index] != 0) {
    shape[0] = sample_rows_[e] * input_samples_[index];  // as set, though no run has seen it yet
  }
  DLTensor view = EntryTensor(e, entry_data_[e]);
  view.shape = shape.data();
  if (entry_data_[e] != entries_[e].data()) return NDArray::WrapExternal(view);
  return entries_[e].CreateView(shape, graph_.dtypes[e]);
}

std::vector<int64_t> GraphExecutor::LargestShape(uint32_t entry) const { return largest_shapes_[entry]; }

std::string GraphExecutor::BatchDimOf(uint32_t entry) const {
  if (!Batched(entry)) return "";
  int64_t rows = largest_shapes_[entry][0] / graph_.batch.max;
  return rows == 1 ? graph_.batch.name : StrCat(rows, "*", graph_.batch.name);
}

const OutputTrim* GraphExecutor::TrimOf(int index) const {
  for (const OutputTrim& trim : graph_.output_trims) {
    if (trim.output == static_cast<uint32_t>(index)) return &trim;
  }
  return nullptr;
}

NDArray GraphExecutor::GetOutput(int index) const {
  uint32_t e = OutputEntry(index);
  NDArray full = entry_data_[e] == entries_[e].data() ? entries_[e] : NDArray::WrapExternal(EntryTensor(e, entry_data_[e]));
  const OutputTrim* trim = TrimOf(index);
  bool fixed = BatchDimOf(e).empty() && AxisDims(e).empty();
  if (trim == nullptr) return fixed ? full : full.CreateView(graph_.shapes[e], graph_.dtypes[e]);
  uint32_t count_entry = graph_.EntryId(graph_.heads[trim->count_output]);
  if (trim->whole_shape) {  // the library's shapes are not trusted: each checked against the storage
    const auto* extents = static_cast<const int64_t*>(entry_data_[count_entry]);
    std::vector<int64_t> shape(extents, extents + graph_.shapes[count_entry][0]);
    int64_t elements = 1;
    for (int64_t extent : shape) {
      Check(extent >= 0 && !__builtin_mul_overflow(elements, extent, &elements), "output ", index,
            ": its operator gave it the shape ", ShapeToString(shape), ", which is not a shape");
    }
    int64_t storage = NumElements(*full.get());
    Check(elements <= storage, "output ", index, ": its operator gave it the shape ", ShapeToString(shape),
          ", larger than its storage of ", storage, " elements");
    return full.CreateView(shape, graph_.dtypes[e]);
  }
  int64_t count = *static_cast<const int64_t*>(entry_data_[count_entry]);
  std::vector<int64_t> shape = graph_.shapes[e];
  Check(count >= 0 && count <= shape[trim->axis], "output ", index, ": its operator counted ", count,
        " elements along axis ", trim->axis, ", outside [0, ", shape[trim->axis], "]");
  shape[trim->axis] = count;
  return full.CreateView(shape, graph_.dtypes[e]);
}

void GraphExecutor::CopyOutputTo(int index, DLTensor& target) const {
  GetOutput(index).CopyTo(target);
}

void GraphExecutor::LoadParams(const NamedArrays& params) {
  std::vector<std::pair<int, const NDArray*>> targets;
  for (const auto& [name, array] : params) {
    int index = GetInputIndex(name);
    if (index < 0) continue;
    CheckSameType(*entries_[InputEntry(index)].get(), *array.get(), StrCat("parameter '", name, "'"));
    targets.emplace_back(index, &array);
  }
  for (const auto& [index, array] : targets) {
    is_param_[index] = true;  // set whole (SetInput), the type checked above
    SetInput(index, *array->get());
  }
}

void GraphExecutor::LoadParams(std::string_view params_bytes) {
  LoadParams(::kiln::runtime::LoadParams(params_bytes));
}

void GraphExecutor::ShareParams(const GraphExecutor& other, std::string_view params_bytes) {
  std::vector<std::pair<int, int>> pairs;  // (this input, other's input)
  for (const ParamInfo& info : LoadParamInfos(params_bytes)) {
    int index = InputIndex(info.name);
    int other_index = other.InputIndex(info.name);
    std::string what = StrCat("share_params '", info.name, "'");
    CheckSameType(*entries_[InputEntry(index)].get(), *other.entries_[other.InputEntry(other_index)].get(), what);
    pairs.emplace_back(index, other_index);
  }
  for (const auto& [index, other_index] : pairs) {
    uint32_t e = InputEntry(index);
    NDArray shared = other.entries_[other.InputEntry(other_index)];
    for (uint32_t member : alias_members_[alias_root_[e]]) {
      entries_[member] = shared.CreateView(largest_shapes_[member], graph_.dtypes[member]);
      entry_shared_[member] = true;
      entry_linked_[member] = other.entry_linked_[other.InputEntry(other_index)];
    }
    Bind(e, shared.data());
    is_param_[index] = true;
  }
  ReleaseUnusedStorage();
}

void GraphExecutor::ReleaseUnusedStorage() {
  std::vector<bool> used(storage_.size(), false);
  for (size_t e = 0; e < entries_.size(); ++e) {
    if (!entry_shared_[e]) used[graph_.storage_ids[e]] = true;
  }
  for (size_t sid = 0; sid < storage_.size(); ++sid) {
    if (!used[sid]) {
      storage_[sid] = NDArray();
      storage_linked_[sid] = false;
    }
  }
}

size_t GraphExecutor::OwnedStorageBytes() const {
  size_t total = 0;
  for (size_t sid = 0; sid < storage_.size(); ++sid) {
    if (storage_[sid].defined() && !storage_linked_[sid]) total += storage_[sid].NumBytes();
  }
  return total;
}

}  // namespace kiln::runtime
