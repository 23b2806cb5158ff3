// The JSON subgraph format of TVM's JSON runtime (contrib/json/json_node.h): what an external
// codegen (dnnl, ...) writes for one external function and its runtime module reads. Nodes are
// `input` (a function parameter), `const` (a constant, named <symbol>_const_<i>) or `kernel` (an
// op, named as Relay names it: nn.conv2d, or a composite: dnnl.conv2d_bias_relu). Attributes are
// lists of strings, each wrapped in a one-element list ({"strides": [["1", "1"]]}); `shape` and
// `dtype` give each output's shape and dtype the same way ({"shape": [[[1, 8]]], "dtype":
// [["float32"]]}); kernel nodes carry `num_inputs` and `num_outputs` as plain strings.
// Top level: symbol, nodes, arg_nodes (the input and const nodes), heads (the outputs),
// node_row_ptr.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime {

struct JsonEntry {
  uint32_t node = 0;
  uint32_t index = 0;
};

struct JsonNode {
  std::string op;    // "input", "const" or "kernel"
  std::string name;  // an input's or constant's name; a kernel's op or composite
  std::vector<JsonEntry> inputs;
  std::vector<std::vector<int64_t>> shapes;  // per output
  std::vector<DLDataType> dtypes;            // per output
  std::map<std::string, std::vector<std::string>> attrs;  // the others

  size_t num_outputs() const { return shapes.size(); }
  // The attribute's values; throws Error naming the node when it is absent.
  const std::vector<std::string>& Attr(const std::string& key) const;
};

struct JsonGraph {
  std::string symbol;  // what the codegen named the graph (optional)
  std::vector<JsonNode> nodes;
  std::vector<uint32_t> arg_nodes;
  std::vector<JsonEntry> heads;
  std::vector<uint32_t> node_row_ptr;

  uint32_t EntryId(const JsonEntry& e) const { return node_row_ptr[e.node] + e.index; }
  size_t num_entries() const { return node_row_ptr.empty() ? 0 : node_row_ptr.back(); }
};

// Throws Error "external graph JSON: <what is wrong and where>" for anything malformed (a
// reference to a later node, a missing shape, counts that disagree, ...).
JsonGraph ParseJsonGraph(std::string_view text);
std::string WriteJsonGraph(const JsonGraph& graph);

}  // namespace kiln::runtime
