// Loading, checking and walking an ONNX model; tensors and attributes.
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include "frontend/batch_samples.h"
#include "frontend/onnx/converter.h"
#include "frontend/onnx/input_shapes.h"
#include "frontend/onnx/libonnx_check.h"
#include "frontend/onnx/onnx_import.h"
#include "frontend/onnx/qdq_groups.h"
#include "ir/evaluate.h"
#include "ir/provenance.h"
#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/graph_json.h"
#include "runtime/mapped_file.h"
#include "runtime/params.h"
#include "runtime/text.h"

namespace kiln::frontend {

using namespace ir;
using runtime::StrCat;

size_t CheckedDataBytes(const onnx::TensorProto& tensor);  // with TensorToNDArray below

namespace {

// The newest opset kiln imports (the oldest: each converter's), and the newest libonnx 1.12 knows:
// models above it are checked by kiln alone (docs/architecture.md, "ONNX opsets").
constexpr int64_t kMaxOpset = 21;
constexpr int64_t kLibonnxMaxOpset = 17;
// The nodes an import converts at most, each unrolled repeat of a loop body counted.
constexpr int64_t kMaxConvertedNodes = int64_t{1} << 20;

std::string NodeLabel(const onnx::NodeProto& node, int index) {
  std::string name = node.name().empty() ? StrCat("#", index) : "'" + node.name() + "'";
  return StrCat("node ", name, " (", node.op_type(), ")");
}

runtime::Error UnknownInput(const onnx::NodeProto& node, int index, const std::string& name) {
  return runtime::Error("is not a graph input, an initializer or the output of an earlier node",
                        {"", NodeLabel(node, index), "input '" + name + "'"});
}

// Static dims of a value, with `given` (from --input-shapes) taking precedence. Returns false
// when a dimension is symbolic or unknown.
bool StaticShape(const onnx::ValueInfoProto& value, std::vector<int64_t>& shape, std::string& symbolic) {
  const auto& type = value.type().tensor_type();
  if (!type.has_shape()) {
    symbolic = "unknown rank";
    return false;
  }
  for (const auto& dim : type.shape().dim()) {
    if (dim.has_dim_value() && dim.dim_value() >= 0) {
      shape.push_back(dim.dim_value());
    } else {
      symbolic = dim.has_dim_param() ? "'" + dim.dim_param() + "'" : "?";
      return false;
    }
  }
  return true;
}

// The operator sets a model imports: domain ("" for ONNX's own, also named "ai.onnx") -> version.
using OpsetImports = std::map<std::string, int64_t>;

OpsetImports ImportedOpsets(const onnx::ModelProto& model) {
  OpsetImports opsets;
  for (const auto& opset : model.opset_import()) {
    opsets.emplace(opset.domain() == "ai.onnx" ? "" : opset.domain(), opset.version());
  }
  return opsets;
}

// Where an external-data tensor says its bytes are ("location" entry), for the error message.
std::string ExternalLocation(const onnx::TensorProto& tensor) {
  for (const auto& entry : tensor.external_data()) {
    if (entry.key() == "location") return "'" + runtime::ValidUtf8(entry.value()) + "'";
  }
  return "no location";
}

// A non-negative integer entry of external_data ("offset", "length").
int64_t ExternalNumber(const std::string& key, const std::string& text) {
  int64_t value = 0;
  runtime::Check(!text.empty() && text.size() < 19 && text.find_first_not_of("0123456789") == std::string::npos,
                 "its external data ", key, " '", runtime::ValidUtf8(text), "' is not a non-negative integer");
  for (char c : text) value = value * 10 + (c - '0');
  return value;
}

// Reads the bytes of a tensor kept in an external file into raw_data. The file must lie inside
// the model's folder: a relative location without "..", not leading out through a symbolic link.
void LoadExternalData(onnx::TensorProto& tensor, const std::filesystem::path& folder) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& entry : tensor.external_data()) {
    if (entry.key() == "location") location = entry.value();
    if (entry.key() == "offset") offset = ExternalNumber("offset", entry.value());
    if (entry.key() == "length") length = ExternalNumber("length", entry.value());
  }
  std::string named = "its external file " + ExternalLocation(tensor);
  runtime::Check(!location.empty(), "keeps its data in an external file (no location)");
  std::filesystem::path relative(location);
  runtime::Check(!relative.is_absolute(), named, " is an absolute path; kiln reads external data only from the ",
                 "model's folder");
  for (const auto& part : relative) runtime::Check(part != "..", named, " leaves the model's folder");
  std::error_code error;
  std::filesystem::path base = std::filesystem::canonical(folder, error);
  std::filesystem::path file = error ? base : std::filesystem::canonical(folder / relative, error);
  runtime::Check(!error, named, " cannot be opened: ", error.message());
  auto mismatch = std::mismatch(base.begin(), base.end(), file.begin(), file.end());
  runtime::Check(mismatch.first == base.end(), named, " leads out of the model's folder (through a symbolic link)");
  runtime::Check(std::filesystem::is_regular_file(file, error), named, " is not a regular file");
  std::vector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  auto bytes = static_cast<int64_t>(runtime::CheckedTensorBytes(shape, OnnxDType(tensor.data_type()), "the tensor"));
  if (length < 0) length = bytes;
  runtime::Check(length == bytes, named, ": its length ", length, " is not the ", bytes, " bytes of a ",
                 runtime::ShapeToString(shape), " tensor");
  auto size = static_cast<int64_t>(std::filesystem::file_size(file, error));
  runtime::Check(!error && offset <= size && bytes <= size - offset, named, " holds ", size, " bytes; the tensor needs ",
                 bytes, " from offset ", offset);
  std::string data(static_cast<size_t>(bytes), '\0');
  std::ifstream in(file, std::ios::binary);
  in.seekg(offset);
  in.read(data.data(), bytes);
  runtime::Check(in.good() || (in.eof() && in.gcount() == bytes), named, " cannot be read");
  tensor.set_raw_data(std::move(data));
  tensor.clear_external_data();
  tensor.set_data_location(onnx::TensorProto::DEFAULT);
}

