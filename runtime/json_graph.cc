// Reading, validating and writing the JSON subgraph format.
#include "runtime/json_graph.h"

#include <nlohmann/json.hpp>

#include <set>

#include "runtime/dtype.h"
#include "runtime/error.h"

namespace kiln::runtime {
namespace {

using nlohmann::json;

constexpr int64_t kMaxId = int64_t{1} << 31;

[[noreturn]] void Bad(const std::string& where, const std::string& what) {
  Fail("external graph JSON: ", where, ": ", what);
}

const json& Field(const json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) Bad(where, StrCat("missing field '", key, "'"));
  return *it;
}

const json& ArrayOf(const json& value, const std::string& where) {
  if (!value.is_array()) Bad(where, StrCat("expected an array, got ", value.type_name()));
  return value;
}

uint32_t Id(const json& value, const std::string& where) {
  if (!value.is_number_integer()) Bad(where, StrCat("expected a non-negative integer, got ", value.type_name()));
  int64_t id = value.get<int64_t>();
  if (id < 0 || id >= kMaxId) Bad(where, StrCat("id ", id, " is out of range"));
  return static_cast<uint32_t>(id);
}

std::string String(const json& value, const std::string& where) {
  if (!value.is_string()) Bad(where, StrCat("expected a string, got ", value.type_name()));
  return value.get<std::string>();
}

JsonEntry Entry(const json& value, const std::string& where) {
  ArrayOf(value, where);
  if (value.size() != 2 && value.size() != 3) Bad(where, "expected [node, index] or [node, index, version]");
  return {Id(value[0], where + " node"), Id(value[1], where + " index")};
}

// The one element of an attribute's outer list.
const json& Wrapped(const json& value, const std::string& where) {
  if (!value.is_array() || value.size() != 1) Bad(where, "expected a list holding one list");
  return ArrayOf(value[0], where);
}

void ParseAttrs(const json& attrs, JsonNode& node, const std::string& where) {
  if (!attrs.is_object()) Bad(where + " attrs", StrCat("expected an object, got ", attrs.type_name()));
  for (const auto& [key, value] : attrs.items()) {
    std::string at = StrCat(where, " attribute '", key, "'");
    if (key == "num_inputs" || key == "num_outputs") {
      String(value, at);  // implied by inputs and shape; checked against them below
    } else if (key == "shape") {
      for (const json& shape : Wrapped(value, at)) {
        std::vector<int64_t> dims;
        for (const json& d : ArrayOf(shape, at)) {
          if (!d.is_number_integer() || d.get<int64_t>() < 0) Bad(at, "a dimension is not a non-negative integer");
          dims.push_back(d.get<int64_t>());
        }
        node.shapes.push_back(std::move(dims));
      }
    } else if (key == "dtype") {
      for (const json& d : Wrapped(value, at)) {
        try {
          node.dtypes.push_back(ParseDType(String(d, at)));
        } catch (const Error& e) {
          Bad(at, e.what());
        }
      }
    } else {
      std::vector<std::string> values;
      for (const json& v : Wrapped(value, at)) values.push_back(String(v, at));
      node.attrs[key] = std::move(values);
    }
  }
  auto count = [&](const char* key, size_t want) {
    auto it = attrs.find(key);
    if (it != attrs.end() && it->get<std::string>() != std::to_string(want)) {
      Bad(where, StrCat(key, " is ", it->get<std::string>(), " but the node has ", want));
    }
  };
  count("num_inputs", node.inputs.size());
  count("num_outputs", node.shapes.size());
}

JsonNode Node(const json& value, size_t n) {
  std::string where = StrCat("node ", n);
  if (!value.is_object()) Bad(where, StrCat("expected an object, got ", value.type_name()));
  JsonNode node;
  node.op = String(Field(value, "op", where), where + " op");
  node.name = String(Field(value, "name", where), where + " name");
  where = StrCat("node ", n, " '", node.name, "'");
  if (node.op != "input" && node.op != "const" && node.op != "kernel") {
    Bad(where, StrCat("op is '", node.op, "', expected 'input', 'const' or 'kernel'"));
  }
  if (auto it = value.find("inputs"); it != value.end()) {
    for (size_t i = 0; i < ArrayOf(*it, where + " inputs").size(); ++i) {
      node.inputs.push_back(Entry((*it)[i], StrCat(where, " input ", i)));
    }
  }
  auto attrs = value.find("attrs");
  if (attrs == value.end()) attrs = value.find("attr");
  if (attrs == value.end()) Bad(where, "missing attrs (every node gives its shape and dtype)");
  ParseAttrs(*attrs, node, where);
  if (node.shapes.empty()) Bad(where, "has no shape");
  if (node.shapes.size() != node.dtypes.size()) {
    Bad(where, StrCat(node.shapes.size(), " shapes but ", node.dtypes.size(), " dtypes"));
  }
  if (node.op != "kernel" && !node.inputs.empty()) Bad(where, StrCat("an ", node.op, " node cannot have inputs"));
  if (node.op == "const" && node.shapes.size() != 1) Bad(where, "a constant has one shape");
  return node;
}

}  // namespace

