// The graph executor: runs a graph JSON over the operators of a library.
//
// Construction does all the work: one buffer per storage id (64-byte aligned; a parameter linked
// into the library is used where it lies, never written), one view per entry, and for every
// operator node a prepared call (function, DLTensor arguments, type codes).
// Run() only walks the prepared calls: no allocation, lookup or lock.
//
// Thread safety: one executor is used by one thread at a time. Any number of executors, including
// ones sharing parameters through ShareParams, may run concurrently in different threads.
// Failure: every method throws Error naming what is wrong; a method that throws leaves the
// executor as it was (checks come before changes).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/graph_json.h"
#include "runtime/packed_func.h"
#include "runtime/params.h"

namespace kiln::runtime {

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;  // the largest, when axis 0 holds the batch
  DLDataType dtype{};
  std::string batch_dim;       // when axis 0 holds the batch's samples: "N", or "16*N" for 16 rows each; else empty
  // With shape dimensions: per axis, what decides its extent ("S", "12*S", "H*W/64"); empty for a
  // fixed extent and for the batch's axis. Empty when no axis has one.
  std::vector<std::string> axis_dims;
};

class GraphExecutor {
 public:
  // `lib` supplies the operators (looked up through its imports too). Throws Error when the
  // library lacks a function the graph calls, a device is not the CPU, or memory runs out.
  GraphExecutor(Graph graph, Module lib, const std::vector<DLDevice>& devices = {kCPU});
  GraphExecutor(const GraphExecutor&) = delete;
  GraphExecutor& operator=(const GraphExecutor&) = delete;

  // Inputs are all arg_nodes (parameters included), numbered in arg_nodes order.
  int NumInputs() const { return static_cast<int>(graph_.arg_nodes.size()); }
  // The model's outputs: the count outputs of graph.output_trims are not among them.
  int NumOutputs() const { return num_outputs_; }
  int GetInputIndex(const std::string& name) const;   // -1 when absent
  // Accepts "<node name>:<k>" and a bare node name (its output 0); -1 when absent.
  int GetOutputIndex(const std::string& name) const;
  // Like the two above but throw Error listing the valid names.
  int InputIndex(const std::string& name) const;
  int OutputIndex(const std::string& name) const;
  const std::string& InputName(int index) const;
  // Inputs that are not parameters (loaded or shared), and all outputs (an output whose extent
  // depends on the data with its largest shape).
  std::vector<TensorInfo> GetInputInfo() const;
  std::vector<TensorInfo> GetOutputInfo() const;

  // Copies `data` (compact, CPU, same shape and dtype) into the input; ends a zero-copy binding.
  // An input that holds the batch takes any number of samples in the batch dimension's range
  // along axis 0; every batched input of a run must hold the same number. An input with shape
  // dimensions takes any of their values in range, and every input of a run must agree on them.
  void SetInput(int index, const DLTensor& data);
  // The shape dimensions (graph().dims' order, -1 for those it does not decide) that input `index`
  // of `shape` and `dtype` would set, checked as SetInput checks them, without binding anything:
  // Error naming the input when the shape does not fit (a value out of range or off its step, a
  // fixed extent that differs). An extent of dimensions the shape does not give (2*S, S+1) is
  // checked at `given`'s values where set (>= 0; the other inputs' of a request), else at those
  // the inputs set. Empty for an input whose shape no dimension decides.
  std::vector<int64_t> InputShapeDims(int index, const std::vector<int64_t>& shape, DLDataType dtype,
                                      const std::vector<int64_t>* given = nullptr) const;
  // Makes the operators read the input from `data` itself (64-byte aligned, compact, same shape
  // and dtype); the caller keeps it alive and unchanged during Run().
  void SetInputZeroCopy(int index, const DLTensor& data);
  // Makes the operators write the output into `data` itself (same conditions).
  void SetOutputZeroCopy(int index, const DLTensor& data);
  NDArray GetInput(int index) const;
  // Whether the input is a parameter read where it lies in the library (until written).
  bool IsLinkedParam(int index) const { return entry_linked_[InputEntry(index)]; }
  // A view of the output's memory (the caller's buffer after SetOutputZeroCopy). An output whose
  // extent depends on the data has the shape the last run gave it (0 along its axis before any).
  NDArray GetOutput(int index) const;
  void CopyOutputTo(int index, DLTensor& target) const;