// A tensor with external data: loaded from the model's folder, or refused when the model has
// none (it came as bytes).
void ResolveExternalData(onnx::TensorProto& tensor, const std::optional<std::filesystem::path>& folder,
                         const runtime::ErrorLocation& where) {
  if (tensor.data_location() != onnx::TensorProto::EXTERNAL && tensor.external_data_size() == 0) return;
  try {
    if (!folder) {
      runtime::Fail("keeps its data in an external file (", ExternalLocation(tensor),
                    "); a model given as bytes has no folder to read it from (import the model from its file, or "
                    "save it with onnx.save_model(..., save_as_external_data=False))");
    }
    LoadExternalData(tensor, *folder);
  } catch (runtime::Error& e) {
    e.AddLocation(where);
    throw;
  }
}

void ResolveExternalData(onnx::GraphProto& graph, const std::optional<std::filesystem::path>& folder,
                         const std::string& scope);

void ResolveExternalData(onnx::NodeProto& node, int index, const std::optional<std::filesystem::path>& folder,
                         const std::string& scope) {
  std::string label = scope + NodeLabel(node, index);
  for (auto& attr : *node.mutable_attribute()) {
    runtime::ErrorLocation where{"", label, "attribute '" + runtime::ValidUtf8(attr.name()) + "'"};
    if (attr.has_t()) ResolveExternalData(*attr.mutable_t(), folder, where);
    for (auto& t : *attr.mutable_tensors()) ResolveExternalData(t, folder, where);
    if (attr.has_sparse_tensor()) {
      ResolveExternalData(*attr.mutable_sparse_tensor()->mutable_values(), folder, where);
      ResolveExternalData(*attr.mutable_sparse_tensor()->mutable_indices(), folder, where);
    }
    for (auto& sparse : *attr.mutable_sparse_tensors()) {
      ResolveExternalData(*sparse.mutable_values(), folder, where);
      ResolveExternalData(*sparse.mutable_indices(), folder, where);
    }
    std::string inner = label + ", attribute '" + runtime::ValidUtf8(attr.name()) + "', ";
    if (attr.has_g()) ResolveExternalData(*attr.mutable_g(), folder, inner);
    for (auto& g : *attr.mutable_graphs()) ResolveExternalData(g, folder, inner);
  }
}

void ResolveExternalData(onnx::GraphProto& graph, const std::optional<std::filesystem::path>& folder,
                         const std::string& scope) {
  for (auto& init : *graph.mutable_initializer()) {
    ResolveExternalData(init, folder, {"", scope + "initializer '" + runtime::ValidUtf8(init.name()) + "'", ""});
  }
  for (auto& sparse : *graph.mutable_sparse_initializer()) {
    runtime::ErrorLocation where{"", scope + "sparse initializer '" + runtime::ValidUtf8(sparse.values().name()) + "'", ""};
    ResolveExternalData(*sparse.mutable_values(), folder, where);
    ResolveExternalData(*sparse.mutable_indices(), folder, where);
  }
  for (int i = 0; i < graph.node_size(); ++i) ResolveExternalData(*graph.mutable_node(i), i, folder, scope);
}

// Tensors with external data are read before anything else sees the model (ONNX's checker would
// look for their files itself, relative to no folder for a model from bytes), from the model's
// folder only: "/etc/shadow", "../../x" and symbolic links out of it are refused.
void ResolveExternalData(onnx::ModelProto& model, const std::optional<std::filesystem::path>& folder) {
  ResolveExternalData(*model.mutable_graph(), folder, "");
  for (auto& function : *model.mutable_functions()) {
    for (int i = 0; i < function.node_size(); ++i) {
      ResolveExternalData(*function.mutable_node(i), i, folder,
                          "function '" + runtime::ValidUtf8(function.name()) + "', ");
    }
  }
}

// The graphs a node holds in its attributes (If's branches, Loop's and Scan's bodies).
std::vector<const onnx::GraphProto*> Subgraphs(const onnx::NodeProto& node) {
  std::vector<const onnx::GraphProto*> graphs;
  for (const auto& attr : node.attribute()) {
    if (attr.has_g()) graphs.push_back(&attr.g());
    for (const auto& g : attr.graphs()) graphs.push_back(&g);
  }
  return graphs;
}

