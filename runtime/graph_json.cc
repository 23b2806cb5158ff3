// Parsing, validating and writing graph JSON.
#include "runtime/graph_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>

#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/ndarray.h"

namespace kiln::runtime {
namespace {

using nlohmann::json;

constexpr int64_t kMaxId = int64_t{1} << 31;
constexpr size_t kMaxDims = 64;

[[noreturn]] void Bad(const std::string& where, const std::string& what) {
  Fail("graph JSON: ", where, ": ", what);
}

const char* KindOf(const json& value) { return value.type_name(); }

// A value quoted in an error message. Unlike dump(), which recurses once per nesting level (and
// so overflows the stack on hostile input such as 100000 nested arrays), this stops a few levels
// down and after a few elements.
std::string Show(const json& value, int depth = 0) {
  if (value.is_object()) return "{...}";
  if (!value.is_array()) return value.dump();
  if (depth == 4) return "[...]";
  std::string text = "[";
  for (size_t i = 0; i < value.size(); ++i) {
    if (i == 16) return text + ",...]";
    text += (i > 0 ? "," : "") + Show(value[i], depth + 1);
  }
  return text + "]";
}

const json& Field(const json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) Bad(where, StrCat("missing field '", key, "'"));
  return *it;
}

const json& ArrayOf(const json& value, const std::string& where) {
  if (!value.is_array()) Bad(where, StrCat("expected an array, got ", KindOf(value)));
  return value;
}

uint32_t Id(const json& value, const std::string& where) {
  if (!value.is_number_integer()) Bad(where, StrCat("expected a non-negative integer, got ", Show(value)));
  int64_t id = value.get<int64_t>();
  if (id < 0 || id >= kMaxId) Bad(where, StrCat("id ", id, " is out of range"));
  return static_cast<uint32_t>(id);
}

std::string String(const json& value, const std::string& where) {
  if (!value.is_string()) Bad(where, StrCat("expected a string, got ", KindOf(value)));
  return value.get<std::string>();
}

// Attribute values are strings holding decimal numbers ("3").
uint32_t CountAttr(const std::map<std::string, std::string>& attrs, const char* key,
                   const std::string& where) {
  auto it = attrs.find(key);
  if (it == attrs.end()) Bad(where, StrCat("missing attribute '", key, "'"));
  const std::string& text = it->second;
  bool digits = !text.empty() && text.size() <= 9 &&
                text.find_first_not_of("0123456789") == std::string::npos;
  if (!digits) Bad(where, StrCat("attribute '", key, "' is '", text, "', expected a count"));
  return static_cast<uint32_t>(std::stoul(text));
}

GraphEntryRef Entry(const json& value, const std::string& where) {
  ArrayOf(value, where);
  if (value.size() != 2 && value.size() != 3) {
    Bad(where, StrCat("expected [node_id, index] or [node_id, index, version], got ", Show(value)));
  }
  GraphEntryRef e;
  e.node_id = Id(value[0], where + " node_id");
  e.index = Id(value[1], where + " index");
  if (value.size() == 3) e.version = Id(value[2], where + " version");
  return e;
}

// The node attribute kRunIfAttr: a string holding [[node_id, index, taken], ...].
std::vector<RunCondition> RunConditions(const std::string& text, const std::string& where) {
  json list = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (list.is_discarded() || !list.is_array()) {
    Bad(where, StrCat("attribute '", kRunIfAttr, "' is not a JSON list of [node_id, index, taken]"));
  }
  std::vector<RunCondition> conditions;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string item = StrCat(where, " attribute '", kRunIfAttr, "' condition ", i);
    const json& triple = ArrayOf(list[i], item);
    if (triple.size() != 3) Bad(item, StrCat("expected [node_id, index, taken], got ", Show(triple)));
    RunCondition c;
    c.condition = {Id(triple[0], item + " node_id"), Id(triple[1], item + " index"), 0};
    uint32_t taken = Id(triple[2], item + " taken");
    if (taken > 1) Bad(item, StrCat("taken is ", taken, ", expected 0 or 1"));
    c.taken = taken == 1;
    conditions.push_back(c);
  }
  return conditions;
}

