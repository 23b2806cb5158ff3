// The table of structured ONNX model mutations (see onnx_mutations.h): small functions that each
// change one thing and return false when the model has nothing they apply to.
#include "fuzz/onnx_mutations.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "frontend/onnx/onnx_import.h"

namespace kiln::fuzz {
namespace {

using Rng = std::mt19937_64;

size_t Pick(Rng& rng, size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); }
bool Coin(Rng& rng) { return rng() & 1; }

template <typename T, size_t N>
const T& PickFrom(Rng& rng, const T (&items)[N]) {
  return items[Pick(rng, N)];
}

constexpr int64_t kExtremeInts[] = {-1,
                                    -2,
                                    0,
                                    1,
                                    3,
                                    7,
                                    int64_t{1} << 31,
                                    int64_t{1} << 40,
                                    int64_t{1} << 62,
                                    std::numeric_limits<int64_t>::max(),
                                    std::numeric_limits<int64_t>::min(),
                                    -(int64_t{1} << 40)};
constexpr float kExtremeFloats[] = {0.0f, -1.0f, 1e30f, -1e30f, std::numeric_limits<float>::infinity(),
                                    std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min()};
// External data locations a model from elsewhere might use to read the host's files.
const char* const kHostileLocations[] = {"../../etc/passwd", "/etc/passwd", "weights/../../../etc/shadow",
                                         "/proc/self/mem",   "weights.bin", "./../outside.bin",
                                         "",                 "#inline",     "/dev/zero"};
const char* const kAttributeNames[] = {"axis", "axes", "perm",  "pads",     "kernel_shape", "strides", "to",
                                       "mode", "value", "split", "keepdims", "group",        "epsilon", "alpha",
                                       "dilations", "auto_pad", "transB", "ceil_mode"};
// Ops kiln does not convert, so that the unsupported-op path and ONNX's checks of them are reached.
const char* const kOtherOps[] = {"If", "Loop", "Scan", "NonZero", "Resize", "TopK", "Einsum", "CumSum", "Attention"};
const char* const kDomains[] = {"", "ai.onnx", "ai.onnx.ml", "com.microsoft", "kiln.fuzz"};
const int64_t kOpsetVersions[] = {-1, 0, 1, 7, 10, 11, 12, 13, 14, 16, 17, 18, 1000};

onnx::NodeProto* RandomNode(onnx::ModelProto& model, Rng& rng) {
  auto* nodes = model.mutable_graph()->mutable_node();
  return nodes->empty() ? nullptr : nodes->Mutable(static_cast<int>(Pick(rng, nodes->size())));
}

// Initializers and the tensors of Constant-like attributes (value=...), which ONNX checks alike.
std::vector<onnx::TensorProto*> AllTensors(onnx::ModelProto& model) {
  std::vector<onnx::TensorProto*> tensors;
  for (auto& init : *model.mutable_graph()->mutable_initializer()) tensors.push_back(&init);
  for (auto& node : *model.mutable_graph()->mutable_node()) {
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.has_t()) tensors.push_back(attr.mutable_t());
    }
  }
  return tensors;
}

void SetInput(onnx::NodeProto& node, const std::string& name, Rng& rng) {
  if (node.input_size() > 0 && Coin(rng)) {
    node.set_input(static_cast<int>(Pick(rng, node.input_size())), name);
  } else {
    node.add_input(name);
  }
}

// ---- the mutations ------------------------------------------------------------------------

bool DanglingInput(onnx::ModelProto& model, Rng& rng) {
  onnx::NodeProto* node = RandomNode(model, rng);
  if (node == nullptr) return false;
  SetInput(*node, Coin(rng) ? "fuzz_dangling" : node->name() + "_missing", rng);
  return true;
}

// A node consumes its own output or a later node's.
bool CyclicInput(onnx::ModelProto& model, Rng& rng) {
  auto* nodes = model.mutable_graph()->mutable_node();
  if (nodes->empty()) return false;
  int consumer = static_cast<int>(Pick(rng, nodes->size()));
  int producer = consumer + static_cast<int>(Pick(rng, nodes->size() - consumer));
  const auto& outputs = nodes->Get(producer).output();
  if (outputs.empty()) return false;
  std::string name = outputs.Get(static_cast<int>(Pick(rng, outputs.size())));
  SetInput(*nodes->Mutable(consumer), name, rng);
  return true;
}