// Why kiln does not import a node at the model's opsets: "" when it does.
std::string UnsupportedReason(const onnx::NodeProto& node, const OpsetImports& opsets) {
  OpKey key = KeyOf(node);
  std::string domain = "domain '" + runtime::ValidUtf8(key.domain) + "'";
  if (key.domain == "com.microsoft.nchwc") {
    return ": ONNX Runtime's NCHWc-layout ops (" + domain + ") are for its own CPU kernels and kiln does not import "
           "them; save ONNX Runtime's optimized model at ORT_ENABLE_EXTENDED, below the level that writes them";
  }
  if (key == OpKey{kMicrosoftDomain, "MatMulNBits"}) {
    return ": ONNX Runtime's MatMulNBits (weights quantized in blocks of 2 to 8 bits) is not supported";
  }
  const ConverterEntry* converter = FindConverter(node);
  if (converter == nullptr) return key.domain.empty() ? "" : " in " + domain;
  auto version = opsets.find(key.domain);
  if (version == opsets.end()) return StrCat(" in ", domain, ", which the model's opset_import does not name");
  if (converter->oldest_opset <= version->second) return "";
  if (!key.domain.empty()) {
    return StrCat(": kiln converts it from version ", converter->oldest_opset, " of ", domain, ", the model imports ",
                  version->second);
  }
  return StrCat(": kiln converts ", node.op_type(), " from opset ", converter->oldest_opset, ", the model uses opset ",
                version->second, " (convert it with onnx.version_converter)");
}

// Every node unsupported at the model's opsets, in the graph and the graphs its nodes hold.
void ListUnsupported(const onnx::GraphProto& graph, const OpsetImports& opsets, const std::string& scope,
                     std::string& unsupported, std::set<std::string>& kinds) {
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    std::string why = UnsupportedReason(node, opsets);
    if (FindConverter(node) == nullptr || !why.empty()) {
      unsupported += StrCat("\n  ", scope, NodeLabel(node, i), why);
      kinds.insert(node.op_type());
    }
    for (const onnx::GraphProto* g : Subgraphs(node)) {
      ListUnsupported(*g, opsets, StrCat(scope, NodeLabel(node, i), ", graph '", runtime::ValidUtf8(g->name()), "': "),
                      unsupported, kinds);
    }
  }
}

// A negative dim in a declared type (Paddle's exporter writes -1) is an unknown dim, as ONNX
// Runtime takes it: forgotten here, so it is inferred (from the inputs' shapes, or for a graph
// input from --input-shapes) and nothing negative reaches libonnx's inference, which indexes
// with dims (GatherND). In the graphs its nodes hold too.
void ForgetNegativeDims(onnx::GraphProto& graph) {
  for (auto* infos : {graph.mutable_input(), graph.mutable_output(), graph.mutable_value_info()}) {
    for (auto& info : *infos) {
      if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) continue;
      for (auto& dim : *info.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
        if (dim.has_dim_value() && dim.dim_value() < 0) dim.clear_dim_value();
      }
    }
  }
  for (auto& node : *graph.mutable_node()) {
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.has_g()) ForgetNegativeDims(*attr.mutable_g());
      for (auto& g : *attr.mutable_graphs()) ForgetNegativeDims(g);
    }
  }
}

// The names of values a graph has made so far, and the scope of the graph around it.
struct NameScope {
  std::set<std::string> names;
  const NameScope* outer = nullptr;
  bool Has(const std::string& name) const { return names.count(name) != 0 || (outer != nullptr && outer->Has(name)); }
};

// The nodes of `graph` (the main graph or one a node holds, which also sees the values of the
// graphs around it, `outer`): inputs that nothing produces, required inputs not given, values
// made twice, and initializer sizes.
void CheckNodes(const onnx::GraphProto& graph, int64_t opset, const NameScope* outer) {
  NameScope known{{}, outer};
  for (const auto& init : graph.initializer()) known.names.insert(init.name());
  for (const auto& input : graph.input()) known.names.insert(input.name());
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    for (const std::string& name : node.input()) {
      if (!name.empty() && !known.Has(name)) throw UnknownInput(node, i, name);
    }
    // An input the op's schema requires must be named: "" means absent, and libonnx's shape
    // inference reads a required input without checking (Shape with input "" crashed it).
    // libonnx's schema at the model's opset, or at the newest it knows (the ops new since have none).
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Schema(node.op_type(), std::min(opset, kLibonnxMaxOpset), node.domain());
    if (schema != nullptr) {
      const auto& formals = schema->inputs();
      for (size_t k = 0; k < formals.size(); ++k) {
        if (formals[k].GetOption() != onnx::OpSchema::Single) continue;  // optional or variadic
        if (static_cast<int>(k) >= node.input_size() || node.input(static_cast<int>(k)).empty()) {
          throw runtime::Error(StrCat("input ", k, " ('", formals[k].GetName(), "') is required but not given"),
                               {"", NodeLabel(node, i), ""});
        }
      }
    }
    for (const onnx::GraphProto* g : Subgraphs(node)) {
      try {
        CheckNodes(*g, opset, &known);
      } catch (runtime::Error& e) {
        e.AddLocation({"", StrCat(NodeLabel(node, i), ", graph '", runtime::ValidUtf8(g->name()), "'"), ""});
        throw;
      }
    }
    // Each value is made once (ONNX's graphs are SSA); libonnx's shape inference crashes on a
    // value made twice, so this is checked before it runs.
    for (const std::string& name : node.output()) {
      if (!name.empty() && (known.Has(name) || !known.names.insert(name).second)) {
        throw runtime::Error("names a value that a graph input, an initializer or an earlier node already makes",
                             {"", NodeLabel(node, i), "output '" + runtime::ValidUtf8(name) + "'"});
      }
    }
  }
  // Initializer sizes before ONNX's checker and shape inference see them: the checker counts
  // elements without overflow checks (to it a [2^40, 2^40] tensor has 0 elements).
  for (const auto& init : graph.initializer()) {
    try {
      CheckedDataBytes(init);
    } catch (runtime::Error& e) {
      e.AddLocation({"", "initializer '" + init.name() + "'", ""});
      throw;
    }
  }
}