GraphNode Node(const json& value, size_t n) {
  std::string where = StrCat("node ", n);
  if (!value.is_object()) Bad(where, StrCat("expected an object, got ", KindOf(value)));
  GraphNode node;
  node.op = String(Field(value, "op", where), where + " op");
  node.name = String(Field(value, "name", where), where + " name");
  where = StrCat("node ", n, " '", node.name, "'");
  if (node.op != "null" && node.op != "tvm_op") {
    Bad(where, StrCat("op is '", node.op, "', expected 'null' or 'tvm_op'"));
  }
  if (auto it = value.find("inputs"); it != value.end()) {
    ArrayOf(*it, where + " inputs");
    for (size_t i = 0; i < it->size(); ++i) {
      node.inputs.push_back(Entry((*it)[i], StrCat(where, " input ", i)));
    }
  }
  auto attrs = value.find("attrs");
  if (attrs == value.end()) attrs = value.find("attr");
  if (attrs != value.end()) {
    if (!attrs->is_object()) Bad(where + " attrs", StrCat("expected an object, got ", KindOf(*attrs)));
    for (const auto& [key, attr] : attrs->items()) {
      node.attrs[key] = String(attr, StrCat(where, " attribute '", key, "'"));
    }
  }
  if (node.is_input()) {
    if (!node.inputs.empty()) Bad(where, "an input node (op 'null') cannot have inputs");
    return node;
  }
  auto func = node.attrs.find("func_name");
  if (func == node.attrs.end() || func->second.empty()) Bad(where, "missing attribute 'func_name'");
  node.func_name = func->second;
  uint32_t num_inputs = CountAttr(node.attrs, "num_inputs", where);
  node.num_outputs = CountAttr(node.attrs, "num_outputs", where);
  auto flatten = node.attrs.find("flatten_data");
  if (flatten == node.attrs.end()) Bad(where, "missing attribute 'flatten_data'");
  if (flatten->second != "0" && flatten->second != "1") {
    Bad(where, StrCat("attribute 'flatten_data' is '", flatten->second, "', expected '0' or '1'"));
  }
  node.flatten_data = flatten->second == "1";
  if (num_inputs != node.inputs.size()) {
    Bad(where, StrCat("num_inputs is ", num_inputs, " but the node lists ", node.inputs.size(), " inputs"));
  }
  if (node.num_outputs == 0) Bad(where, "num_outputs is 0");
  if (auto run_if = node.attrs.find(kRunIfAttr); run_if != node.attrs.end()) {
    node.run_if = RunConditions(run_if->second, where);
  }
  return node;
}

// One per-entry attribute vector: ["<tag>", [values...]].
const json& AttrValues(const json& attrs, const char* key, const char* tag, size_t num_entries,
                       bool required) {
  std::string where = StrCat("attrs.", key);
  auto it = attrs.find(key);
  if (it == attrs.end()) {
    if (required) Bad("attrs", StrCat("missing '", key, "'"));
    static const json kNone;
    return kNone;
  }
  const json& pair = ArrayOf(*it, where);
  if (pair.size() != 2 || !pair[0].is_string()) Bad(where, "expected [\"<type>\", [values]]");
  if (pair[0].get<std::string>() != tag) {
    Bad(where, StrCat("type is '", pair[0].get<std::string>(), "', expected '", tag, "'"));
  }
  const json& values = ArrayOf(pair[1], where);
  if (values.size() != num_entries) {
    Bad(where, StrCat("has ", values.size(), " values for ", num_entries, " entries"));
  }
  return values;
}