  // Copies the named arrays into the inputs of those names and marks them parameters. Names the
  // graph does not have are ignored (as in TVM); a shape or dtype mismatch is an Error, raised
  // before anything is copied.
  void LoadParams(const NamedArrays& params);
  void LoadParams(std::string_view params_bytes);
  // Makes the parameters named in `params_bytes` alias the arrays of `other` (no copy); memory
  // of this executor that is no longer used is freed. `other` may be destroyed afterwards.
  void ShareParams(const GraphExecutor& other, std::string_view params_bytes);

  void Run();
  // The batch dimension (graph().batch) and the samples of the last run or set_input: batched
  // entries, outputs included, have that many along axis 0.
  int64_t samples() const { return samples_; }
  // The shape dimensions' values (graph().dims) the last run or set_input gave.
  const std::vector<int64_t>& dim_values() const { return dim_values_; }
  // This executor's thread count for its operators' parallel loops (0: the process's, see
  // thread_pool.h). Executors of different counts may run at once in different threads.
  void SetNumThreads(int num_threads);
  int num_threads() const { return num_threads_; }

  // Step-wise access for the profiling executor: PrepareRun (what Run does before the steps: the
  // batch and shape dimensions the inputs give, checked, and every shape that follows), then the
  // steps.
  void PrepareRun();
  size_t NumSteps() const { return steps_.size(); }
  uint32_t StepNode(size_t step) const { return steps_[step].node; }
  // Runs the step's node, or nothing when one of its run conditions does not hold.
  void RunStep(size_t step);
  const Graph& graph() const { return graph_; }
  // Bytes of all storage this executor allocated itself (shared and linked parameters excluded).
  size_t OwnedStorageBytes() const;

 private:
  struct Step {
    enum class Kind { kCall, kCopy };
    Kind kind = Kind::kCall;
    uint32_t node = 0;
    PackedFunc function;
    std::vector<DLTensor> tensors;      // inputs, then outputs
    std::vector<int64_t> flat_shapes;   // 1-D shapes when the node has flatten_data
    std::vector<TVMValue> values;
    std::vector<int> codes;
    std::vector<std::pair<uint32_t, bool>> run_if;  // (condition entry, taken): runs when all hold
    std::vector<SizedEntry> sized;  // outputs given storage before the call (graph().sized_entries)
  };