// Before anything else looks at the nodes: lists every op unsupported at the model's opset at
// once, then checks the graph inputs' types and each graph's nodes (CheckNodes).
void CheckStructure(const onnx::GraphProto& graph_, const OpsetImports& opsets) {
  std::string unsupported;
  std::set<std::string> kinds;
  ListUnsupported(graph_, opsets, "", unsupported, kinds);
  if (!unsupported.empty()) {
    std::string list;
    for (const std::string& k : kinds) list += (list.empty() ? "" : ", ") + k;
    runtime::Fail("the model uses ", kinds.size(), " unsupported op type", kinds.size() == 1 ? "" : "s", " (", list,
                  "):", unsupported);
  }
  std::set<std::string> initializers;
  for (const auto& init : graph_.initializer()) initializers.insert(init.name());
  for (const auto& input : graph_.input()) {
    // libonnx's shape inference reads the type of every graph input without checking that it has
    // one (Shape of an untyped input crashed it); an initializer listed as an input has its own.
    const onnx::TypeProto& type = input.type();
    bool tensor = type.has_tensor_type() && type.tensor_type().elem_type() != onnx::TensorProto::UNDEFINED;
    if (!tensor && initializers.count(input.name()) == 0) {
      runtime::Fail("graph input '", runtime::ValidUtf8(input.name()), "' ",
                    type.value_case() == onnx::TypeProto::VALUE_NOT_SET ? "has no type"
                    : type.has_tensor_type()                            ? "has no element type"
                                                                        : "is not a tensor",
                    " (kiln imports tensor inputs of a known element type)");
    }
  }
  CheckNodes(graph_, opsets.at(""), nullptr);
}

// Imports a graph: the model's, or one a node holds (a subgraph), whose nodes also see the values
// of the graphs around it (`outer`).
class GraphImporter {
 public:
  GraphImporter(const onnx::GraphProto& graph, const OpsetImports& opsets, const GraphImporter* outer = nullptr)
      : graph_(graph), opsets_(opsets), outer_(outer), converted_(outer == nullptr ? &converted_here_ : outer->converted_) {}

  Expr Import(const std::optional<BatchSpec>& batch = std::nullopt) {
    std::set<std::string> initializers = ImportInitializers();
    std::vector<Expr> params;
    std::string missing_shapes;
    std::set<std::string> input_names;
    for (const auto& input : graph_.input()) {
      if (initializers.count(input.name()) != 0) continue;  // IR < 4: initializers listed as inputs
      std::vector<int64_t> shape;
      std::string symbolic;
      if (!StaticShape(input, shape, symbolic)) {
        missing_shapes +=
            StrCat(missing_shapes.empty() ? "" : ", ", "'", runtime::ValidUtf8(input.name()), "' (dimension ", symbolic, ")");
        continue;
      }
      // The name the graph JSON and the executor know the input by: JSON holds only UTF-8.
      std::string name = runtime::ValidUtf8(input.name());
      runtime::Check(input_names.insert(name).second, "two inputs are named '", name,
                     "' once bytes that are not UTF-8 are written as \\xNN; rename one");
      Expr var = Var(name, Type::Tensor(shape, OnnxDType(input.type().tensor_type().elem_type())));
      values_[input.name()] = var;
      params.push_back(var);
    }
    runtime::Check(missing_shapes.empty(), "the model's inputs ", missing_shapes,
                   " have no static shape; give them with --input-shapes name:[d0,d1,...] "
                   "(Python: from_onnx's shape_dict), or a batch's range with --dims NAME=MIN..MAX (Python: dims)");
    std::vector<Expr> outputs = ConvertNodes();
    runtime::Check(!outputs.empty(), "the model has no outputs");
    Attrs attrs = AppendCounts(outputs);
    if (batch) {
      std::vector<int64_t> batch_inputs;
      for (size_t i = 0; i < params.size(); ++i) {
        if (batch->inputs.count(params[i]->As<VarNode>()->name) != 0) batch_inputs.push_back(static_cast<int64_t>(i));
      }
      attrs.Set(ir::attr::kBatchDim, batch->name);
      attrs.Set(ir::attr::kBatchRange, std::vector<int64_t>{batch->range.min, batch->range.max});
      attrs.Set(ir::attr::kBatchInputs, batch_inputs);
    }
    return Function(params, outputs.size() == 1 ? outputs[0] : Tuple(outputs), attrs);
  }