void ParseAttrs(const json& attrs, Graph& graph) {
  if (!attrs.is_object()) Bad("attrs", StrCat("expected an object, got ", KindOf(attrs)));
  size_t num_entries = graph.node_row_ptr.back();
  for (const auto& [key, value] : attrs.items()) {
    static const std::set<std::string> kKnown = {"shape", "dltype", "storage_id", "device_index",
                                                 "storage_scope", kOutputTrimAttr, kOutputShapesAttr,
                                                 kBatchDimAttr, kBatchEntriesAttr, kDimsAttr,
                                                 kEntryExtentsAttr, kFrontParamsAttr, kSizedEntriesAttr};
    if (kKnown.count(key) != 0) continue;
    // Like TVM: unknown integer vectors are skipped, anything else is an error.
    bool skippable = value.is_array() && value.size() == 2 && value[0].is_string() &&
                     (value[0] == "list_int" || value[0] == "size_t");
    if (!skippable) Bad("attrs", StrCat("unknown attribute '", key, "'"));
  }

  const json& shapes = AttrValues(attrs, "shape", "list_shape", num_entries, true);
  for (size_t e = 0; e < num_entries; ++e) {
    std::string where = StrCat("attrs.shape of entry ", e);
    const json& dims = ArrayOf(shapes[e], where);
    if (dims.size() > kMaxDims) Bad(where, StrCat("has ", dims.size(), " dimensions"));
    std::vector<int64_t> shape;
    for (const json& d : dims) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) {
        Bad(where, StrCat("dimension ", Show(d), " is not a non-negative integer"));
      }
      shape.push_back(d.get<int64_t>());
    }
    graph.shapes.push_back(std::move(shape));
  }

  const json& dtypes = AttrValues(attrs, "dltype", "list_str", num_entries, true);
  for (size_t e = 0; e < num_entries; ++e) {
    std::string where = StrCat("attrs.dltype of entry ", e);
    std::string text = String(dtypes[e], where);
    try {
      graph.dtypes.push_back(ParseDType(text));
    } catch (const Error& error) {
      Bad(where, error.what());
    }
  }

  const json& sids = AttrValues(attrs, "storage_id", "list_int", num_entries, true);
  for (size_t e = 0; e < num_entries; ++e) {
    uint32_t sid = Id(sids[e], StrCat("attrs.storage_id of entry ", e));
    if (sid >= num_entries) {
      Bad(StrCat("attrs.storage_id of entry ", e),
          StrCat("storage id ", sid, " is not below the number of entries (", num_entries, ")"));
    }
    graph.storage_ids.push_back(sid);
  }

  const json& devices = AttrValues(attrs, "device_index", "list_int", num_entries, false);
  if (!devices.is_null()) {
    for (size_t e = 0; e < num_entries; ++e) {
      uint32_t device = Id(devices[e], StrCat("attrs.device_index of entry ", e));
      graph.device_types.push_back(static_cast<int32_t>(device));
    }
  }

  const json& scopes = AttrValues(attrs, "storage_scope", "list_str", num_entries, false);
  if (!scopes.is_null()) {
    for (size_t e = 0; e < num_entries; ++e) {
      std::string scope = String(scopes[e], StrCat("attrs.storage_scope of entry ", e));
      if (!scope.empty() && scope != "global") {
        Bad(StrCat("attrs.storage_scope of entry ", e),
            StrCat("storage scope '", scope, "' is not supported on the CPU"));
      }
    }
  }
}

// The ids of list_int attribute `name` in groups of `group` (each named `what` in messages, as
// `fields` says its values); none when the attribute is absent.
std::vector<std::vector<uint32_t>> IdGroups(const json& attrs, const char* name, size_t group, const char* what,
                                            const char* fields) {
  std::vector<std::vector<uint32_t>> groups;
  auto it = attrs.find(name);
  if (it == attrs.end()) return groups;
  std::string where = StrCat("attrs.", name);
  const json& pair = ArrayOf(*it, where);
  if (pair.size() != 2 || pair[0] != "list_int") Bad(where, "expected [\"list_int\", [values]]");
  const json& values = ArrayOf(pair[1], where);
  if (values.size() % group != 0) Bad(where, StrCat("has ", values.size(), " values, not ", fields, " ", what, "s"));
  for (size_t i = 0; i < values.size(); i += group) {
    std::string item = StrCat(where, " ", what, " ", i / group);
    groups.emplace_back();
    for (size_t k = 0; k < group; ++k) groups.back().push_back(Id(values[i + k], item));
  }
  return groups;
}

void ParseOutputTrims(const json& attrs, Graph& graph) {
  for (const auto& t : IdGroups(attrs, kOutputTrimAttr, 3, "triple", "(output, count output, axis)")) {
    graph.output_trims.push_back({t[0], t[1], t[2]});
  }
  for (const auto& p : IdGroups(attrs, kOutputShapesAttr, 2, "pair", "(output, shape output)")) {
    graph.output_trims.push_back({p[0], p[1], 0, true});
  }
}

// Whether `attrs` has the attributes `first` and `second`, which come together: Bad when only one
// is there.
bool HasPair(const json& attrs, const char* first, const char* second) {
  bool has_first = attrs.contains(first), has_second = attrs.contains(second);
  if (has_first != has_second) {
    Bad("attrs", StrCat("has ", has_first ? first : second, " without ", has_first ? second : first));
  }
  return has_first;
}

