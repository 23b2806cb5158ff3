// The graph executor's graph JSON (tvm-formats.md A.1): parsed into a Graph and validated as a
// whole (types of all fields, node and entry ids in range, inputs only from earlier nodes, so no
// cycles, per-entry attributes of the right length), and written back in TVM's layout.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/shape_dims.h"

namespace kiln::runtime {

struct GraphEntryRef {
  uint32_t node_id = 0;
  uint32_t index = 0;
  uint32_t version = 0;
};

// A condition a node runs under: entry `condition`, a bool scalar an earlier node computes, is
// true (taken) or false (not taken). Graph codegen gives them to the nodes that only one side of
// an if_then_else needs (ONNX If with a condition known at run time). Written as kiln's node
// attribute kRunIfAttr, a string holding a JSON list of [node_id, index, taken] triples, which
// TVM's graph executor ignores: it runs every node, and the outputs are the same.
struct RunCondition {
  GraphEntryRef condition;
  bool taken = true;
};
// A node attribute naming what computes the node's function (kernel implementations, loops), as
// the compiler chose: kiln inspect and the profiler show it; TVM's runtime keeps it unread.
inline constexpr char kImplementationAttr[] = "kiln_implementation";
inline constexpr char kRunIfAttr[] = "kiln_run_if";

struct GraphNode {
  std::string op;  // "null" (an input or parameter) or "tvm_op"
  std::string name;
  std::vector<GraphEntryRef> inputs;
  // From attrs, for "tvm_op" nodes:
  std::string func_name;  // a library symbol, or "__nop" / "__copy"
  uint32_t num_outputs = 1;
  bool flatten_data = false;
  // Runs only when every condition holds, checked in order (a condition's entry holds a value
  // whenever the ones before it hold).
  std::vector<RunCondition> run_if;
  std::map<std::string, std::string> attrs;  // every attribute as written (all strings)

  bool is_input() const { return op == "null"; }
};

// An output whose extent along `axis` depends on the data (NonZero, Unique, NonMaxSuppression...):
// its entry holds the data compactly, as a tensor with `count` elements along the axis, and zeros
// after it; output `count_output`, an int64 scalar, holds the count. Written as kiln's graph
// attribute kOutputTrimAttr, a list_int of (output, count_output, axis) triples.
// With `whole_shape`, an output whose every extent is decided at run time (an op whose
// shape-deciding input, a reshape's shape or a reduction's axes, is given at run time): its entry,
// of the largest size, holds the data compactly at that shape, and output `count_output`, an int64
// [rank] tensor, holds the shape. Written as the graph attribute kOutputShapesAttr, a list_int of
// (output, shape output) pairs. The count and shape outputs come after all others. TVM's graph
// executor skips both attributes: there the padded outputs, the counts and the shapes are all
// outputs.
struct OutputTrim {
  uint32_t output = 0;
  uint32_t count_output = 0;
  uint32_t axis = 0;
  bool whole_shape = false;
};
inline constexpr char kOutputTrimAttr[] = "kiln_output_trim";
inline constexpr char kOutputShapesAttr[] = "kiln_output_shapes";

// A batch dimension decided at run time (kiln's extension; docs/architecture.md, "Batch
// dimensions"): the library runs any number of samples from `min` to `max`. A batched entry holds
// the samples one after another along its axis 0, `rows` rows each (the entry's written shape,
// axis 0 = rows * max, is its largest); every other entry's shape is fixed. Written as the graph
// attributes kBatchDimAttr, a list_str [name, min, max], which TVM's graph executor refuses
// ("cannot skip graph attr kiln_batch_dim") instead of misreading the library, and
// kBatchEntriesAttr, a list_int of 0 / 1 per entry.
struct BatchDim {
  std::string name;
  int64_t min = 0, max = 0;
};
inline constexpr int64_t kMaxBatch = int64_t{1} << 20;  // the largest value a batch dimension may take
inline constexpr char kBatchDimAttr[] = "kiln_batch_dim";
inline constexpr char kBatchEntriesAttr[] = "kiln_batch_entries";

// Shape dimensions decided at run time (kiln's extension; shape_dims.h): an entry's extents are
// polynomials in them, its written shape their value at every dimension's max (times the batch's
// max along axis 0 of a batched entry, whose extents are one sample's). Written as the graph
// attributes kDimsAttr, a list_str [name, min, max, step, name, ...], which TVM's graph executor
// refuses like kBatchDimAttr, and kEntryExtentsAttr, a list_str per entry: "" for a fixed shape,
// else its extents joined by ",".
inline constexpr char kDimsAttr[] = "kiln_dims";
inline constexpr char kEntryExtentsAttr[] = "kiln_entry_extents";
// The inputs that are constants whose extents vary (a position table's first S rows): the
// operators read their front, and they are set whole, at their largest shape. A list_int of
// entry ids (TVM skips it, and refuses kDimsAttr before).
inline constexpr char kFrontParamsAttr[] = "kiln_front_params";

// An entry whose size no input bounds (an op whose shape-deciding input is given at run time:
// Expand's shape, Pad's pads...): the graph gives it no elements, and the executor, before running
// the node that computes it, gives it storage for as many elements as entry `shape_entry`, an int64
// [rank] input of that node, says (grown on demand, never shrunk). Written as the graph attribute
// kSizedEntriesAttr, a list_str of "entry,shape_entry" pairs: TVM's graph executor, which cannot
// size them, aborts on it ("cannot skip graph attr").
struct SizedEntry {
  uint32_t entry = 0;
  uint32_t shape_entry = 0;
};
inline constexpr char kSizedEntriesAttr[] = "kiln_sized_entries";

struct Graph {
  std::vector<GraphNode> nodes;
  std::vector<uint32_t> arg_nodes;  // the "null" nodes, in input-index order
  std::vector<GraphEntryRef> heads;  // the outputs
  std::vector<uint32_t> node_row_ptr;
  // Per entry (output k of node n is entry node_row_ptr[n] + k):
  std::vector<std::vector<int64_t>> shapes;
  std::vector<DLDataType> dtypes;
  std::vector<uint32_t> storage_ids;
  std::vector<int32_t> device_types;  // empty when the JSON has no device_index
  std::vector<OutputTrim> output_trims;
  BatchDim batch;                     // max == 0: every shape is fixed
  std::vector<bool> batched_entries;  // per entry when batch.max > 0, else empty
  std::vector<ShapeDim> dims;
  // Per entry when there are dims, else empty: the extents, or none for a fixed shape.
  std::vector<std::vector<DimPolynomial>> entry_extents;
  std::vector<uint32_t> front_params;  // entries (kFrontParamsAttr)
  std::vector<SizedEntry> sized_entries;

  bool has_batch() const { return batch.max > 0; }
  bool has_dims() const { return !dims.empty(); }

  // The outputs before the count and shape outputs of output_trims (all outputs when there are none).
  size_t num_model_outputs() const;

  size_t num_entries() const { return shapes.size(); }
  uint32_t EntryId(uint32_t node_id, uint32_t index) const { return node_row_ptr[node_id] + index; }
  uint32_t EntryId(const GraphEntryRef& e) const { return EntryId(e.node_id, e.index); }
};

// Throws Error "graph JSON: <what is wrong and where>" for anything malformed.
Graph ParseGraphJson(std::string_view text);
std::string WriteGraphJson(const Graph& graph);

}  // namespace kiln::runtime
