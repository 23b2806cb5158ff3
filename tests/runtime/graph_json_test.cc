// Graph JSON (tvm-formats.md A.1): ParseGraphJson reads TVM's layout (attrs as ["list_*", ...],
// optional device_index, __nop, flatten_data, multi-output nodes) and WriteGraphJson writes it
// back so that parsing again gives the same graph; every malformed graph is rejected with an
// Error naming the problem and never crashes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/graph_json.h"

namespace kiln::runtime {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

// A TVM-style graph: data, p0 -> add -> __nop reshape -> split (2 outputs, flatten_data).
json TvmGraph() {
  return json::parse(R"({
    "nodes": [
      {"op": "null", "name": "data", "inputs": []},
      {"op": "null", "name": "p0", "inputs": []},
      {"op": "tvm_op", "name": "tvmgen_default_fused_add", "inputs": [[0, 0, 0], [1, 0, 0]],
       "attrs": {"func_name": "tvmgen_default_fused_add", "num_inputs": "2", "num_outputs": "1",
                 "flatten_data": "0", "hash": "1b2c3d"}},
      {"op": "tvm_op", "name": "reshape_nop", "inputs": [[2, 0, 0]],
       "attrs": {"func_name": "__nop", "num_inputs": "1", "num_outputs": "1", "flatten_data": "0"}},
      {"op": "tvm_op", "name": "tvmgen_default_fused_split", "inputs": [[3, 0, 0]],
       "attrs": {"func_name": "tvmgen_default_fused_split", "num_inputs": "1", "num_outputs": "2",
                 "flatten_data": "1"}}
    ],
    "arg_nodes": [0, 1],
    "heads": [[4, 0, 0], [4, 1, 0]],
    "attrs": {
      "dltype": ["list_str", ["float32", "float32", "float32", "float32", "float16", "int8"]],
      "shape": ["list_shape", [[1, 4], [1, 4], [1, 4], [2, 2], [2], [2]]],
      "storage_id": ["list_int", [0, 1, 2, 2, 3, 4]]
    },
    "node_row_ptr": [0, 1, 2, 3, 4, 6]
  })");
}