  // A subgraph with its inputs bound to `inputs`, in order: its outputs.
  std::vector<Expr> ImportSubgraph(const std::vector<Expr>& inputs) {
    runtime::Check(static_cast<size_t>(graph_.input_size()) == inputs.size(), "the graph takes ", graph_.input_size(),
                   " inputs; the op gives it ", inputs.size());
    ImportInitializers();
    for (int i = 0; i < graph_.input_size(); ++i) values_[graph_.input(i).name()] = inputs[i];
    std::vector<Expr> outputs = ConvertNodes();
    for (int i = 0; i < graph_.output_size(); ++i) {
      if (ExtentOf(outputs[i])) {
        runtime::Fail("subgraph output '", graph_.output(i).name(), "' has a shape decided as the graph runs; kiln ",
                      "runs such values only as outputs of the model");
      }
    }
    return outputs;
  }

 private:
  // Outputs whose extent depends on the data get their counts appended as further outputs, those
  // whose every extent is decided at run time their shapes; the main function's output_trim and
  // output_shapes attributes pair them.
  Attrs AppendCounts(std::vector<Expr>& outputs) const {
    std::vector<int64_t> trims, output_shapes;
    std::vector<Expr> counts;
    size_t num_outputs = outputs.size();
    for (size_t i = 0; i < num_outputs; ++i) {
      std::optional<RaggedExtent> extent = ExtentOf(outputs[i]);
      if (!extent) continue;
      const auto* field = extent->count->As<TupleGetItemNode>();
      auto same = std::find_if(counts.begin(), counts.end(), [&](const Expr& c) {
        const auto* other = c->As<TupleGetItemNode>();
        return other->tuple == field->tuple && other->index == field->index;
      });
      if (same == counts.end()) same = counts.insert(counts.end(), extent->count);
      auto count_output = static_cast<int64_t>(num_outputs + (same - counts.begin()));
      if (extent->whole_shape) output_shapes.insert(output_shapes.end(), {static_cast<int64_t>(i), count_output});
      else trims.insert(trims.end(), {static_cast<int64_t>(i), count_output, int64_t{extent->axis}});
    }
    outputs.insert(outputs.end(), counts.begin(), counts.end());
    Attrs attrs;
    if (!trims.empty()) attrs.Set(ir::attr::kOutputTrim, trims);
    if (!output_shapes.empty()) attrs.Set(ir::attr::kOutputShapes, output_shapes);
    return attrs;
  }

  // The count or shape of a value whose extents are decided as the graph runs: a ragged field of
  // its op's result, or an elementwise op's result of such a value (CarriesExtent).
  std::optional<RaggedExtent> ExtentOf(const Expr& value) const {
    if (std::optional<RaggedExtent> extent = RaggedExtentOf(value)) return extent;
    for (const GraphImporter* g = this; g != nullptr; g = g->outer_) {
      if (auto it = g->carried_.find(value.get()); it != g->carried_.end()) return it->second;
    }
    return std::nullopt;
  }

  // ONNX ops of one input computed element by element, whose result keeps an input's run-time
  // extent (the padded elements after the data computed along, never read).
  static bool CarriesExtent(const onnx::NodeProto& node, size_t input) {
    static const std::set<std::string> kUnary = {
        "Abs",  "Acos",  "Acosh",   "Asin", "Asinh",      "Atan", "Atanh",   "Cast",     "Ceil",
        "Cos",  "Cosh",  "Erf",     "Exp",  "Floor",      "Identity", "IsInf", "IsNaN", "Log",
        "Neg",  "Not",   "Reciprocal", "Relu", "Round",   "Sigmoid", "Sign", "Sin",     "Sinh",
        "Softplus", "Softsign", "Sqrt", "Tan", "Tanh"};
    if (!node.domain().empty() && node.domain() != "ai.onnx") return false;
    return input == 0 && (kUnary.count(node.op_type()) != 0 || node.op_type() == "CastLike");
  }

  std::set<std::string> ImportInitializers() {
    std::set<std::string> initializers;
    for (const auto& init : graph_.initializer()) {
      initializers.insert(init.name());
      try {
        values_[init.name()] = Constant(TensorToNDArray(init));
      } catch (runtime::Error& e) {
        e.AddLocation({"", "initializer '" + init.name() + "'", ""});
        throw;
      }
    }
    return initializers;
  }

  std::vector<Expr> ConvertNodes() {
    for (int i = 0; i < graph_.node_size(); ++i) ConvertNode(graph_.node(i), i);
    std::vector<Expr> outputs;
    for (const auto& output : graph_.output()) {
      const Expr* value = Find(output.name());
      runtime::Check(value != nullptr, "graph output '", output.name(), "' is not computed by any node");
      outputs.push_back(*value);
    }
    return outputs;
  }

  // The value of `name` in this graph or the graphs around it; null when there is none.
  const Expr* Find(const std::string& name) const {
    auto it = values_.find(name);
    if (it != values_.end()) return &it->second;
    return outer_ == nullptr ? nullptr : outer_->Find(name);
  }