  uint32_t InputEntry(int index) const;
  uint32_t OutputEntry(int index) const;
  void CheckInputIndex(int index) const;
  void CheckOutputIndex(int index) const;
  // Returns the samples a batched entry's buffer holds, 0 for other entries.
  int64_t CheckZeroCopyBuffer(uint32_t entry, const DLTensor& data, const std::string& what) const;
  std::vector<int64_t> LargestShape(uint32_t entry) const;
  std::string BatchDimOf(uint32_t entry) const;
  // Whether the entry holds the batch's samples along axis 0.
  bool Batched(uint32_t entry) const { return graph_.has_batch() && graph_.batched_entries[entry]; }
  // Points the entry (and the entries sharing its memory through __nop) at `data`.
  void Bind(uint32_t entry, void* data);
  DLTensor EntryTensor(uint32_t entry, void* data) const;
  void AllocateStorage();
  void BuildSteps();
  void ReleaseUnusedStorage();
  // Gives `sized.entry` storage for as many elements as its shape entry says (grown, never
  // shrunk), and that flat extent; Error naming the node when the shape is not one.
  void SizeEntry(const SizedEntry& sized, uint32_t node);
  // Storage for at least `elements` of the sized entry (grown, never shrunk) and that flat extent.
  void GrowSizedEntry(uint32_t entry, int64_t elements);
  // The samples `data` holds for batched entry `entry` (same dtype, rank and trailing dimensions;
  // axis 0 whole samples, as many as the batch dimension allows); Error naming `what` otherwise.
  int64_t SamplesIn(uint32_t entry, const DLTensor& data, const std::string& what) const;
  // Gives every batched entry `samples` samples along axis 0 and every entry with extents their
  // values at `dims` (the shapes the operators see, and the dimension arguments they get).
  void SetShapes(int64_t samples, const std::vector<int64_t>& dims);
  // The samples every batched input holds; Error when two disagree.
  int64_t InputSamples() const;
  // The shape dimensions the inputs set (the current value for one no input decides); Error
  // when two inputs disagree.
  std::vector<int64_t> InputDims() const;
  // The dimensions `data` gives entry `entry` (-1 for those it does not decide), checked against
  // its extents, dtype and rank; Error naming `what` otherwise. Extents of dimensions `data` does
  // not give are evaluated at `given`'s values where set (>= 0), else at those the inputs set.
  // A batched entry's samples go to `samples`.
  std::vector<int64_t> DimsIn(uint32_t entry, const DLTensor& data, const std::string& what,
                              int64_t* samples = nullptr, const std::vector<int64_t>* given = nullptr) const;
  // "float32[N, S, 768]": the entry's type with its dimensions named.
  std::string TypeWithDims(uint32_t entry) const;
  std::vector<std::string> AxisDims(uint32_t entry) const;
  // The trim of output `index`, or null when its shape is static.
  const OutputTrim* TrimOf(int index) const;

  Graph graph_;
  Module lib_;
  std::vector<NDArray> storage_;                     // per storage id
  std::vector<NDArray> entries_;                     // per entry: its memory when not rebound
  std::vector<void*> entry_data_;                    // per entry: where operators access it
  std::vector<std::vector<DLTensor*>> entry_args_;   // per entry: operator arguments naming it
  // Entries joined by a __nop share memory and are bound together: per entry the group's root,
  // per root the group's members.
  std::vector<uint32_t> alias_root_;
  std::vector<std::vector<uint32_t>> alias_members_;
  std::vector<bool> entry_shared_;                   // per entry: memory from another executor
  // Per storage id / entry: the library's data (a linked parameter, the entry's perhaps
  // shared from another executor). Writing such an entry gives it memory of its own first.
  std::vector<bool> storage_linked_;
  std::vector<bool> entry_linked_;
  std::vector<bool> is_param_;                       // per input index
  std::unordered_map<std::string, int> input_index_;
  std::vector<Step> steps_;
  int num_outputs_ = 0;
  int num_threads_ = 0;
  // With a batch dimension: per entry the rows of one sample along axis 0 (0: not batched), per
  // input and output index the samples its data holds (0: none set or bound), the current samples.
  std::vector<int64_t> sample_rows_;
  std::vector<int64_t> input_samples_, output_samples_;
  int64_t samples_ = 0;
  // With shape dimensions: their current values; per input and output index the dimensions its
  // set or bound data gives (empty: none); per entry its written (largest) shape; per storage id
  // its bytes.
  std::vector<int64_t> dim_values_;
  std::vector<std::vector<int64_t>> input_dims_, output_dims_;
  // Per input and output index: the shape of the buffer bound with zero copy (empty: none), which
  // every run's shapes must equal.
  std::vector<std::vector<int64_t>> input_bound_shapes_, output_bound_shapes_;
  std::vector<std::vector<int64_t>> largest_shapes_;
  std::vector<size_t> storage_bytes_;
  std::vector<bool> front_param_;  // per entry: graph().front_params
  RetValue result_;
};

}  // namespace kiln::runtime