// The message of the Error that parsing `text` (or TvmGraph() changed by `edit`) throws.
std::string ParseError(const std::string& text) {
  try {
    ParseGraphJson(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
std::string ParseError(const std::function<void(json&)>& edit) {
  json graph = TvmGraph();
  edit(graph);
  return ParseError(graph.dump());
}

bool SameEntry(const GraphEntryRef& a, const GraphEntryRef& b) {
  return a.node_id == b.node_id && a.index == b.index && a.version == b.version;
}

void ExpectSameGraph(const Graph& a, const Graph& b) {
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t n = 0; n < a.nodes.size(); ++n) {
    const GraphNode& x = a.nodes[n];
    const GraphNode& y = b.nodes[n];
    EXPECT_EQ(x.op, y.op) << n;
    EXPECT_EQ(x.name, y.name) << n;
    EXPECT_EQ(x.func_name, y.func_name) << n;
    EXPECT_EQ(x.num_outputs, y.num_outputs) << n;
    EXPECT_EQ(x.flatten_data, y.flatten_data) << n;
    EXPECT_EQ(x.attrs, y.attrs) << n;
    ASSERT_EQ(x.inputs.size(), y.inputs.size()) << n;
    for (size_t i = 0; i < x.inputs.size(); ++i) EXPECT_TRUE(SameEntry(x.inputs[i], y.inputs[i])) << n;
  }
  EXPECT_EQ(a.arg_nodes, b.arg_nodes);
  ASSERT_EQ(a.heads.size(), b.heads.size());
  for (size_t h = 0; h < a.heads.size(); ++h) EXPECT_TRUE(SameEntry(a.heads[h], b.heads[h])) << h;
  EXPECT_EQ(a.node_row_ptr, b.node_row_ptr);
  EXPECT_EQ(a.shapes, b.shapes);
  ASSERT_EQ(a.dtypes.size(), b.dtypes.size());
  for (size_t e = 0; e < a.dtypes.size(); ++e) EXPECT_EQ(a.dtypes[e], b.dtypes[e]) << e;
  EXPECT_EQ(a.storage_ids, b.storage_ids);
  EXPECT_EQ(a.device_types, b.device_types);
  for (size_t n = 0; n < a.nodes.size(); ++n) {
    ASSERT_EQ(a.nodes[n].run_if.size(), b.nodes[n].run_if.size()) << n;
    for (size_t i = 0; i < a.nodes[n].run_if.size(); ++i) {
      EXPECT_TRUE(SameEntry(a.nodes[n].run_if[i].condition, b.nodes[n].run_if[i].condition)) << n;
      EXPECT_EQ(a.nodes[n].run_if[i].taken, b.nodes[n].run_if[i].taken) << n;
    }
  }
  ASSERT_EQ(a.output_trims.size(), b.output_trims.size());
  for (size_t t = 0; t < a.output_trims.size(); ++t) {
    EXPECT_EQ(a.output_trims[t].output, b.output_trims[t].output) << t;
    EXPECT_EQ(a.output_trims[t].count_output, b.output_trims[t].count_output) << t;
    EXPECT_EQ(a.output_trims[t].axis, b.output_trims[t].axis) << t;
  }
}

TEST(GraphJson, ParsesTvmStyleGraph) {
  Graph g = ParseGraphJson(TvmGraph().dump());
  ASSERT_EQ(g.nodes.size(), 5u);
  EXPECT_TRUE(g.nodes[0].is_input());
  EXPECT_EQ(g.nodes[1].name, "p0");
  EXPECT_TRUE(g.nodes[1].inputs.empty());
  const GraphNode& add = g.nodes[2];
  EXPECT_EQ(add.op, "tvm_op");
  EXPECT_FALSE(add.is_input());
  EXPECT_EQ(add.func_name, "tvmgen_default_fused_add");
  ASSERT_EQ(add.inputs.size(), 2u);
  EXPECT_TRUE(SameEntry(add.inputs[1], GraphEntryRef{1, 0, 0}));
  EXPECT_EQ(add.attrs.at("hash"), "1b2c3d");  // extra attributes are kept
  EXPECT_EQ(add.attrs.at("num_inputs"), "2");
  EXPECT_EQ(g.nodes[3].func_name, "__nop");
  EXPECT_FALSE(g.nodes[3].flatten_data);
  EXPECT_EQ(g.nodes[4].num_outputs, 2u);
  EXPECT_TRUE(g.nodes[4].flatten_data);
  EXPECT_EQ(g.arg_nodes, (std::vector<uint32_t>{0, 1}));
  ASSERT_EQ(g.heads.size(), 2u);
  EXPECT_TRUE(SameEntry(g.heads[1], GraphEntryRef{4, 1, 0}));
  EXPECT_EQ(g.node_row_ptr, (std::vector<uint32_t>{0, 1, 2, 3, 4, 6}));
  EXPECT_EQ(g.num_entries(), 6u);
  EXPECT_EQ(g.EntryId(4, 1), 5u);
  EXPECT_EQ(g.EntryId(g.heads[0]), 4u);
  EXPECT_EQ(g.shapes[3], (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(g.dtypes[4], (DLDataType{kDLFloat, 16, 1}));
  EXPECT_EQ(g.dtypes[5], (DLDataType{kDLInt, 8, 1}));
  EXPECT_EQ(g.storage_ids, (std::vector<uint32_t>{0, 1, 2, 2, 3, 4}));
  EXPECT_TRUE(g.device_types.empty());  // no device_index: everything on the first device
}

TEST(GraphJson, AcceptsTheVariantsTvmWrites) {
  json graph = TvmGraph();
  graph["nodes"][2]["inputs"] = json::parse("[[0, 0], [1, 0, 7]]");  // version optional
  graph["nodes"][3]["attr"] = graph["nodes"][3]["attrs"];               // old key "attr"
  graph["nodes"][3].erase("attrs");
  graph["nodes"][4]["control_deps"] = json::array();                    // ignored
  graph["nodes"][0].erase("inputs");                                    // inputs optional
  graph["attrs"]["device_index"] = json::parse(R"(["list_int", [1, 1, 1, 1, 1, 1]])");
  graph["attrs"]["storage_scope"] = json::parse(R"(["list_str", ["global", "global", "", "global", "global", "global"]])");
  graph["attrs"]["op_pattern"] = json::parse(R"(["list_int", [0, 0, 0, 0, 0, 0]])");  // unknown ints skipped
  graph["attrs"]["other"] = json::parse(R"(["size_t", [1]])");
  graph["metadata"] = {{"anything", 1}};
  Graph g = ParseGraphJson(graph.dump());
  EXPECT_TRUE(SameEntry(g.nodes[2].inputs[0], GraphEntryRef{0, 0, 0}));
  EXPECT_TRUE(SameEntry(g.nodes[2].inputs[1], GraphEntryRef{1, 0, 7}));
  EXPECT_EQ(g.nodes[3].func_name, "__nop");
  EXPECT_EQ(g.device_types, (std::vector<int32_t>(6, kDLCPU)));
}

TEST(GraphJson, ParsesDtypesAndShapes) {
  json graph = TvmGraph();
  graph["attrs"]["dltype"][1] = {"bool", "uint1", "bfloat16", "float32x4", "int4", "uint8"};
  graph["attrs"]["shape"][1] = json::parse("[[], [0, 3], [1, 2, 3, 4, 5, 6], [7], [1], [2]]");
  Graph g = ParseGraphJson(graph.dump());
  EXPECT_EQ(g.dtypes[0], (DLDataType{kDLUInt, 1, 1}));
  EXPECT_EQ(g.dtypes[1], (DLDataType{kDLUInt, 1, 1}));
  EXPECT_EQ(g.dtypes[2], (DLDataType{kDLBfloat, 16, 1}));
  EXPECT_EQ(g.dtypes[3], (DLDataType{kDLFloat, 32, 4}));
  EXPECT_EQ(g.dtypes[4], (DLDataType{kDLInt, 4, 1}));
  EXPECT_EQ(g.dtypes[5], (DLDataType{kDLUInt, 8, 1}));
  EXPECT_TRUE(g.shapes[0].empty());  // a 0-d tensor
  EXPECT_EQ(g.shapes[1], (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(g.shapes[2].size(), 6u);
}

TEST(GraphJson, ParsesAnEmptyGraph) {
  Graph g = ParseGraphJson(R"({"nodes": [], "arg_nodes": [], "heads": [], "node_row_ptr": [0],
    "attrs": {"shape": ["list_shape", []], "dltype": ["list_str", []], "storage_id": ["list_int", []]}})");
  EXPECT_TRUE(g.nodes.empty());
  EXPECT_EQ(g.num_entries(), 0u);
}

TEST(GraphJson, WriteThenParseGivesTheSameGraph) {
  json graph = TvmGraph();
  graph["nodes"][2]["inputs"][1][2] = 3;  // a non-zero version survives
  graph["nodes"][0]["name"] = "in \"quoted\" \\ \n \xc3\xa9";  // escaped characters and UTF-8
  graph["attrs"]["dltype"][1][5] = "bool";
  graph["attrs"]["shape"][1][5] = json::array();
  Graph g = ParseGraphJson(graph.dump());
  std::string written = WriteGraphJson(g);
  Graph again = ParseGraphJson(written);
  ExpectSameGraph(g, again);
  EXPECT_EQ(again.nodes[0].name, "in \"quoted\" \\ \n \xc3\xa9");
  EXPECT_EQ(WriteGraphJson(again), written);  // writing is stable

  graph["attrs"]["device_index"] = json::parse(R"(["list_int", [1, 1, 1, 1, 1, 1]])");
  Graph with_devices = ParseGraphJson(graph.dump());
  ExpectSameGraph(with_devices, ParseGraphJson(WriteGraphJson(with_devices)));
}

TEST(GraphJson, WritesTvmLayout) {
  Graph g = ParseGraphJson(TvmGraph().dump());
  std::string text = WriteGraphJson(g);
  // dmlc's JSONWriter order of the top-level keys.
  size_t nodes = text.find("\"nodes\""), args = text.find("\"arg_nodes\""),
         heads = text.find("\"heads\""), attrs = text.find("\"attrs\": {\""),
         row_ptr = text.find("\"node_row_ptr\"");
  ASSERT_NE(row_ptr, std::string::npos);
  EXPECT_LT(nodes, args);
  EXPECT_LT(args, heads);
  EXPECT_LT(heads, attrs);
  EXPECT_LT(attrs, row_ptr);

  // TvmGraph() is written in TVM's own layout (tvm-formats.md A.1: every entry as
  // [node_id, index, version], all node attributes as strings, per-entry vectors tagged), so
  // writing the parsed graph gives that document back.
  json expected = TvmGraph();
  EXPECT_EQ(json::parse(text), expected);

  g.device_types = {1, 1, 1, 1, 1, 1};
  EXPECT_EQ(json::parse(WriteGraphJson(g))["attrs"]["device_index"],
            json::parse(R"(["list_int", [1, 1, 1, 1, 1, 1]])"));
}

TEST(GraphJson, RejectsWhatIsNotAGraphObject) {
  EXPECT_THAT(ParseError(""), HasSubstr("graph JSON: not valid JSON"));
  EXPECT_THAT(ParseError("{\"nodes\": [}"), HasSubstr("not valid JSON"));
  EXPECT_THAT(ParseError("[1, 2]"), HasSubstr("top level: expected an object, got array"));
  EXPECT_THAT(ParseError("null"), HasSubstr("expected an object, got null"));
  EXPECT_THAT(ParseError([](json& g) { g["symbol"] = "x"; }), HasSubstr("unknown field 'symbol'"));
}

TEST(GraphJson, RejectsMissingOrWrongTypedTopLevelFields) {
  for (const char* key : {"nodes", "arg_nodes", "heads", "attrs", "node_row_ptr"}) {
    EXPECT_THAT(ParseError([&](json& g) { g.erase(key); }), HasSubstr(std::string("missing field '") + key + "'"));
  }
  EXPECT_THAT(ParseError([](json& g) { g["nodes"] = json::object(); }), HasSubstr("nodes: expected an array, got object"));
  EXPECT_THAT(ParseError([](json& g) { g["arg_nodes"] = "0"; }), HasSubstr("arg_nodes: expected an array, got string"));
  EXPECT_THAT(ParseError([](json& g) { g["heads"] = 4; }), HasSubstr("heads: expected an array, got number"));
  EXPECT_THAT(ParseError([](json& g) { g["node_row_ptr"] = nullptr; }), HasSubstr("node_row_ptr: expected an array, got null"));
  EXPECT_THAT(ParseError([](json& g) { g["attrs"] = json::array(); }), HasSubstr("attrs: expected an object, got array"));
  EXPECT_THAT(ParseError([](json& g) { g["arg_nodes"][1] = "1"; }), HasSubstr("arg_nodes[1]: expected a non-negative integer, got \"1\""));
}

TEST(GraphJson, RejectsMalformedNodes) {
  struct Case { std::function<void(json&)> edit; const char* message; };
  const Case cases[] = {
      {[](json& g) { g["nodes"][1] = "p0"; }, "node 1: expected an object, got string"},
      {[](json& g) { g["nodes"][1].erase("op"); }, "node 1: missing field 'op'"},
      {[](json& g) { g["nodes"][1].erase("name"); }, "node 1: missing field 'name'"},
      {[](json& g) { g["nodes"][1]["op"] = 0; }, "node 1 op: expected a string, got number"},
      {[](json& g) { g["nodes"][1]["name"] = json::array(); }, "node 1 name: expected a string, got array"},
      {[](json& g) { g["nodes"][2]["op"] = "nn.conv2d"; }, "op is 'nn.conv2d', expected 'null' or 'tvm_op'"},
      {[](json& g) { g["nodes"][2]["inputs"] = json::object(); }, "'tvmgen_default_fused_add' inputs: expected an array"},
      {[](json& g) { g["nodes"][2]["inputs"][0] = json::parse("[0]"); }, "input 0: expected [node_id, index] or [node_id, index, version], got [0]"},
      {[](json& g) { g["nodes"][2]["inputs"][0] = {0, 0, 0, 0}; }, "got [0,0,0,0]"},
      {[](json& g) { g["nodes"][2]["inputs"][0] = 0; }, "input 0: expected an array, got number"},
      {[](json& g) { g["nodes"][2]["inputs"][0][0] = "0"; }, "input 0 node_id: expected a non-negative integer, got \"0\""},
      {[](json& g) { g["nodes"][2]["inputs"][0][1] = 0.5; }, "input 0 index: expected a non-negative integer, got 0.5"},
      {[](json& g) { g["nodes"][2]["inputs"][0][0] = -1; }, "input 0 node_id: id -1 is out of range"},
      {[](json& g) { g["nodes"][2]["inputs"][0][2] = int64_t{1} << 31; }, "version: id 2147483648 is out of range"},
      {[](json& g) { g["nodes"][2]["attrs"] = json::array(); }, "'tvmgen_default_fused_add' attrs: expected an object, got array"},
      {[](json& g) { g["nodes"][2]["attrs"]["num_inputs"] = 2; }, "attribute 'num_inputs': expected a string, got number"},
      {[](json& g) { g["nodes"][2]["attrs"].erase("func_name"); }, "missing attribute 'func_name'"},
      {[](json& g) { g["nodes"][2]["attrs"]["func_name"] = ""; }, "missing attribute 'func_name'"},
      {[](json& g) { g["nodes"][2]["attrs"].erase("num_inputs"); }, "missing attribute 'num_inputs'"},
      {[](json& g) { g["nodes"][2]["attrs"].erase("num_outputs"); }, "missing attribute 'num_outputs'"},
      {[](json& g) { g["nodes"][2]["attrs"].erase("flatten_data"); }, "missing attribute 'flatten_data'"},
      {[](json& g) { g["nodes"][2]["attrs"]["num_outputs"] = "one"; }, "attribute 'num_outputs' is 'one', expected a count"},
      {[](json& g) { g["nodes"][2]["attrs"]["num_inputs"] = "-2"; }, "attribute 'num_inputs' is '-2', expected a count"},
      {[](json& g) { g["nodes"][2]["attrs"]["num_inputs"] = "99999999999"; }, "expected a count"},
      {[](json& g) { g["nodes"][2]["attrs"]["flatten_data"] = "true"; }, "attribute 'flatten_data' is 'true', expected '0' or '1'"},
      {[](json& g) { g["nodes"][2]["attrs"]["num_inputs"] = "3"; }, "num_inputs is 3 but the node lists 2 inputs"},
      {[](json& g) { g["nodes"][4]["attrs"]["num_outputs"] = "0"; }, "num_outputs is 0"},
      {[](json& g) { g["nodes"][1]["inputs"] = json::parse("[[0, 0, 0]]"); }, "node 1 'p0': an input node (op 'null') cannot have inputs"},
  };
  for (const Case& c : cases) EXPECT_THAT(ParseError(c.edit), HasSubstr(c.message));
}

TEST(GraphJson, RejectsOutOfRangeCyclicAndDanglingReferences) {
  struct Case { std::function<void(json&)> edit; const char* message; };
  const Case cases[] = {
      {[](json& g) { g["nodes"][2]["inputs"][1][0] = 9; }, "input 1: refers to node 9, but the graph has 5 nodes"},
      {[](json& g) { g["nodes"][2]["inputs"][1][0] = 2; }, "does not come before it (a cycle"},  // itself
      {[](json& g) { g["nodes"][2]["inputs"][1][0] = 3; }, "refers to node 3, which does not come before it"},
      {[](json& g) { g["nodes"][2]["inputs"][0][1] = 1; }, "refers to output 1 of node 0, which has 1 outputs"},
      {[](json& g) { g["nodes"][4]["inputs"][0] = {3, 2, 0}; }, "refers to output 2 of node 3"},
      {[](json& g) { g["heads"][0] = {5, 0, 0}; }, "heads[0]: refers to output 0 of node 5, which does not exist"},
      {[](json& g) { g["heads"][1] = {4, 2, 0}; }, "heads[1]: refers to output 2 of node 4"},
      {[](json& g) { g["heads"][1] = json::array(); }, "heads[1]: expected [node_id, index]"},
      {[](json& g) { g["arg_nodes"] = {0, 7}; }, "arg_nodes: node 7 is out of range"},
      {[](json& g) { g["arg_nodes"] = {0, 1, 2}; }, "arg_nodes: node 2 'tvmgen_default_fused_add' is not an input"},
      {[](json& g) { g["arg_nodes"] = {0, 1, 0}; }, "arg_nodes: node 0 is listed twice"},
      {[](json& g) { g["arg_nodes"] = {0}; }, "node 1 'p0': is an input but not in arg_nodes"},
      {[](json& g) { g["nodes"][1]["name"] = "data"; }, "two inputs are named 'data'"},
  };
  for (const Case& c : cases) EXPECT_THAT(ParseError(c.edit), HasSubstr(c.message));

  // A cycle of two operator nodes: whichever comes first refers forward.
  json cyclic = TvmGraph();
  cyclic["nodes"][2]["inputs"][0] = {3, 0, 0};
  cyclic["nodes"][3]["inputs"][0] = {2, 0, 0};
  EXPECT_THAT(ParseError(cyclic.dump()), HasSubstr("node 2 'tvmgen_default_fused_add' input 0: refers to node 3"));
}

TEST(GraphJson, RejectsWrongNodeRowPtr) {
  EXPECT_THAT(ParseError([](json& g) { g["node_row_ptr"] = {0, 1, 2, 3, 4}; }),
              HasSubstr("node_row_ptr: has 5 values for 5 nodes (expected 6)"));
  EXPECT_THAT(ParseError([](json& g) { g["node_row_ptr"] = {1, 2, 3, 4, 5, 7}; }), HasSubstr("does not start at 0"));
  EXPECT_THAT(ParseError([](json& g) { g["node_row_ptr"] = {0, 1, 2, 3, 4, 5}; }),
              HasSubstr("node_row_ptr[5]: gives node 4 'tvmgen_default_fused_split' 1 outputs, but it has 2"));
  EXPECT_THAT(ParseError([](json& g) { g["node_row_ptr"] = {0, 1, 2, 4, 5, 7}; }),
              HasSubstr("node_row_ptr[3]: gives node 2 'tvmgen_default_fused_add' 2 outputs, but it has 1"));
  EXPECT_THAT(ParseError([](json& g) { g["node_row_ptr"] = {0, 1, 0, 1, 2, 4}; }), HasSubstr("gives node 1 'p0' -1 outputs"));
  EXPECT_THAT(ParseError([](json& g) { g["node_row_ptr"][2] = "2"; }), HasSubstr("node_row_ptr[2]: expected a non-negative integer"));
  EXPECT_THAT(ParseError([](json& g) { g["node_row_ptr"][5] = -6; }), HasSubstr("node_row_ptr[5]: id -6 is out of range"));
}

TEST(GraphJson, RejectsMalformedPerEntryAttrs) {
  struct Case { std::function<void(json&)> edit; const char* message; };
  const Case cases[] = {
      {[](json& g) { g["attrs"].erase("shape"); }, "attrs: missing 'shape'"},
      {[](json& g) { g["attrs"].erase("dltype"); }, "attrs: missing 'dltype'"},
      {[](json& g) { g["attrs"].erase("storage_id"); }, "attrs: missing 'storage_id'"},
      {[](json& g) { g["attrs"]["shape"][0] = "list_int"; }, "attrs.shape: type is 'list_int', expected 'list_shape'"},
      {[](json& g) { g["attrs"]["dltype"][0] = "list_shape"; }, "attrs.dltype: type is 'list_shape', expected 'list_str'"},
      {[](json& g) { g["attrs"]["storage_id"][0] = "list_str"; }, "attrs.storage_id: type is 'list_str', expected 'list_int'"},
      {[](json& g) { g["attrs"]["shape"] = {"list_shape"}; }, "attrs.shape: expected [\"<type>\", [values]]"},
      {[](json& g) { g["attrs"]["shape"][0] = 1; }, "attrs.shape: expected [\"<type>\", [values]]"},
      {[](json& g) { g["attrs"]["storage_id"] = {0, 1, 2, 2, 3, 4}; }, "attrs.storage_id: expected [\"<type>\", [values]]"},
      {[](json& g) { g["attrs"]["dltype"][1] = "float32"; }, "attrs.dltype: expected an array, got string"},
      // Per-entry vectors of the wrong length (and so shape and dtype lists that disagree).
      {[](json& g) { g["attrs"]["shape"][1].erase(5); }, "attrs.shape: has 5 values for 6 entries"},
      {[](json& g) { g["attrs"]["dltype"][1].push_back("float32"); }, "attrs.dltype: has 7 values for 6 entries"},
      {[](json& g) { g["attrs"]["storage_id"][1] = json::array(); }, "attrs.storage_id: has 0 values for 6 entries"},
      {[](json& g) { g["attrs"]["device_index"] = json::parse(R"(["list_int", [1, 1]])"); }, "attrs.device_index: has 2 values for 6 entries"},
      {[](json& g) { g["attrs"]["storage_scope"] = json::parse(R"(["list_str", ["global"]])"); }, "attrs.storage_scope: has 1 values"},
      // Bad values.
      {[](json& g) { g["attrs"]["shape"][1][2] = 4; }, "attrs.shape of entry 2: expected an array, got number"},
      {[](json& g) { g["attrs"]["shape"][1][2] = {1, -4}; }, "attrs.shape of entry 2: dimension -4 is not a non-negative integer"},
      {[](json& g) { g["attrs"]["shape"][1][2] = {1, 4.5}; }, "dimension 4.5 is not a non-negative integer"},
      {[](json& g) { g["attrs"]["shape"][1][2] = {"1", 4}; }, "dimension \"1\" is not a non-negative integer"},
      {[](json& g) { g["attrs"]["shape"][1][2] = std::vector<int>(65, 1); }, "attrs.shape of entry 2: has 65 dimensions"},
      {[](json& g) { g["attrs"]["dltype"][1][4] = "complex64"; }, "attrs.dltype of entry 4: 'complex64' is not a dtype"},
      {[](json& g) { g["attrs"]["dltype"][1][4] = "float31"; }, "'float31' is not a dtype"},
      {[](json& g) { g["attrs"]["dltype"][1][4] = "Float32"; }, "'Float32' is not a dtype"},
      {[](json& g) { g["attrs"]["dltype"][1][4] = 32; }, "attrs.dltype of entry 4: expected a string, got number"},
      {[](json& g) { g["attrs"]["storage_id"][1][3] = 6; }, "attrs.storage_id of entry 3: storage id 6 is not below the number of entries (6)"},
      {[](json& g) { g["attrs"]["storage_id"][1][3] = -1; }, "attrs.storage_id of entry 3: id -1 is out of range"},
      {[](json& g) { g["attrs"]["storage_id"][1][3] = "2"; }, "attrs.storage_id of entry 3: expected a non-negative integer"},
      {[](json& g) { g["attrs"]["device_index"] = json::parse(R"(["list_int", [1, 1, 1, -1, 1, 1]])"); }, "attrs.device_index of entry 3: id -1 is out of range"},
      {[](json& g) { g["attrs"]["storage_scope"] = json::parse(R"(["list_str", ["global", "global", "texture", "", "", ""]])"); }, "attrs.storage_scope of entry 2: storage scope 'texture' is not supported"},
      {[](json& g) { g["attrs"]["layout"] = json::parse(R"(["list_str", ["NCHW"]])"); }, "attrs: unknown attribute 'layout'"},
      {[](json& g) { g["attrs"]["extra"] = 5; }, "attrs: unknown attribute 'extra'"},
  };
  for (const Case& c : cases) EXPECT_THAT(ParseError(c.edit), HasSubstr(c.message));
  // The place is named once, not "graph JSON: attrs.dltype ...: graph JSON: attrs.dltype ...".
  EXPECT_EQ(ParseError([](json& g) { g["attrs"]["dltype"][1][4] = 32; }),
            "graph JSON: attrs.dltype of entry 4: expected a string, got number");
}

// Each (value, message): `graph` with its attribute `attr` set to the value fails to parse with
// the message.
struct AttrCase {
  const char* value;
  const char* message;
};
void ExpectAttrErrors(const json& graph, const char* attr, const std::vector<AttrCase>& cases) {
  for (const AttrCase& c : cases) {
    json g = graph;
    g["attrs"][attr] = json::parse(c.value);
    EXPECT_THAT(ParseError(g.dump()), HasSubstr(c.message)) << c.value;
  }
}

// TvmGraph() with its second output an int64 scalar counting its first along axis 0.
json TrimmedGraph() {
  json g = TvmGraph();
  g["attrs"]["dltype"][1][5] = "int64";
  g["attrs"]["shape"][1][5] = json::array();
  g["attrs"][kOutputTrimAttr] = json::parse(R"(["list_int", [0, 1, 0]])");
  return g;
}

TEST(GraphJson, OutputTrimsAreReadAndWrittenBack) {
  Graph graph = ParseGraphJson(TrimmedGraph().dump());
  ASSERT_EQ(graph.output_trims.size(), 1u);
  EXPECT_EQ(graph.output_trims[0].count_output, 1u);
  EXPECT_EQ(graph.num_model_outputs(), 1u);
  EXPECT_EQ(ParseGraphJson(TvmGraph().dump()).num_model_outputs(), 2u);
  ExpectSameGraph(ParseGraphJson(WriteGraphJson(graph)), graph);
  EXPECT_EQ(json::parse(WriteGraphJson(graph))["attrs"][kOutputTrimAttr], json::parse(R"(["list_int", [0, 1, 0]])"));
}

TEST(GraphJson, RejectsMalformedOutputTrims) {
  ExpectAttrErrors(TrimmedGraph(), kOutputTrimAttr, {
      {R"(["list_str", [0, 1, 0]])", "expected [\"list_int\", [values]]"},
      {R"(["list_int", [0, 1]])", "has 2 values, not (output, count output, axis) triples"},
      {R"(["list_int", [0, -1, 0]])", "triple 0: id -1 is out of range"},
      {R"(["list_int", [1, 1, 0]])", "pairs output 1 with count output 1: of the 2 outputs the first 1 are the model's"},
      {R"(["list_int", [0, 2, 0]])", "pairs output 0 with count output 2"},
      {R"(["list_int", [0, 1, 1]])", "axis 1 is not an axis of output 0 (1 dims)"},
  });
  json g = TrimmedGraph();
  g["attrs"]["dltype"][1][5] = "int32";
  EXPECT_THAT(ParseError(g.dump()), HasSubstr("count output 1 is not an int64 scalar"));
}

// TvmGraph() with its second output an int64 [2] holding the shape of its first.
json ShapedGraph() {
  json g = TvmGraph();
  g["attrs"]["dltype"][1][5] = "int64";
  g["attrs"][kOutputShapesAttr] = json::parse(R"(["list_int", [0, 1]])");
  return g;
}

TEST(GraphJson, OutputShapesAreReadAndWrittenBack) {
  Graph graph = ParseGraphJson(ShapedGraph().dump());
  ASSERT_EQ(graph.output_trims.size(), 1u);
  EXPECT_TRUE(graph.output_trims[0].whole_shape);
  EXPECT_EQ(graph.output_trims[0].count_output, 1u);
  EXPECT_EQ(graph.num_model_outputs(), 1u);
  ExpectSameGraph(ParseGraphJson(WriteGraphJson(graph)), graph);
  json written = json::parse(WriteGraphJson(graph));
  EXPECT_EQ(written["attrs"][kOutputShapesAttr], json::parse(R"(["list_int", [0, 1]])"));
  EXPECT_FALSE(written["attrs"].contains(kOutputTrimAttr));
}

TEST(GraphJson, RejectsMalformedOutputShapes) {
  ExpectAttrErrors(ShapedGraph(), kOutputShapesAttr, {
      {R"(["list_str", [0, 1]])", "expected [\"list_int\", [values]]"},
      {R"(["list_int", [0, 1, 0]])", "has 3 values, not (output, shape output) pairs"},
      {R"(["list_int", [0, -1]])", "pair 0: id -1 is out of range"},
      {R"(["list_int", [1, 1]])", "pairs output 1 with shape output 1: of the 2 outputs the first 1 are the model's"},
  });
  json g = ShapedGraph();
  g["attrs"]["shape"][1][5] = json::array();
  EXPECT_THAT(ParseError(g.dump()), HasSubstr("shape output 1 is not an int64 vector of at most 32 extents"));
  g = ShapedGraph();
  g["attrs"]["shape"][1][5] = json::array({33});
  EXPECT_THAT(ParseError(g.dump()), HasSubstr("shape output 1 is not an int64 vector of at most 32 extents"));
}

// TvmGraph() with the split's first output sized as the graph runs from its input, an int64 [2].
json SizedGraph() {
  json g = TvmGraph();
  g["attrs"]["dltype"][1][3] = "int64";
  g["attrs"]["shape"][1][3] = json::array({2});
  g["attrs"]["shape"][1][4] = json::array({0});
  g["attrs"][kSizedEntriesAttr] = json::parse(R"(["list_str", ["4,3"]])");
  return g;
}

TEST(GraphJson, SizedEntriesAreReadAndWrittenBack) {
  Graph graph = ParseGraphJson(SizedGraph().dump());
  ASSERT_EQ(graph.sized_entries.size(), 1u);
  EXPECT_EQ(graph.sized_entries[0].entry, 4u);
  EXPECT_EQ(graph.sized_entries[0].shape_entry, 3u);
  json written = json::parse(WriteGraphJson(graph));
  // A list_str graph attribute: TVM's graph executor stops at it ("cannot skip graph attr").
  EXPECT_EQ(written["attrs"][kSizedEntriesAttr], json::parse(R"(["list_str", ["4,3"]])"));
  EXPECT_EQ(ParseGraphJson(written.dump()).sized_entries.size(), 1u);
}

TEST(GraphJson, RejectsMalformedSizedEntries) {
  ExpectAttrErrors(SizedGraph(), kSizedEntriesAttr, {
      {R"(["list_int", [4, 3]])", "expected [\"list_str\", [\"entry,shape entry\", ...]]"},
      {R"(["list_str", ["4"]])", "'\"4\"' is not \"entry,shape entry\" of two entries below 6"},
      {R"(["list_str", ["4,-3"]])", "is not \"entry,shape entry\""},
      {R"(["list_str", ["4,99"]])", "is not \"entry,shape entry\""},
      {R"(["list_str", [",3"]])", "is not \"entry,shape entry\""},
      {R"(["list_str", ["4,3x"]])", "is not \"entry,shape entry\""},
      {R"(["list_str", [43]])", "is not \"entry,shape entry\""},
      {R"(["list_str", ["4,2"]])", "shape entry 2 is not an int64 vector of at most 32 extents"},
      {R"(["list_str", ["5,3"]])", "entry 5 is not a flat tensor of no elements"},
  });
  json g = SizedGraph();
  g["attrs"]["dltype"][1][1] = "int64";
  g["attrs"]["shape"][1][1] = json::array({2});
  g["attrs"][kSizedEntriesAttr] = json::parse(R"(["list_str", ["4,1"]])");
  EXPECT_THAT(ParseError(g.dump()), HasSubstr("entry 4 is not computed by a node that takes entry 1"));
  // The add's output sized from its input p0, read by the reshape's __nop.
  g = TvmGraph();
  g["attrs"]["dltype"][1][1] = "int64";
  g["attrs"]["shape"][1][1] = json::array({2});
  g["attrs"]["shape"][1][2] = json::array({0});
  g["attrs"][kSizedEntriesAttr] = json::parse(R"(["list_str", ["2,1"]])");
  EXPECT_THAT(ParseError(g.dump()), HasSubstr("entry 2 is read by 'reshape_nop' (__nop), which cannot follow a size"));
}

// TvmGraph with a batch dimension N of 1 to 2 samples: data, the add and the reshape hold them.
json BatchedGraph() {
  json g = TvmGraph();
  g["attrs"]["shape"][1][0] = json::array({2, 4});
  g["attrs"]["shape"][1][2] = json::array({2, 4});
  g["attrs"][kBatchDimAttr] = json::parse(R"(["list_str", ["N", "1", "2"]])");
  g["attrs"][kBatchEntriesAttr] = json::parse(R"(["list_int", [1, 0, 1, 1, 0, 0]])");
  return g;
}

TEST(GraphJson, BatchDimensionsAreReadAndWrittenBack) {
  Graph graph = ParseGraphJson(BatchedGraph().dump());
  ASSERT_TRUE(graph.has_batch());
  EXPECT_EQ(graph.batch.name, "N");
  EXPECT_EQ(graph.batch.min, 1);
  EXPECT_EQ(graph.batch.max, 2);
  EXPECT_EQ(graph.batched_entries, (std::vector<bool>{true, false, true, true, false, false}));
  EXPECT_FALSE(ParseGraphJson(TvmGraph().dump()).has_batch());
  json written = json::parse(WriteGraphJson(graph));
  // A list_str graph attribute: TVM's graph executor stops at it ("cannot skip graph attr").
  EXPECT_EQ(written["attrs"][kBatchDimAttr], json::parse(R"(["list_str", ["N", "1", "2"]])"));
  EXPECT_EQ(written["attrs"][kBatchEntriesAttr], json::parse(R"(["list_int", [1, 0, 1, 1, 0, 0]])"));
  Graph again = ParseGraphJson(written.dump());
  ExpectSameGraph(again, graph);
  EXPECT_EQ(again.batched_entries, graph.batched_entries);
  EXPECT_FALSE(json::parse(WriteGraphJson(ParseGraphJson(TvmGraph().dump())))["attrs"].contains(kBatchDimAttr));
}

TEST(GraphJson, RejectsMalformedBatchDimensions) {
  struct Case { const char* dim; const char* entries; const char* message; };
  const Case cases[] = {
      {nullptr, R"(["list_int", [1, 0, 1, 1, 0, 0]])", "has kiln_batch_entries without kiln_batch_dim"},
      {R"(["list_str", ["N", "1", "2"]])", nullptr, "has kiln_batch_dim without kiln_batch_entries"},
      {R"(["list_int", [1, 2]])", R"(["list_int", [1, 0, 1, 1, 0, 0]])", "expected [\"list_str\", [name, min, max]]"},
      {R"(["list_str", ["N", "1"]])", R"(["list_int", [1, 0, 1, 1, 0, 0]])", "has 2 values, not [name, min, max]"},
      {R"(["list_str", ["", "1", "2"]])", R"(["list_int", [1, 0, 1, 1, 0, 0]])", "the dimension has no name"},
      {R"(["list_str", ["N", "0", "2"]])", R"(["list_int", [1, 0, 1, 1, 0, 0]])", "min '0' is not an integer from 1 to"},
      {R"(["list_str", ["N", "1", "2x"]])", R"(["list_int", [1, 0, 1, 1, 0, 0]])", "max '2x' is not an integer"},
      {R"(["list_str", ["N", "1", "99999999999999999999"]])", R"(["list_int", [1, 0, 1, 1, 0, 0]])", "is not an integer"},
      {R"(["list_str", ["N", "2", "1"]])", R"(["list_int", [1, 0, 1, 1, 0, 0]])", "min 2 is above max 1"},
      {R"(["list_str", ["N", "1", "2"]])", R"(["list_int", [1, 0, 1, 1, 0]])", "has 5 values for 6 entries"},
      {R"(["list_str", ["N", "1", "2"]])", R"(["list_int", [1, 0, 2, 1, 0, 0]])", "entry 2: is 2, not 0 or 1"},
      {R"(["list_str", ["N", "1", "3"]])", R"(["list_int", [1, 0, 1, 1, 0, 0]])",
       "marks a shape [2, 4] as batched, but its axis 0 does not hold 3 samples"},
  };
  for (const Case& c : cases) {
    json g = BatchedGraph();
    g["attrs"].erase(kBatchDimAttr);
    g["attrs"].erase(kBatchEntriesAttr);
    if (c.dim != nullptr) g["attrs"][kBatchDimAttr] = json::parse(c.dim);
    if (c.entries != nullptr) g["attrs"][kBatchEntriesAttr] = json::parse(c.entries);
    EXPECT_THAT(ParseError(g.dump()), HasSubstr(c.message)) << (c.dim ? c.dim : "") << (c.entries ? c.entries : "");
  }
}

// TvmGraph with a shape dimension S of 1 to 4 in steps of 1: data and the add are [1, S], the
// reshape [2, S / 2]... written as extents of S for data and the add only (the rest fixed).
json DimsGraph() {
  json g = TvmGraph();
  g["attrs"]["shape"][1][0] = json::array({1, 4});
  g["attrs"][kDimsAttr] = json::parse(R"(["list_str", ["S", "1", "4", "1"]])");
  g["attrs"][kEntryExtentsAttr] = json::parse(R"(["list_str", ["1,d0", "", "1,d0", "", "", ""]])");
  return g;
}

TEST(GraphJson, ShapeDimensionsAreReadAndWrittenBack) {
  Graph graph = ParseGraphJson(DimsGraph().dump());
  ASSERT_TRUE(graph.has_dims());
  EXPECT_EQ(graph.dims[0].name, "S");
  EXPECT_EQ(graph.dims[0].max, 4);
  ASSERT_EQ(graph.entry_extents.size(), 6u);
  EXPECT_EQ(graph.entry_extents[0][1].SingleDim(), 0);
  EXPECT_TRUE(graph.entry_extents[1].empty());
  json written = json::parse(WriteGraphJson(graph));
  EXPECT_EQ(written["attrs"][kDimsAttr], json::parse(R"(["list_str", ["S", "1", "4", "1"]])"));
  EXPECT_EQ(written["attrs"][kEntryExtentsAttr], json::parse(R"(["list_str", ["1,d0", "", "1,d0", "", "", ""]])"));
  EXPECT_FALSE(json::parse(WriteGraphJson(ParseGraphJson(TvmGraph().dump())))["attrs"].contains(kDimsAttr));
}

TEST(GraphJson, RejectsMalformedShapeDimensions) {
  struct Case { const char* dims; const char* extents; const char* message; };
  const char* extents = R"(["list_str", ["1,d0", "", "1,d0", "", "", ""]])";
  const Case cases[] = {
      {nullptr, extents, "has kiln_entry_extents without kiln_dims"},
      {R"(["list_str", ["S", "1", "4", "1"]])", nullptr, "has kiln_dims without kiln_entry_extents"},
      {R"(["list_str", ["S", "1", "4"]])", extents, "not 1 to 8 groups of [name, min, max, step]"},
      {R"(["list_str", ["", "1", "4", "1"]])", extents, "dimension name '' is empty or repeated"},
      {R"(["list_str", ["S", "0", "4", "1"]])", extents, "min '0' is not an integer from 1 to"},
      {R"(["list_str", ["S", "2", "1", "1"]])", extents, "max '1' is not an integer from 2 to"},
      {R"(["list_str", ["S", "1", "4", "2"]])", extents, "max 4 is not min plus whole steps"},
      {R"(["list_str", ["S", "1", "4", "1", "S", "1", "4", "1"]])", extents, "dimension name 'S' is empty or repeated"},
      {R"(["list_str", ["S", "1", "4", "1"]])", R"(["list_str", ["1,d0", ""]])", "has 2 values for 6 entries"},
      {R"(["list_str", ["S", "1", "4", "1"]])", R"(["list_str", ["1,d1", "", "1,d0", "", "", ""]])",
       "d1 is not one of the 1 dimensions"},
      {R"(["list_str", ["S", "1", "4", "1"]])", R"(["list_str", ["1,d0*", "", "1,d0", "", "", ""]])",
       "expected a number or d<index>"},
      {R"(["list_str", ["S", "1", "4", "1"]])", R"(["list_str", ["1,2*d0", "", "1,d0", "", "", ""]])",
       "gives [1, 8] at every dimension's max, but the entry's shape is [1, 4]"},
      {R"(["list_str", ["S", "1", "4", "1"]])", R"(["list_str", ["d0", "", "1,d0", "", "", ""]])",
       "gives [4] at every dimension's max, but the entry's shape is [1, 4]"},
      {R"(["list_str", ["S", "1", "4", "1"]])", R"(["list_str", ["1,(d0)/3", "", "1,d0", "", "", ""]])",
       "is not a whole number"},
      {R"(["list_str", ["S", "1", "4", "1"]])", R"(["list_str", ["1,d0*d0*d0*d0*d0*d0*d0*d0*d0", "", "1,d0", "", "", ""]])",
       "a degree above 8"},
      {R"(["list_str", ["S", "1", "4", "1"]])", R"(["list_str", ["1,2147483648*2147483648", "", "1,d0", "", "", ""]])",
       "a coefficient too large"},
      {R"(["list_str", ["S", "1", "4", "1"]])",
       R"(["list_str", ["1,1099511627776 + 1099511627776 + 1099511627776", "", "1,d0", "", "", ""]])",
       "gives [1, 3298534883328] at every dimension's max"},
  };
  for (const Case& c : cases) {
    json g = DimsGraph();
    g["attrs"].erase(kDimsAttr);
    g["attrs"].erase(kEntryExtentsAttr);
    if (c.dims != nullptr) g["attrs"][kDimsAttr] = json::parse(c.dims);
    if (c.extents != nullptr) g["attrs"][kEntryExtentsAttr] = json::parse(c.extents);
    EXPECT_THAT(ParseError(g.dump()), HasSubstr(c.message)) << (c.dims ? c.dims : "") << (c.extents ? c.extents : "");
  }
}

TEST(GraphJson, FrontParametersAreInputsWhoseExtentsVary) {
  json g = DimsGraph();
  g["attrs"][kFrontParamsAttr] = json::parse(R"(["list_int", [0]])");
  Graph graph = ParseGraphJson(g.dump());
  EXPECT_EQ(graph.front_params, std::vector<uint32_t>{0});
  EXPECT_EQ(json::parse(WriteGraphJson(graph))["attrs"][kFrontParamsAttr], json::parse(R"(["list_int", [0]])"));
  for (const char* bad : {R"(["list_int", [1]])", R"(["list_int", [2]])", R"(["list_int", [9]])", R"(["list_str", ["0"]])"}) {
    g["attrs"][kFrontParamsAttr] = json::parse(bad);
    EXPECT_THAT(ParseError(g.dump()), HasSubstr(kFrontParamsAttr)) << bad;
  }
}

// c (a bool scalar) and x; "then" copies x when c holds, "else" when it does not.
json ConditionalGraph() {
  return json::parse(R"({
    "nodes": [
      {"op": "null", "name": "c", "inputs": []},
      {"op": "null", "name": "x", "inputs": []},
      {"op": "tvm_op", "name": "then", "inputs": [[1, 0, 0]],
       "attrs": {"func_name": "__copy", "num_inputs": "1", "num_outputs": "1", "flatten_data": "0",
                 "kiln_run_if": "[[0,0,1]]"}},
      {"op": "tvm_op", "name": "else", "inputs": [[1, 0, 0]],
       "attrs": {"func_name": "__copy", "num_inputs": "1", "num_outputs": "1", "flatten_data": "0",
                 "kiln_run_if": "[[0,0,0]]"}}
    ],
    "arg_nodes": [0, 1],
    "heads": [[2, 0, 0], [3, 0, 0]],
    "attrs": {
      "dltype": ["list_str", ["bool", "float32", "float32", "float32"]],
      "shape": ["list_shape", [[], [2], [2], [2]]],
      "storage_id": ["list_int", [0, 1, 2, 3]]
    },
    "node_row_ptr": [0, 1, 2, 3, 4]
  })");
}

TEST(GraphJson, RunConditionsAreReadAndWrittenBack) {
  Graph graph = ParseGraphJson(ConditionalGraph().dump());
  ASSERT_EQ(graph.nodes[2].run_if.size(), 1u);
  EXPECT_EQ(graph.nodes[2].run_if[0].condition.node_id, 0u);
  EXPECT_TRUE(graph.nodes[2].run_if[0].taken);
  ASSERT_EQ(graph.nodes[3].run_if.size(), 1u);
  EXPECT_FALSE(graph.nodes[3].run_if[0].taken);
  EXPECT_TRUE(ParseGraphJson(TvmGraph().dump()).nodes[2].run_if.empty());
  ExpectSameGraph(ParseGraphJson(WriteGraphJson(graph)), graph);
  // The attribute is written from run_if, not from what was read.
  graph.nodes[2].run_if.clear();
  graph.nodes[3].run_if.push_back({{0, 0, 0}, true});
  json written = json::parse(WriteGraphJson(graph));
  EXPECT_FALSE(written["nodes"][2]["attrs"].contains(kRunIfAttr));
  EXPECT_EQ(written["nodes"][3]["attrs"][kRunIfAttr], "[[0,0,0],[0,0,1]]");
}

TEST(GraphJson, RejectsMalformedRunConditions) {
  struct Case { const char* conditions; const char* message; };
  const Case cases[] = {
      {"[[0,0,1]", "is not a JSON list of [node_id, index, taken]"},
      {"{}", "is not a JSON list of [node_id, index, taken]"},
      {"[[0,0]]", "condition 0: expected [node_id, index, taken], got [0,0]"},
      {"[[0,0,1],7]", "condition 1: expected an array, got number"},
      {"[[0,0,2]]", "condition 0: taken is 2, expected 0 or 1"},
      {"[[-1,0,1]]", "condition 0 node_id: id -1 is out of range"},
      {"[[3,0,1]]", "refers to output 0 of node 3, which is not an output of an earlier node"},
      {"[[0,1,1]]", "refers to output 1 of node 0, which is not an output of an earlier node"},
      {"[[1,0,1]]", "refers to a float32 tensor of shape [2]; a condition is a bool scalar"},
  };
  for (const Case& c : cases) {
    json g = ConditionalGraph();
    g["nodes"][2]["attrs"][kRunIfAttr] = c.conditions;
    EXPECT_THAT(ParseError(g.dump()), HasSubstr(c.message)) << c.conditions;
  }
}

TEST(GraphJson, RejectsDeeplyNestedValuesWithoutOverflowingTheStack) {
  // The error message quotes the offending value; it must not recurse through all the levels.
  std::string deep = std::string(200000, '[') + std::string(200000, ']');
  json graph = TvmGraph();
  graph["nodes"][2]["inputs"] = "INPUTS";
  std::string text = graph.dump();
  text.replace(text.find("\"INPUTS\""), 8, "[" + deep + ", [1, 0, 0]]");
  EXPECT_THAT(ParseError(text), HasSubstr("'tvmgen_default_fused_add' input 0: expected [node_id, index]"));
  EXPECT_LT(ParseError(text).size(), 200u);  // the value is quoted only a few levels deep
  text.replace(text.find(deep), deep.size(), "[" + deep + ", 0]");
  EXPECT_THAT(ParseError(text), HasSubstr("input 0 node_id: expected a non-negative integer"));

  graph = TvmGraph();
  graph["attrs"]["shape"][1][0] = "SHAPE";
  text = graph.dump();
  text.replace(text.find("\"SHAPE\""), 7, "[" + deep + "]");
  EXPECT_THAT(ParseError(text), HasSubstr("attrs.shape of entry 0: dimension"));
}

TEST(GraphJson, EveryTruncationIsAnError) {
  std::string text = TvmGraph().dump();
  for (size_t size = 0; size < text.size(); ++size) {
    EXPECT_THAT(ParseError(text.substr(0, size)), HasSubstr("graph JSON: not valid JSON")) << size;
  }
}

TEST(GraphJson, EveryNumberChangedIsParsedOrRejected) {
  // Replace each number of the graph with values around the edges; any outcome but an Error
  // or a consistent graph (e.g. a crash, an exception of another type) fails the test.
  std::string text = TvmGraph().dump();
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9' || (i > 0 && text[i - 1] >= '0' && text[i - 1] <= '9')) continue;
    size_t end = text.find_first_not_of("0123456789", i);
    for (const char* value : {"0", "1", "5", "6", "-1", "2147483647", "4294967296", "1e3", "true"}) {
      std::string changed = text.substr(0, i) + value + text.substr(end);
      try {
        Graph g = ParseGraphJson(changed);
        // Accepted: the references must then be in range.
        for (const GraphEntryRef& head : g.heads) EXPECT_LT(g.EntryId(head), g.num_entries()) << changed;
        for (uint32_t sid : g.storage_ids) EXPECT_LT(sid, g.num_entries()) << changed;
      } catch (const Error& e) {
        EXPECT_THAT(e.what(), HasSubstr("graph JSON: ")) << changed;
      }
    }
  }
}

}  // namespace
}  // namespace kiln::runtime