// The batch dimension's name and range and the batched entries: both attributes or neither; a
// batched entry has an axis 0 that holds `max` samples of at least one row each.
void ParseBatch(const json& attrs, Graph& graph) {
  if (!HasPair(attrs, kBatchDimAttr, kBatchEntriesAttr)) return;
  auto dim = attrs.find(kBatchDimAttr);
  std::string where = StrCat("attrs.", kBatchDimAttr);
  const json& pair = ArrayOf(*dim, where);
  if (pair.size() != 2 || pair[0] != "list_str") Bad(where, "expected [\"list_str\", [name, min, max]]");
  const json& values = ArrayOf(pair[1], where);
  if (values.size() != 3) Bad(where, StrCat("has ", values.size(), " values, not [name, min, max]"));
  BatchDim batch;
  batch.name = String(values[0], where + " name");
  if (batch.name.empty()) Bad(where, "the dimension has no name");
  for (int i = 1; i <= 2; ++i) {
    std::string text = String(values[i], where);
    int64_t& bound = i == 1 ? batch.min : batch.max;
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || v < 1 || v > kMaxBatch) {
      Bad(where, StrCat(i == 1 ? "min" : "max", " '", text, "' is not an integer from 1 to ", kMaxBatch));
    }
    bound = v;
  }
  if (batch.min > batch.max) Bad(where, StrCat("min ", batch.min, " is above max ", batch.max));
  const json& flags = AttrValues(attrs, kBatchEntriesAttr, "list_int", graph.num_entries(), true);
  for (size_t e = 0; e < graph.num_entries(); ++e) {
    std::string item = StrCat("attrs.", kBatchEntriesAttr, " of entry ", e);
    uint32_t flag = Id(flags[e], item);
    if (flag > 1) Bad(item, StrCat("is ", flag, ", not 0 or 1"));
    const std::vector<int64_t>& shape = graph.shapes[e];
    if (flag == 1 && (shape.empty() || shape[0] == 0 || shape[0] % batch.max != 0)) {
      Bad(item, StrCat("marks a shape ", ShapeToString(shape),
                       " as batched, but its axis 0 does not hold ", batch.max, " samples of at least a row"));
    }
    graph.batched_entries.push_back(flag == 1);
  }
  graph.batch = batch;
}

// A whole number from `text` in [lo, hi]; Bad naming `what` otherwise.
int64_t Bounded(const std::string& text, int64_t lo, int64_t hi, const std::string& where, const std::string& what) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < lo || v > hi) {
    Bad(where, StrCat(what, " '", text, "' is not an integer from ", lo, " to ", hi));
  }
  return v;
}

// The shape dimensions and each entry's extents: both attributes or neither; an entry's extents
// are one per axis and give its written shape at the dimensions' max (one sample's axis 0 for a
// batched entry, its written shape then holding the batch's max).
// Each sized entry a flat output of no elements of a node that takes its shape entry, an int64
// vector, as an input; neither holds the batch nor has extents.
void ParseSizedEntries(const json& attrs, Graph& graph) {
  auto it = attrs.find(kSizedEntriesAttr);
  if (it == attrs.end()) return;
  std::string where = StrCat("attrs.", kSizedEntriesAttr);
  const json& pair = ArrayOf(*it, where);
  if (pair.size() != 2 || pair[0] != "list_str") Bad(where, "expected [\"list_str\", [\"entry,shape entry\", ...]]");
  for (const json& item : ArrayOf(pair[1], where)) {
    std::string text = item.is_string() ? item.get<std::string>() : "";
    size_t comma = text.find(',');
    SizedEntry sized;
    char* end = nullptr;
    unsigned long long entry = comma == std::string::npos ? ~0ull : std::strtoull(text.c_str(), &end, 10);
    bool ok = comma != std::string::npos && end == text.c_str() + comma && comma > 0;
    unsigned long long shape = ok ? std::strtoull(text.c_str() + comma + 1, &end, 10) : ~0ull;
    ok = ok && end == text.c_str() + text.size() && text.size() > comma + 1 && text[0] != '-' && text[comma + 1] != '-';
    if (!ok || entry >= graph.num_entries() || shape >= graph.num_entries()) {
      Bad(where, StrCat("'", item.dump(), "' is not \"entry,shape entry\" of two entries below ", graph.num_entries()));
    }
    sized.entry = static_cast<uint32_t>(entry);
    sized.shape_entry = static_cast<uint32_t>(shape);
    const std::vector<int64_t>& extents = graph.shapes[sized.shape_entry];
    if (graph.dtypes[sized.shape_entry] != DLDataType{kDLInt, 64, 1} || extents.size() != 1 || extents[0] > 32) {
      Bad(where, StrCat("shape entry ", sized.shape_entry, " is not an int64 vector of at most 32 extents"));
    }
    if (graph.shapes[sized.entry] != std::vector<int64_t>{0}) {
      Bad(where, StrCat("entry ", sized.entry, " is not a flat tensor of no elements"));
    }
    // The node computing the entry takes the shape entry.
    uint32_t node = 0;
    while (graph.node_row_ptr[node + 1] <= sized.entry) ++node;
    const std::vector<GraphEntryRef>& inputs = graph.nodes[node].inputs;
    bool takes = std::any_of(inputs.begin(), inputs.end(),
                             [&](const GraphEntryRef& in) { return graph.EntryId(in) == sized.shape_entry; });
    if (graph.nodes[node].is_input() || !takes) {
      Bad(where, StrCat("entry ", sized.entry, " is not computed by a node that takes entry ", sized.shape_entry));
    }
    bool fixed = !(graph.has_batch() && graph.batched_entries[sized.entry]) &&
                 (!graph.has_dims() || graph.entry_extents[sized.entry].empty());
    if (!fixed) Bad(where, StrCat("entry ", sized.entry, " has a batch or shape dimensions as well"));
    // A view or copy of it would be sized at load, before the entry has a size.
    for (const GraphNode& reader : graph.nodes) {
      bool copies = reader.func_name == "__nop" || reader.func_name == "__copy";
      for (const GraphEntryRef& in : reader.inputs) {
        if (copies && graph.EntryId(in) == sized.entry) {
          Bad(where, StrCat("entry ", sized.entry, " is read by '", reader.name, "' (", reader.func_name,
                            "), which cannot follow a size decided as the graph runs"));
        }
      }
    }
    graph.sized_entries.push_back(sized);
  }
}

