// NodeContext (converter.h): a converter's view of the ONNX node it converts: its inputs, its
// typed attributes, its constant inputs read as values, subgraphs imported in its scope, and
// errors located at the argument they are about; and the helpers converters share.
#include <optional>
#include <string>
#include <vector>

#include "frontend/onnx/converter.h"
#include "ir/evaluate.h"
#include "runtime/error.h"
#include "runtime/text.h"

namespace kiln::frontend {

using namespace ir;
using runtime::StrCat;

const Expr& NodeContext::input(size_t i) const {
  if (!has_input(i)) FailAt(StrCat("input ", i), "is missing");
  return inputs_[i];
}

void NodeContext::Fail(const std::string& message) const { throw runtime::Error(message); }

void NodeContext::FailAt(const std::string& argument, const std::string& message) const {
  throw runtime::Error(message, {"", "", argument});
}

const onnx::AttributeProto* NodeContext::Attr(const std::string& name) const {
  for (const auto& attr : node_.attribute()) {
    if (attr.name() == name) return &attr;
  }
  return nullptr;
}

// The attribute, of the type its op gives it (ONNX's checker checks this only for the opsets
// libonnx knows); null when the node has none of that name.
const onnx::AttributeProto* NodeContext::TypedAttr(const std::string& name, int type) const {
  const onnx::AttributeProto* a = Attr(name);
  if (a != nullptr && a->type() != type) {
    FailAt("attribute '" + name + "'",
           StrCat("must be ", onnx::AttributeProto::AttributeType_Name(static_cast<onnx::AttributeProto::AttributeType>(type)),
                  ", it is ", onnx::AttributeProto::AttributeType_Name(a->type())));
  }
  return a;
}

template <typename T>
T NodeContext::Fallback(const std::string& name, const std::optional<T>& fallback) const {
  if (!fallback) FailAt("attribute '" + name + "'", "is required");
  return *fallback;
}

int64_t NodeContext::attr_int(const std::string& name, std::optional<int64_t> fallback) const {
  const auto* a = TypedAttr(name, onnx::AttributeProto::INT);
  return a != nullptr ? a->i() : Fallback(name, fallback);
}

float NodeContext::attr_float(const std::string& name, std::optional<float> fallback) const {
  const auto* a = TypedAttr(name, onnx::AttributeProto::FLOAT);
  return a != nullptr ? a->f() : Fallback(name, fallback);
}

std::string NodeContext::attr_string(const std::string& name, std::optional<std::string> fallback) const {
  const auto* a = TypedAttr(name, onnx::AttributeProto::STRING);
  return a != nullptr ? a->s() : Fallback(name, fallback);
}

std::vector<int64_t> NodeContext::attr_ints(const std::string& name, std::optional<std::vector<int64_t>> fallback) const {
  const auto* a = TypedAttr(name, onnx::AttributeProto::INTS);
  return a != nullptr ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : Fallback(name, fallback);
}

std::vector<float> NodeContext::attr_floats(const std::string& name, std::optional<std::vector<float>> fallback) const {
  const auto* a = TypedAttr(name, onnx::AttributeProto::FLOATS);
  return a != nullptr ? std::vector<float>(a->floats().begin(), a->floats().end()) : Fallback(name, fallback);
}

std::vector<std::string> NodeContext::attr_strings(const std::string& name,
                                                   std::optional<std::vector<std::string>> fallback) const {
  const auto* a = TypedAttr(name, onnx::AttributeProto::STRINGS);
  return a != nullptr ? std::vector<std::string>(a->strings().begin(), a->strings().end()) : Fallback(name, fallback);
}

std::vector<Expr> NodeContext::ImportGraph(const std::string& name, const std::vector<Expr>& inputs) const {
  const onnx::AttributeProto* a = TypedAttr(name, onnx::AttributeProto::GRAPH);
  if (a == nullptr) FailAt("attribute '" + name + "'", "is required");
  runtime::CheckInternal(subgraphs_ != nullptr, "a converter imports a graph outside the importer");
  try {
    return subgraphs_(a->g(), inputs);
  } catch (runtime::Error& e) {
    e.AddLocation({"", "graph '" + runtime::ValidUtf8(a->g().name()) + "'", ""});
    throw;
  }
}

const onnx::TensorProto& NodeContext::attr_tensor(const std::string& name) const {
  const auto* a = TypedAttr(name, onnx::AttributeProto::TENSOR);
  if (a == nullptr) FailAt("attribute '" + name + "'", "is required");
  return a->t();
}

std::vector<int64_t> NodeContext::ConstantInts(size_t i) const {
  const auto* c = input(i)->As<ConstantNode>();
  if (c == nullptr) FailAt(StrCat("input ", i), "must be a constant (its value decides shapes)");
  std::vector<int64_t> values;
  const runtime::NDArray& a = c->value;
  int64_t n = a.NumBytes() / std::max<int64_t>(1, runtime::DTypeBytes(a.dtype()));
  DLDataType d = a.dtype();
  for (int64_t k = 0; k < n; ++k) {
    if (d.code == kDLInt && d.bits == 64) values.push_back(static_cast<const int64_t*>(a.data())[k]);
    else if (d.code == kDLInt && d.bits == 32) values.push_back(static_cast<const int32_t*>(a.data())[k]);
    else FailAt(StrCat("input ", i), "must hold integers, it holds " + runtime::DTypeToString(d));
  }
  return values;
}

std::vector<double> NodeContext::ConstantFloats(size_t i) const {
  const auto* c = input(i)->As<ConstantNode>();
  if (c == nullptr) FailAt(StrCat("input ", i), "must be a constant");
  std::vector<double> values;
  const runtime::NDArray& a = c->value;
  DLDataType d = a.dtype();
  int64_t n = a.NumBytes() / std::max<int64_t>(1, runtime::DTypeBytes(d));
  for (int64_t k = 0; k < n; ++k) {
    if (d.code == kDLFloat && d.bits == 32) values.push_back(static_cast<const float*>(a.data())[k]);
    else if (d.code == kDLFloat && d.bits == 64) values.push_back(static_cast<const double*>(a.data())[k]);
    else if (d.code == kDLInt && d.bits == 64) values.push_back(static_cast<double>(static_cast<const int64_t*>(a.data())[k]));
    else if (d.code == kDLInt && d.bits == 32) values.push_back(static_cast<const int32_t*>(a.data())[k]);
    else if (d.code == kDLInt && d.bits == 8) values.push_back(static_cast<const int8_t*>(a.data())[k]);
    else if (d.code == kDLUInt && (d.bits == 8 || d.bits == 1)) values.push_back(static_cast<const uint8_t*>(a.data())[k]);
    else FailAt(StrCat("input ", i), "must hold numbers, it holds " + runtime::DTypeToString(d));
  }
  return values;
}

double NodeContext::ConstantScalar(size_t i) const {
  std::vector<double> values = ConstantFloats(i);
  if (values.size() != 1) FailAt(StrCat("input ", i), StrCat("must hold one value, it holds ", values.size()));
  return values[0];
}

Expr NodeContext::Op(const ir::OpRef& op, std::vector<Expr> args, Attrs attrs) const {
  // Folded right away, so that shape computations (Shape -> Gather -> Concat -> Reshape) become
  // the constants later converters need.
  Expr call = Call(op, std::move(args), std::move(attrs));
  std::optional<runtime::NDArray> value = ir::EvaluateCall(call, ir::kDefaultMaxFoldedElements);
  return value ? ir::Constant(*value) : call;
}

void CheckConstantElements(const NodeContext& c, int64_t elements, const std::string& what) {
  if (elements < 0 || elements > ir::kDefaultMaxFoldedElements) {
    c.Fail(StrCat(what, " would be a constant of ", elements, " elements; kiln makes constants of at most ",
                  ir::kDefaultMaxFoldedElements, " at import"));
  }
}

Attrs MakeAttrs(std::initializer_list<std::pair<const char*, AttrValue>> items) {
  Attrs attrs;
  for (const auto& [name, value] : items) attrs.Set(name, value);
  return attrs;
}

int64_t NormalizeAxis(int64_t axis, int64_t ndim, const NodeContext& context) {
  if (axis < -ndim || axis >= ndim) context.Fail(StrCat("axis ", axis, " is out of range for rank ", ndim));
  return axis < 0 ? axis + ndim : axis;
}

}  // namespace kiln::frontend