  void ConvertNode(const onnx::NodeProto& node, int index) {
    // Unrolled loops import their bodies again and again: one budget for the whole model.
    if (++*converted_ > kMaxConvertedNodes) {
      throw runtime::Error(StrCat("the model expands to more than ", kMaxConvertedNodes,
                                  " nodes as kiln unrolls its loops and scans"),
                           {"", NodeLabel(node, index), ""});
    }
    std::vector<Expr> inputs;
    std::optional<RaggedExtent> carried;  // of input 0, which the outputs keep
    int64_t carried_elements = 0;
    for (const std::string& name : node.input()) {
      if (name.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      const Expr* value = Find(name);
      if (value == nullptr) throw UnknownInput(node, index, name);
      if (std::optional<RaggedExtent> extent = ExtentOf(*value)) {
        if (!CarriesExtent(node, inputs.size()) || (extent->sized && node.op_type() != "Identity")) {
          throw runtime::Error("has a shape decided as the graph runs (by the data, or by an input's values), which this "
                               "node does not support: kiln runs such values only as outputs of the model, through "
                               "elementwise ops of one input (else: of storage sized as the graph runs, through none)",
                               {"", NodeLabel(node, index), "input '" + runtime::ValidUtf8(name) + "'"});
        }
        carried = extent;
        carried_elements = (*value)->type().tensor().NumElements();
      }
      inputs.push_back(*value);
    }
    SubgraphImporter subgraphs = [this](const onnx::GraphProto& graph, const std::vector<Expr>& bound) {
      return GraphImporter(graph, opsets_, this).ImportSubgraph(bound);
    };
    NodeContext context(node, std::move(inputs), opsets_.at(KeyOf(node).domain), subgraphs);
    std::vector<Expr> outputs;
    ir::WorkingOn scope(NodeLabel(node, index));  // the calls made here come from this node
    if (auto group = qdq_groups_.find(index); group != qdq_groups_.end()) outputs = ConvertQdqGroup(group->second);
    try {
      if (outputs.empty()) {
        outputs = runtime::ReportingBugsAt([] { return std::string("its converter"); },
                                           [&] { return FindConverter(node)->convert(context); });
      }
    } catch (runtime::Error& e) {
      e.AddLocation({"", NodeLabel(node, index), ""});
      throw;
    }
    for (int k = 0; k < node.output_size(); ++k) {
      if (node.output(k).empty()) continue;
      if (k >= static_cast<int>(outputs.size())) {
        throw runtime::Error(StrCat("is not supported (only the first ", outputs.size(), ")"),
                             {"", NodeLabel(node, index), StrCat("output ", k)});
      }
      values_[node.output(k)] = outputs[k];
      if (carried && !RaggedExtentOf(outputs[k])) {
        runtime::CheckInternal(outputs[k]->type().tensor().NumElements() == carried_elements,
                               "an elementwise op's converter changed the element count");
        carried_[outputs[k].get()] = *carried;
      }
    }
  }

  // The integer node of a QDQ group (qdq_groups.h), converted in place of its QuantizeLinear; no
  // outputs when its dtypes or forms do not fit the integer ops (the float ops then stand).
  std::vector<Expr> ConvertQdqGroup(const QdqGroup& group) {
    const onnx::NodeProto& fused = group.fused;
    std::vector<Expr> inputs;
    for (const std::string& name : fused.input()) {
      const Expr* value = name.empty() ? nullptr : Find(name);
      if (!name.empty() && value == nullptr) return {};
      inputs.push_back(value == nullptr ? nullptr : *value);
    }
    if (!QdqGroupFits(group, inputs)) return {};
    NodeContext context(fused, std::move(inputs), opsets_.at(""));
    try {
      return fused.op_type() == "QGemm" ? QGemm(context) : FindConverter(fused)->convert(context);
    } catch (const runtime::Error&) {
      return {};
    }
  }

  const onnx::GraphProto& graph_;
  std::map<int, QdqGroup> qdq_groups_ = FindQdqGroups(graph_);
  const OpsetImports& opsets_;
  const GraphImporter* outer_;
  int64_t converted_here_ = 0;
  int64_t* converted_;  // nodes converted in the whole model, subgraphs and their repeats included
  std::map<std::string, Expr> values_;
  std::map<const ExprNode*, RaggedExtent> carried_;  // ExtentOf: results of CarriesExtent's ops
};

}  // namespace

DLDataType OnnxDType(int32_t onnx_type) {
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT: return {kDLFloat, 32, 1};
    case onnx::TensorProto::DOUBLE: return {kDLFloat, 64, 1};
    case onnx::TensorProto::FLOAT16: return {kDLFloat, 16, 1};
    case onnx::TensorProto::BFLOAT16: return {kDLBfloat, 16, 1};
    // FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ (ONNX 1.14; libonnx 1.12 names none).
    case 17: return {runtime::kDLFloat8E4M3FN, 8, 1};
    case 18: return {runtime::kDLFloat8E4M3FNUZ, 8, 1};
    case 19: return {runtime::kDLFloat8E5M2, 8, 1};
    case 20: return {runtime::kDLFloat8E5M2FNUZ, 8, 1};
    case onnx::TensorProto::INT64: return {kDLInt, 64, 1};
    case onnx::TensorProto::INT32: return {kDLInt, 32, 1};
    case onnx::TensorProto::INT16: return {kDLInt, 16, 1};
    case onnx::TensorProto::INT8: return {kDLInt, 8, 1};
    case onnx::TensorProto::UINT8: return {kDLUInt, 8, 1};
    case onnx::TensorProto::UINT16: return {kDLUInt, 16, 1};
    case onnx::TensorProto::UINT32: return {kDLUInt, 32, 1};
    case onnx::TensorProto::UINT64: return {kDLUInt, 64, 1};
    case onnx::TensorProto::BOOL: return {kDLUInt, 1, 1};
    default: runtime::Fail("ONNX element type ", onnx_type, " is not supported");
  }
}