void ParseDims(const json& attrs, Graph& graph) {
  if (!HasPair(attrs, kDimsAttr, kEntryExtentsAttr)) return;
  auto dims = attrs.find(kDimsAttr);
  std::string where = StrCat("attrs.", kDimsAttr);
  const json& pair = ArrayOf(*dims, where);
  if (pair.size() != 2 || pair[0] != "list_str") Bad(where, "expected [\"list_str\", [name, min, max, step, ...]]");
  const json& values = ArrayOf(pair[1], where);
  if (values.empty() || values.size() % 4 != 0 || values.size() > 4 * 8) {
    Bad(where, StrCat("has ", values.size(), " values, not 1 to 8 groups of [name, min, max, step]"));
  }
  std::set<std::string> names;
  for (size_t i = 0; i < values.size(); i += 4) {
    ShapeDim dim;
    dim.name = String(values[i], where + " name");
    if (dim.name.empty() || !names.insert(dim.name).second) {
      Bad(where, StrCat("dimension name '", dim.name, "' is empty or repeated"));
    }
    std::string item = StrCat(where, " of '", dim.name, "'");
    dim.min = Bounded(String(values[i + 1], item), 1, kMaxShapeDim, item, "min");
    dim.max = Bounded(String(values[i + 2], item), dim.min, kMaxShapeDim, item, "max");
    dim.step = Bounded(String(values[i + 3], item), 1, kMaxShapeDim, item, "step");
    if ((dim.max - dim.min) % dim.step != 0) Bad(item, StrCat("max ", dim.max, " is not min plus whole steps"));
    graph.dims.push_back(dim);
  }
  std::vector<int64_t> largest;
  for (const ShapeDim& dim : graph.dims) largest.push_back(dim.max);
  const json& texts = AttrValues(attrs, kEntryExtentsAttr, "list_str", graph.num_entries(), true);
  for (size_t e = 0; e < graph.num_entries(); ++e) {
    std::string item = StrCat("attrs.", kEntryExtentsAttr, " of entry ", e);
    std::string text = String(texts[e], item);
    std::vector<DimPolynomial> entry;
    if (!text.empty()) {
      for (size_t begin = 0; begin <= text.size();) {
        size_t comma = std::min(text.find(',', begin), text.size());
        entry.push_back(DimPolynomial::Parse(std::string_view(text).substr(begin, comma - begin),
                                             static_cast<int>(graph.dims.size()), item));
        begin = comma + 1;
      }
      std::vector<int64_t> shape = graph.shapes[e];
      if (graph.has_batch() && graph.batched_entries[e]) shape[0] /= graph.batch.max;
      std::vector<int64_t> at_max;
      try {
        at_max = EvaluateShape(entry, largest);
      } catch (const Error& error) {
        Bad(item, error.what());
      }
      if (at_max != shape) {
        Bad(item, StrCat("gives ", ShapeToString(at_max), " at every dimension's max, but the entry's shape is ",
                         ShapeToString(graph.shapes[e])));
      }
    }
    graph.entry_extents.push_back(std::move(entry));
  }
  auto fronts = attrs.find(kFrontParamsAttr);
  if (fronts == attrs.end()) return;
  std::string item = StrCat("attrs.", kFrontParamsAttr);
  const json& ids = ArrayOf(*fronts, item);
  if (ids.size() != 2 || ids[0] != "list_int") Bad(item, "expected [\"list_int\", [entry, ...]]");
  std::set<uint32_t> inputs;
  for (uint32_t node : graph.arg_nodes) {
    if (node < graph.nodes.size()) inputs.insert(graph.node_row_ptr[node]);
  }
  for (const json& id : ArrayOf(ids[1], item)) {
    uint32_t e = Id(id, item);
    if (e >= graph.num_entries() || inputs.count(e) == 0 || graph.entry_extents[e].empty()) {
      Bad(item, StrCat("entry ", e, " is not an input whose extents vary"));
    }
    graph.front_params.push_back(e);
  }
}