const std::vector<std::string>& JsonNode::Attr(const std::string& key) const {
  auto it = attrs.find(key);
  Check(it != attrs.end(), "external graph JSON: node '", name, "' has no attribute '", key, "'");
  return it->second;
}

JsonGraph ParseJsonGraph(std::string_view text) {
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) Fail("external graph JSON: not valid JSON");
  if (!root.is_object()) Bad("top level", StrCat("expected an object, got ", root.type_name()));
  JsonGraph graph;
  for (const auto& [key, value] : root.items()) {
    static const std::set<std::string> kKnown = {"symbol", "nodes", "arg_nodes", "heads", "node_row_ptr"};
    if (kKnown.count(key) == 0) Bad("top level", StrCat("unknown field '", key, "'"));
  }
  if (auto it = root.find("symbol"); it != root.end()) graph.symbol = String(*it, "symbol");
  const json& nodes = ArrayOf(Field(root, "nodes", "top level"), "nodes");
  for (size_t n = 0; n < nodes.size(); ++n) graph.nodes.push_back(Node(nodes[n], n));
  graph.node_row_ptr.push_back(0);
  for (const JsonNode& node : graph.nodes) {
    graph.node_row_ptr.push_back(graph.node_row_ptr.back() + static_cast<uint32_t>(node.num_outputs()));
  }
  if (auto it = root.find("node_row_ptr"); it != root.end()) {
    const json& row_ptr = ArrayOf(*it, "node_row_ptr");
    bool same = row_ptr.size() == graph.node_row_ptr.size();
    for (size_t i = 0; same && i < row_ptr.size(); ++i) {
      same = row_ptr[i].is_number_integer() && row_ptr[i].get<int64_t>() == graph.node_row_ptr[i];
    }
    if (!same) Bad("node_row_ptr", "does not match the nodes' numbers of outputs");
  }
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (size_t i = 0; i < graph.nodes[n].inputs.size(); ++i) {
      const JsonEntry& in = graph.nodes[n].inputs[i];
      if (in.node >= n || in.index >= graph.nodes[in.node].num_outputs()) {
        Bad(StrCat("node ", n, " '", graph.nodes[n].name, "' input ", i),
            StrCat("refers to output ", in.index, " of node ", in.node, ", which is not an output of an earlier node"));
      }
    }
  }
  std::set<uint32_t> args;
  const json& arg_nodes = ArrayOf(Field(root, "arg_nodes", "top level"), "arg_nodes");
  for (size_t i = 0; i < arg_nodes.size(); ++i) {
    uint32_t id = Id(arg_nodes[i], StrCat("arg_nodes[", i, "]"));
    if (id >= graph.nodes.size() || graph.nodes[id].op == "kernel" || !args.insert(id).second) {
      Bad(StrCat("arg_nodes[", i, "]"), StrCat("node ", id, " is not an input or constant node listed once"));
    }
    graph.arg_nodes.push_back(id);
  }
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (graph.nodes[n].op != "kernel" && args.count(static_cast<uint32_t>(n)) == 0) {
      Bad(StrCat("node ", n, " '", graph.nodes[n].name, "'"), "is an input or constant but not in arg_nodes");
    }
  }
  const json& heads = ArrayOf(Field(root, "heads", "top level"), "heads");
  for (size_t h = 0; h < heads.size(); ++h) {
    JsonEntry e = Entry(heads[h], StrCat("heads[", h, "]"));
    if (e.node >= graph.nodes.size() || e.index >= graph.nodes[e.node].num_outputs()) {
      Bad(StrCat("heads[", h, "]"), StrCat("refers to output ", e.index, " of node ", e.node, ", which does not exist"));
    }
    graph.heads.push_back(e);
  }
  if (graph.heads.empty()) Bad("heads", "the graph has no outputs");
  return graph;
}

std::string WriteJsonGraph(const JsonGraph& graph) {
  json nodes = json::array();
  auto entry = [](const JsonEntry& e) { return json::array({e.node, e.index, 0}); };
  for (const JsonNode& node : graph.nodes) {
    json object = {{"op", node.op}, {"name", node.name}};
    json attrs = json::object();
    for (const auto& [key, values] : node.attrs) attrs[key] = json::array({values});
    json dtypes = json::array();
    for (DLDataType d : node.dtypes) dtypes.push_back(DTypeToString(d));
    attrs["shape"] = json::array({node.shapes});
    attrs["dtype"] = json::array({dtypes});
    if (!node.inputs.empty()) {
      json inputs = json::array();
      for (const JsonEntry& e : node.inputs) inputs.push_back(entry(e));
      object["inputs"] = inputs;
      attrs["num_inputs"] = std::to_string(node.inputs.size());
      attrs["num_outputs"] = std::to_string(node.num_outputs());
    }
    object["attrs"] = attrs;
    nodes.push_back(object);
  }
  json heads = json::array();
  for (const JsonEntry& e : graph.heads) heads.push_back(entry(e));
  json root = {{"symbol", graph.symbol}, {"nodes", nodes}, {"arg_nodes", graph.arg_nodes}, {"heads", heads},
               {"node_row_ptr", graph.node_row_ptr}};
  return root.dump();
}

}  // namespace kiln::runtime