// The bytes `tensor` takes, once its shape is checked (no overflow, at most MaxTensorBytes) and
// found to match the data it holds; nothing is allocated.
size_t CheckedDataBytes(const onnx::TensorProto& tensor) {
  runtime::Check(tensor.data_location() != onnx::TensorProto::EXTERNAL,
                 "tensors with external data are not supported; save the model with its data inside");
  std::vector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  size_t bytes = static_cast<size_t>(runtime::CheckedTensorBytes(shape, OnnxDType(tensor.data_type()), "the tensor"));
  if (tensor.has_raw_data()) {
    runtime::Check(tensor.raw_data().size() == bytes, "raw data holds ", tensor.raw_data().size(), " bytes, expected ",
                   bytes);
    return bytes;
  }
  int values = 0;
  switch (tensor.data_type()) {
    case onnx::TensorProto::FLOAT: values = tensor.float_data_size(); break;
    case onnx::TensorProto::DOUBLE: values = tensor.double_data_size(); break;
    case onnx::TensorProto::INT64: values = tensor.int64_data_size(); break;
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::UINT32: values = tensor.uint64_data_size(); break;
    default: values = tensor.int32_data_size();  // int32, int16, int8, uint16, uint8, bool, float16, bfloat16
  }
  int64_t count = static_cast<int64_t>(bytes / runtime::DTypeBytes(OnnxDType(tensor.data_type())));
  runtime::Check(values == count, "holds ", values, " values for shape ", runtime::ShapeToString(shape));
  return bytes;
}

runtime::NDArray TensorToNDArray(const onnx::TensorProto& tensor) {
  size_t bytes = CheckedDataBytes(tensor);
  std::vector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  DLDataType dtype = OnnxDType(tensor.data_type());
  int64_t count = static_cast<int64_t>(bytes / runtime::DTypeBytes(dtype));
  runtime::NDArray array = runtime::NDArray::Empty(shape, dtype);
  char* out = static_cast<char*>(array.data());
  if (bytes == 0) return array;  // memcpy from an empty field's null pointer is undefined
  if (tensor.has_raw_data()) {
    std::memcpy(out, tensor.raw_data().data(), bytes);
    return array;
  }
  switch (tensor.data_type()) {
    case onnx::TensorProto::FLOAT: std::memcpy(out, tensor.float_data().data(), bytes); break;
    case onnx::TensorProto::DOUBLE: std::memcpy(out, tensor.double_data().data(), bytes); break;
    case onnx::TensorProto::INT64: std::memcpy(out, tensor.int64_data().data(), bytes); break;
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::UINT32:
      for (int64_t i = 0; i < count; ++i) {
        uint64_t v = tensor.uint64_data(static_cast<int>(i));
        std::memcpy(out + i * runtime::DTypeBytes(dtype), &v, runtime::DTypeBytes(dtype));
      }
      break;
    default:
      for (int64_t i = 0; i < count; ++i) {
        int32_t v = tensor.int32_data(static_cast<int>(i));
        std::memcpy(out + i * runtime::DTypeBytes(dtype), &v, runtime::DTypeBytes(dtype));
      }
  }
  return array;
}