// Each trimmed output is a model output with the axis; each count output an int64 scalar after
// every model output.
// Each trimmed output is a model output with the axis; each count output an int64 scalar, each
// shape output an int64 vector, after every model output.
void CheckOutputTrims(const Graph& graph) {
  size_t num_model_outputs = graph.num_model_outputs();
  size_t numbers[2] = {0, 0};  // per attribute
  for (const OutputTrim& trim : graph.output_trims) {
    std::string where = trim.whole_shape ? StrCat("attrs.", kOutputShapesAttr, " pair ", numbers[1]++)
                                         : StrCat("attrs.", kOutputTrimAttr, " triple ", numbers[0]++);
    if (trim.output >= num_model_outputs || trim.count_output >= graph.heads.size() ||
        trim.count_output < num_model_outputs) {
      Bad(where, StrCat("pairs output ", trim.output, " with ", trim.whole_shape ? "shape" : "count", " output ",
                        trim.count_output, ": of the ", graph.heads.size(), " outputs the first ", num_model_outputs,
                        " are the model's and the rest their counts and shapes"));
    }
    uint32_t output = graph.EntryId(graph.heads[trim.output]);
    const std::vector<int64_t>& shape = graph.shapes[output];
    uint32_t count = graph.EntryId(graph.heads[trim.count_output]);
    if (trim.whole_shape) {
      const std::vector<int64_t>& rank = graph.shapes[count];
      if (graph.dtypes[count] != DLDataType{kDLInt, 64, 1} || rank.size() != 1 || rank[0] > 32) {
        Bad(where, StrCat("shape output ", trim.count_output, " is not an int64 vector of at most 32 extents"));
      }
      bool fixed = !(graph.has_batch() && graph.batched_entries[output]) &&
                   (!graph.has_dims() || graph.entry_extents[output].empty());
      if (!fixed) Bad(where, StrCat("output ", trim.output, " has a batch or shape dimensions as well"));
      continue;
    }
    if (trim.axis >= shape.size()) {
      Bad(where, StrCat("axis ", trim.axis, " is not an axis of output ", trim.output, " (", shape.size(), " dims)"));
    }
    if (graph.dtypes[count] != DLDataType{kDLInt, 64, 1} || !graph.shapes[count].empty()) {
      Bad(where, StrCat("count output ", trim.count_output, " is not an int64 scalar"));
    }
  }
}

void CheckGraph(const Graph& graph) {
  size_t num_nodes = graph.nodes.size();
  auto outputs_of = [&](uint32_t n) { return graph.node_row_ptr[n + 1] - graph.node_row_ptr[n]; };
  for (size_t n = 0; n < num_nodes; ++n) {
    const GraphNode& node = graph.nodes[n];
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const GraphEntryRef& in = node.inputs[i];
      std::string where = StrCat("node ", n, " '", node.name, "' input ", i);
      if (in.node_id >= num_nodes) {
        Bad(where, StrCat("refers to node ", in.node_id, ", but the graph has ", num_nodes, " nodes"));
      }
      if (in.node_id >= n) {
        Bad(where, StrCat("refers to node ", in.node_id,
                          ", which does not come before it (a cycle, or nodes out of order)"));
      }
      if (in.index >= outputs_of(in.node_id)) {
        Bad(where, StrCat("refers to output ", in.index, " of node ", in.node_id, ", which has ",
                          outputs_of(in.node_id), " outputs"));
      }
    }
  }
  for (size_t n = 0; n < num_nodes; ++n) {
    const GraphNode& node = graph.nodes[n];
    for (size_t i = 0; i < node.run_if.size(); ++i) {
      const GraphEntryRef& c = node.run_if[i].condition;
      std::string where = StrCat("node ", n, " '", node.name, "' attribute '", kRunIfAttr, "' condition ", i);
      if (c.node_id >= n || c.index >= outputs_of(c.node_id)) {
        Bad(where, StrCat("refers to output ", c.index, " of node ", c.node_id,
                          ", which is not an output of an earlier node"));
      }
      uint32_t entry = graph.EntryId(c);
      if (graph.dtypes[entry] != DLDataType{kDLUInt, 1, 1} || !graph.shapes[entry].empty()) {
        Bad(where, StrCat("refers to a ", DTypeToString(graph.dtypes[entry]), " tensor of shape ",
                          ShapeToString(graph.shapes[entry]),
                          "; a condition is a bool scalar"));
      }
    }
  }
  std::set<uint32_t> args;
  std::set<std::string> arg_names;
  for (uint32_t id : graph.arg_nodes) {
    if (id >= num_nodes) Bad("arg_nodes", StrCat("node ", id, " is out of range"));
    if (!graph.nodes[id].is_input()) {
      Bad("arg_nodes", StrCat("node ", id, " '", graph.nodes[id].name, "' is not an input (op 'null')"));
    }
    if (!args.insert(id).second) Bad("arg_nodes", StrCat("node ", id, " is listed twice"));
    if (!arg_names.insert(graph.nodes[id].name).second) {
      Bad("arg_nodes", StrCat("two inputs are named '", graph.nodes[id].name, "'"));
    }
  }
  for (size_t n = 0; n < num_nodes; ++n) {
    if (graph.nodes[n].is_input() && args.count(static_cast<uint32_t>(n)) == 0) {
      Bad(StrCat("node ", n, " '", graph.nodes[n].name, "'"), "is an input but not in arg_nodes");
    }
  }
  for (size_t h = 0; h < graph.heads.size(); ++h) {
    const GraphEntryRef& head = graph.heads[h];
    if (head.node_id >= num_nodes || head.index >= outputs_of(head.node_id)) {
      Bad(StrCat("heads[", h, "]"), StrCat("refers to output ", head.index, " of node ",
                                           head.node_id, ", which does not exist"));
    }
  }
}

}  // namespace