void SetAttributeValue(onnx::AttributeProto& attr, onnx::AttributeProto::AttributeType type, Rng& rng) {
  std::string name = attr.name();
  attr.Clear();
  attr.set_name(name);
  attr.set_type(type);
  switch (type) {
    case onnx::AttributeProto::FLOAT: attr.set_f(PickFrom(rng, kExtremeFloats)); break;
    case onnx::AttributeProto::INT: attr.set_i(PickFrom(rng, kExtremeInts)); break;
    case onnx::AttributeProto::STRING: attr.set_s(Coin(rng) ? "constant" : std::string("\xff\0x", 3)); break;
    case onnx::AttributeProto::TENSOR: {
      auto* t = attr.mutable_t();
      t->set_data_type(onnx::TensorProto::FLOAT);
      t->add_dims(static_cast<int64_t>(Pick(rng, 3)));
      t->add_float_data(1.5f);
      break;
    }
    case onnx::AttributeProto::GRAPH: attr.mutable_g()->set_name("fuzz_subgraph"); break;
    case onnx::AttributeProto::FLOATS:
      for (size_t i = Pick(rng, 5); i > 0; --i) attr.add_floats(PickFrom(rng, kExtremeFloats));
      break;
    case onnx::AttributeProto::INTS:
      for (size_t i = Pick(rng, 9); i > 0; --i) attr.add_ints(PickFrom(rng, kExtremeInts));
      break;
    case onnx::AttributeProto::STRINGS: attr.add_strings("x"); break;
    default: break;
  }
}

// An attribute's type replaced (INT where FLOATS is expected, ...), or a known attribute name
// added with a random type.
bool WrongAttributeType(onnx::ModelProto& model, Rng& rng) {
  static const onnx::AttributeProto::AttributeType kTypes[] = {
      onnx::AttributeProto::FLOAT,  onnx::AttributeProto::INT,    onnx::AttributeProto::STRING,
      onnx::AttributeProto::TENSOR, onnx::AttributeProto::GRAPH,  onnx::AttributeProto::FLOATS,
      onnx::AttributeProto::INTS,   onnx::AttributeProto::STRINGS, onnx::AttributeProto::UNDEFINED};
  onnx::NodeProto* node = RandomNode(model, rng);
  if (node == nullptr) return false;
  onnx::AttributeProto* attr = nullptr;
  if (node->attribute_size() > 0 && Coin(rng)) {
    attr = node->mutable_attribute(static_cast<int>(Pick(rng, node->attribute_size())));
  } else {
    attr = node->add_attribute();
    attr->set_name(PickFrom(rng, kAttributeNames));
  }
  SetAttributeValue(*attr, PickFrom(rng, kTypes), rng);
  return true;
}

// Attribute values at the edges: negative, huge, NaN; ints lists of other lengths.
bool ExtremeAttributeValue(onnx::ModelProto& model, Rng& rng) {
  onnx::NodeProto* node = RandomNode(model, rng);
  if (node == nullptr || node->attribute_size() == 0) return false;
  auto& attr = *node->mutable_attribute(static_cast<int>(Pick(rng, node->attribute_size())));
  switch (attr.type()) {
    case onnx::AttributeProto::INT: attr.set_i(PickFrom(rng, kExtremeInts)); return true;
    case onnx::AttributeProto::FLOAT: attr.set_f(PickFrom(rng, kExtremeFloats)); return true;
    case onnx::AttributeProto::INTS:
      if (attr.ints_size() > 0 && Coin(rng)) {
        attr.set_ints(static_cast<int>(Pick(rng, attr.ints_size())), PickFrom(rng, kExtremeInts));
      } else if (attr.ints_size() > 0 && Coin(rng)) {
        attr.mutable_ints()->RemoveLast();
      } else {
        attr.add_ints(PickFrom(rng, kExtremeInts));
      }
      return true;
    default: return false;
  }
}

// A dim of a graph input, output, value_info or initializer made negative, zero or huge; or a
// dim added or removed.
bool ExtremeDim(onnx::ModelProto& model, Rng& rng) {
  auto* graph = model.mutable_graph();
  std::vector<onnx::TensorShapeProto*> shapes;
  for (auto* values : {graph->mutable_input(), graph->mutable_output(), graph->mutable_value_info()}) {
    for (auto& value : *values) {
      if (value.type().has_tensor_type()) shapes.push_back(value.mutable_type()->mutable_tensor_type()->mutable_shape());
    }
  }
  std::vector<onnx::TensorProto*> tensors = AllTensors(model);
  size_t choice = Pick(rng, shapes.size() + tensors.size() + 1);
  if (choice < shapes.size()) {
    onnx::TensorShapeProto& shape = *shapes[choice];
    if (shape.dim_size() > 0 && !Coin(rng)) {
      shape.mutable_dim(static_cast<int>(Pick(rng, shape.dim_size())))->set_dim_value(PickFrom(rng, kExtremeInts));
    } else if (shape.dim_size() > 0 && Coin(rng)) {
      shape.mutable_dim()->RemoveLast();
    } else {
      shape.add_dim()->set_dim_value(PickFrom(rng, kExtremeInts));
    }
    return true;
  }
  choice -= shapes.size();
  if (choice >= tensors.size()) return false;
  onnx::TensorProto& tensor = *tensors[choice];
  if (tensor.dims_size() > 0 && Coin(rng)) {
    tensor.set_dims(static_cast<int>(Pick(rng, tensor.dims_size())), PickFrom(rng, kExtremeInts));
  } else {
    tensor.add_dims(PickFrom(rng, kExtremeInts));
  }
  return true;
}