namespace {

// `model` (its input shapes applied) imported: checked, converted, and with a batch dimension
// imported for two samples too (CheckSamplesApart).
Expr ImportChecked(onnx::ModelProto& model, const OnnxImportOptions& options) {
  std::optional<onnx::ModelProto> probe;  // the model for two samples
  if (!options.dims.empty()) probe = model;
  std::optional<BatchSpec> batch = ApplyBatchDim(model, options, 1);
  OpsetImports opsets = ImportedOpsets(model);
  auto default_opset = opsets.find("");
  // Unsupported ops first (a model made of another domain's ops is about them), then the opset.
  OpsetImports checked = opsets;
  checked[""] = std::min(default_opset == opsets.end() ? kMaxOpset : default_opset->second, kMaxOpset);
  CheckStructure(model.graph(), checked);
  runtime::Check(default_opset != opsets.end(), "the model imports no version of the default ONNX operator set");
  int64_t opset = default_opset->second;
  runtime::Check(opset >= 1 && opset <= kMaxOpset, "the model uses ONNX opset ", opset, "; kiln imports opsets up to ",
                 kMaxOpset, " (convert it with onnx.version_converter)");
  // Above the opsets libonnx knows, its inference and checker would reject every node; kiln's own
  // checks hold instead: CheckStructure's, the typed attribute accessors, each converter's and the
  // IR's type inference of every op.
  if (opset <= kLibonnxMaxOpset) CheckWithLibonnx(model, opset);
  Expr main = GraphImporter(model.graph(), opsets).Import(batch);
  if (batch) {
    ApplyBatchDim(*probe, options, 2);
    Expr two;
    try {
      two = GraphImporter(probe->graph(), opsets).Import(batch);
    } catch (runtime::Error& e) {
      throw BatchDimensionError(runtime::Error(runtime::StrCat(
          "the batch dimension cannot be decided at run time: imported for a batch of 2 (to find where each value ",
          "holds the samples), the model fails: ", e.what())));
    }
    try {
      CheckSamplesApart(main, two);
    } catch (runtime::Error& e) {
      throw BatchDimensionError(e);
    }
  }
  return main;
}

Expr ImportWithDims(onnx::ModelProto& model, const OnnxImportOptions& options, ir::DimSamples* samples);

// The model in `bytes`, its external data read from `folder` (none: a model from bytes).
Expr ImportModel(std::string_view bytes, const OnnxImportOptions& options,
                 const std::optional<std::filesystem::path>& folder, ir::DimSamples* samples) {
  onnx::ModelProto model;
  runtime::Check(bytes.size() < (size_t{1} << 31) && model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())),
                 "not an ONNX model (the protobuf does not parse)");
  ResolveExternalData(model, folder);
  ForgetNegativeDims(*model.mutable_graph());
  ApplyInputShapes(model, options);
  std::optional<onnx::ModelProto> original;  // for a retry without the batch
  if (samples != nullptr && !BatchName(model, options).empty()) original = model;
  try {
    return ImportWithDims(model, options, samples);
  } catch (const BatchDimensionError& batch_error) {
    if (!original) throw;
    // A dimension on axis 0 whose samples the model does not keep apart (a sequence-first
    // model's S): a shape dimension, the model compiled for several of its values.
    OnnxImportOptions without_batch = options;
    without_batch.batch_allowed = false;
    try {
      Expr main = ImportWithDims(*original, without_batch, samples);
      samples->batch_refusal = batch_error.what();
      return main;
    } catch (const runtime::Error& e) {
      runtime::Fail(batch_error.what(), "; nor as a shape dimension: ", e.what());
    }
  }
}

// `model` (its input shapes applied) imported with the dimensions of `options`: at each sample of
// its shape dimensions into `samples`, the first sample's main function returned.
Expr ImportWithDims(onnx::ModelProto& model, const OnnxImportOptions& options, ir::DimSamples* samples) {
  std::vector<runtime::ShapeDim> dims = ShapeDimsOf(model, options);
  if (dims.empty()) return ImportChecked(model, options);
  runtime::Check(samples != nullptr, "this caller of the ONNX importer takes no shape dimensions (",
                 dims[0].name, ")");
  *samples = ir::PlanDimSamples(dims);
  OnnxImportOptions batch_only = options;  // the shape dimensions are values at each sample
  for (const runtime::ShapeDim& dim : dims) batch_only.dims.erase(dim.name);
  for (size_t p = 0; p < samples->points.size(); ++p) {
    onnx::ModelProto at = model;
    ApplyShapeDimValues(at, samples->dims, samples->points[p]);
    try {
      Expr main = ImportChecked(at, batch_only);
      const auto* f = main->As<ir::FunctionNode>();
      ir::Attrs attrs = f->attrs;
      std::string names;
      for (const runtime::ShapeDim& dim : dims) names += (names.empty() ? "" : ",") + dim.name;
      attrs.Set(ir::attr::kShapeDims, names);
      samples->mains.push_back(ir::Function(f->params, f->body, std::move(attrs)));
    } catch (const BatchDimensionError&) {
      throw;  // ImportModel takes the batch as a shape dimension
    } catch (runtime::Error& e) {
      std::string values;
      for (size_t d = 0; d < dims.size(); ++d) {
        values += runtime::StrCat(d > 0 ? ", " : "", dims[d].name, " = ", samples->points[p][d]);
      }
      runtime::Fail("imported at ", values, " (one of the values the shape dimensions are compiled at; a model that ",
                    "takes only some values, such as multiples of 32, needs a range with a step: MIN..MAX:STEP): ",
                    e.what());
    }
  }
  return samples->mains[0];
}

}  // namespace

Expr ImportOnnxBytes(std::string_view bytes, const OnnxImportOptions& options, ir::DimSamples* samples) {
  return ImportModel(bytes, options, std::nullopt, samples);
}

Expr ImportOnnxFile(const std::string& path, const OnnxImportOptions& options, ir::DimSamples* samples) {
  runtime::MappedFile file(path);
  try {
    std::filesystem::path folder = std::filesystem::path(path).parent_path();
    return ImportModel(file.bytes(), options, folder.empty() ? std::filesystem::path(".") : folder, samples);
  } catch (runtime::Error& e) {
    e.AddLocation({path, "", ""});
    throw;
  }
}

std::vector<std::string> SupportedOnnxOps() {
  std::vector<std::string> ops;
  for (const auto& [key, converter] : Converters()) ops.push_back(key.domain.empty() ? key.type : key.domain + "." + key.type);
  return ops;
}

}  // namespace kiln::frontend