Graph ParseGraphJson(std::string_view text) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    Fail("graph JSON: not valid JSON: ", e.what());
  }
  if (!root.is_object()) Bad("top level", StrCat("expected an object, got ", KindOf(root)));
  for (const auto& [key, value] : root.items()) {
    static const std::set<std::string> kKnown = {"nodes", "arg_nodes", "heads", "attrs",
                                                 "node_row_ptr", "metadata"};
    if (kKnown.count(key) == 0) Bad("top level", StrCat("unknown field '", key, "'"));
  }

  Graph graph;
  const json& nodes = ArrayOf(Field(root, "nodes", "top level"), "nodes");
  for (size_t n = 0; n < nodes.size(); ++n) graph.nodes.push_back(Node(nodes[n], n));

  const json& arg_nodes = ArrayOf(Field(root, "arg_nodes", "top level"), "arg_nodes");
  for (size_t i = 0; i < arg_nodes.size(); ++i) {
    graph.arg_nodes.push_back(Id(arg_nodes[i], StrCat("arg_nodes[", i, "]")));
  }
  const json& heads = ArrayOf(Field(root, "heads", "top level"), "heads");
  for (size_t i = 0; i < heads.size(); ++i) graph.heads.push_back(Entry(heads[i], StrCat("heads[", i, "]")));

  const json& row_ptr = ArrayOf(Field(root, "node_row_ptr", "top level"), "node_row_ptr");
  if (row_ptr.size() != graph.nodes.size() + 1) {
    Bad("node_row_ptr", StrCat("has ", row_ptr.size(), " values for ", graph.nodes.size(),
                               " nodes (expected ", graph.nodes.size() + 1, ")"));
  }
  for (size_t i = 0; i < row_ptr.size(); ++i) {
    graph.node_row_ptr.push_back(Id(row_ptr[i], StrCat("node_row_ptr[", i, "]")));
  }
  if (graph.node_row_ptr[0] != 0) Bad("node_row_ptr", "does not start at 0");
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    int64_t count = int64_t{graph.node_row_ptr[n + 1]} - graph.node_row_ptr[n];
    if (count != graph.nodes[n].num_outputs) {
      Bad(StrCat("node_row_ptr[", n + 1, "]"),
          StrCat("gives node ", n, " '", graph.nodes[n].name, "' ", count, " outputs, but it has ",
                 graph.nodes[n].num_outputs));
    }
  }
  ParseAttrs(Field(root, "attrs", "top level"), graph);
  ParseOutputTrims(Field(root, "attrs", "top level"), graph);
  ParseBatch(Field(root, "attrs", "top level"), graph);
  ParseDims(Field(root, "attrs", "top level"), graph);
  CheckGraph(graph);
  CheckOutputTrims(graph);
  ParseSizedEntries(Field(root, "attrs", "top level"), graph);
  return graph;
}

size_t Graph::num_model_outputs() const {
  std::set<uint32_t> counts;
  for (const OutputTrim& trim : output_trims) counts.insert(trim.count_output);
  return heads.size() - std::min(heads.size(), counts.size());
}