// Raw data shorter or longer than the shape says (typed data moved aside so raw_data counts).
bool RawDataLength(onnx::ModelProto& model, Rng& rng) {
  std::vector<onnx::TensorProto*> tensors = AllTensors(model);
  if (tensors.empty()) return false;
  onnx::TensorProto& tensor = *tensors[Pick(rng, tensors.size())];
  size_t size = tensor.has_raw_data() ? tensor.raw_data().size() : 4;
  tensor.clear_float_data();
  tensor.clear_int32_data();
  tensor.clear_int64_data();
  tensor.clear_double_data();
  tensor.clear_uint64_data();
  const size_t kSizes[] = {0, size - 1, size + 1, size / 2, size * 2, size + 4096};
  tensor.mutable_raw_data()->resize(std::min<size_t>(PickFrom(rng, kSizes), 1 << 16), '\x7f');
  return true;
}

bool TensorDataType(onnx::ModelProto& model, Rng& rng) {
  std::vector<onnx::TensorProto*> tensors = AllTensors(model);
  if (tensors.empty()) return false;
  tensors[Pick(rng, tensors.size())]->set_data_type(static_cast<int32_t>(Pick(rng, 24)) - 1);
  return true;
}

// data_location EXTERNAL with a location outside the model's folder (or none at all).
bool ExternalData(onnx::ModelProto& model, Rng& rng) {
  std::vector<onnx::TensorProto*> tensors = AllTensors(model);
  if (tensors.empty()) return false;
  onnx::TensorProto& tensor = *tensors[Pick(rng, tensors.size())];
  tensor.set_data_location(onnx::TensorProto::EXTERNAL);
  if (Coin(rng)) tensor.clear_raw_data();
  tensor.clear_external_data();
  if (Pick(rng, 8) != 0) {
    auto* location = tensor.add_external_data();
    location->set_key("location");
    location->set_value(PickFrom(rng, kHostileLocations));
  }
  if (Coin(rng)) {
    auto* offset = tensor.add_external_data();
    offset->set_key(Coin(rng) ? "offset" : "length");
    offset->set_value(std::to_string(PickFrom(rng, kExtremeInts)));
  }
  return true;
}

bool RemoveNode(onnx::ModelProto& model, Rng& rng) {
  auto* nodes = model.mutable_graph()->mutable_node();
  if (nodes->empty()) return false;
  nodes->DeleteSubrange(static_cast<int>(Pick(rng, nodes->size())), 1);
  return true;
}

bool DuplicateNode(onnx::ModelProto& model, Rng& rng) {
  auto* nodes = model.mutable_graph()->mutable_node();
  if (nodes->empty()) return false;
  onnx::NodeProto copy = nodes->Get(static_cast<int>(Pick(rng, nodes->size())));
  *nodes->Add() = copy;  // the same outputs twice: ONNX forbids it, kiln must refuse it clearly
  return true;
}

// Two nodes swapped: the graph is no longer in topological order.
bool SwapNodes(onnx::ModelProto& model, Rng& rng) {
  auto* nodes = model.mutable_graph()->mutable_node();
  if (nodes->size() < 2) return false;
  nodes->SwapElements(static_cast<int>(Pick(rng, nodes->size())), static_cast<int>(Pick(rng, nodes->size())));
  return true;
}

bool ChangeOpType(onnx::ModelProto& model, Rng& rng) {
  static const std::vector<std::string> supported = frontend::SupportedOnnxOps();
  onnx::NodeProto* node = RandomNode(model, rng);
  if (node == nullptr) return false;
  node->set_op_type(Pick(rng, 8) != 0 ? supported[Pick(rng, supported.size())] : PickFrom(rng, kOtherOps));
  if (Pick(rng, 8) == 0) node->set_domain(PickFrom(rng, kDomains));
  return true;
}

bool ChangeOpset(onnx::ModelProto& model, Rng& rng) {
  if (model.opset_import_size() == 0 || Pick(rng, 4) == 0) {
    auto* opset = model.add_opset_import();
    opset->set_domain(PickFrom(rng, kDomains));
    opset->set_version(PickFrom(rng, kOpsetVersions));
  } else {
    model.mutable_opset_import(static_cast<int>(Pick(rng, model.opset_import_size())))
        ->set_version(PickFrom(rng, kOpsetVersions));
  }
  if (Pick(rng, 4) == 0) model.set_ir_version(static_cast<int64_t>(Pick(rng, 12)));
  return true;
}

using Mutation = bool (*)(onnx::ModelProto&, Rng&);
constexpr Mutation kMutations[] = {
    DanglingInput, CyclicInput,  WrongAttributeType, ExtremeAttributeValue, ExtremeDim, RawDataLength, TensorDataType,
    ExternalData,  RemoveNode,   DuplicateNode,      SwapNodes,             ChangeOpType, ChangeOpset};

}  // namespace

bool MutateOnnxModel(onnx::ModelProto& model, std::mt19937_64& rng) {
  if (!model.has_graph()) return false;
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (PickFrom(rng, kMutations)(model, rng)) return true;
  }
  return false;
}

}  // namespace kiln::fuzz