std::string WriteGraphJson(const Graph& graph) {
  // dmlc's writer order: nodes, arg_nodes, heads, attrs, node_row_ptr.
  json::array_t nodes;
  auto entry = [](const GraphEntryRef& e) { return json::array({e.node_id, e.index, e.version}); };
  for (const GraphNode& node : graph.nodes) {
    json object = json::object();
    object["op"] = node.op;
    object["name"] = node.name;
    json::array_t inputs;
    for (const GraphEntryRef& e : node.inputs) inputs.push_back(entry(e));
    object["inputs"] = inputs;
    if (!node.is_input()) {
      std::map<std::string, std::string> attrs = node.attrs;
      attrs["func_name"] = node.func_name;
      attrs["num_inputs"] = std::to_string(node.inputs.size());
      attrs["num_outputs"] = std::to_string(node.num_outputs);
      attrs["flatten_data"] = node.flatten_data ? "1" : "0";
      attrs.erase(kRunIfAttr);
      if (!node.run_if.empty()) {
        json::array_t conditions;
        for (const RunCondition& c : node.run_if) {
          conditions.push_back(json::array({c.condition.node_id, c.condition.index, c.taken ? 1 : 0}));
        }
        attrs[kRunIfAttr] = json(conditions).dump();
      }
      object["attrs"] = attrs;
    }
    nodes.push_back(std::move(object));
  }
  json::array_t heads, shapes, dtypes;
  for (const GraphEntryRef& e : graph.heads) heads.push_back(entry(e));
  for (const auto& shape : graph.shapes) shapes.push_back(shape);
  for (DLDataType dtype : graph.dtypes) dtypes.push_back(DTypeToString(dtype));
  json attrs = json::object();
  attrs["shape"] = json::array({"list_shape", shapes});
  attrs["dltype"] = json::array({"list_str", dtypes});
  attrs["storage_id"] = json::array({"list_int", graph.storage_ids});
  if (!graph.device_types.empty()) attrs["device_index"] = json::array({"list_int", graph.device_types});
  json::array_t trims, output_shapes;
  for (const OutputTrim& t : graph.output_trims) {
    if (t.whole_shape) output_shapes.insert(output_shapes.end(), {t.output, t.count_output});
    else trims.insert(trims.end(), {t.output, t.count_output, t.axis});
  }
  if (!trims.empty()) attrs[kOutputTrimAttr] = json::array({"list_int", trims});
  if (!output_shapes.empty()) attrs[kOutputShapesAttr] = json::array({"list_int", output_shapes});
  if (!graph.sized_entries.empty()) {
    json::array_t pairs;
    for (const SizedEntry& s : graph.sized_entries) pairs.push_back(StrCat(s.entry, ",", s.shape_entry));
    attrs[kSizedEntriesAttr] = json::array({"list_str", pairs});
  }
  if (graph.has_batch()) {
    attrs[kBatchDimAttr] = json::array(
        {"list_str", {graph.batch.name, std::to_string(graph.batch.min), std::to_string(graph.batch.max)}});
    json::array_t flags;
    for (bool batched : graph.batched_entries) flags.push_back(batched ? 1 : 0);
    attrs[kBatchEntriesAttr] = json::array({"list_int", flags});
  }
  if (graph.has_dims()) {
    json::array_t dims, extents;
    for (const ShapeDim& d : graph.dims) {
      dims.insert(dims.end(), {d.name, std::to_string(d.min), std::to_string(d.max), std::to_string(d.step)});
    }
    for (const std::vector<DimPolynomial>& entry : graph.entry_extents) {
      std::string text;
      for (const DimPolynomial& extent : entry) text += (text.empty() ? "" : ",") + extent.ToString();
      extents.push_back(text);
    }
    attrs[kDimsAttr] = json::array({"list_str", dims});
    attrs[kEntryExtentsAttr] = json::array({"list_str", extents});
    if (!graph.front_params.empty()) attrs[kFrontParamsAttr] = json::array({"list_int", graph.front_params});
  }

  // nlohmann orders object keys alphabetically; write the top level by hand to keep TVM's order.
  return StrCat("{\n  \"nodes\": ", json(nodes).dump(), ",\n  \"arg_nodes\": ",
                json(graph.arg_nodes).dump(), ",\n  \"heads\": ", json(heads).dump(),
                ",\n  \"attrs\": ", attrs.dump(), ",\n  \"node_row_ptr\": ",
                json(graph.node_row_ptr).dump(), "\n}");
}

}  // namespace kiln::runtime
