// JSON codegen: one walk over the external function's body, inputs before users.
#include "backend/json_codegen.h"

#include <limits>
#include <map>
#include <sstream>
#include <unordered_map>

#include "runtime/error.h"

namespace kiln::backend {

using namespace ir;

namespace {

std::string FloatText(double value) {
  std::ostringstream out;
  out.precision(std::numeric_limits<double>::max_digits10);
  out << value;
  return out.str();
}

std::vector<std::string> AttrStrings(const AttrValue& value) {
  std::vector<std::string> out;
  if (const auto* i = std::get_if<int64_t>(&value)) out.push_back(std::to_string(*i));
  if (const auto* d = std::get_if<double>(&value)) out.push_back(FloatText(*d));
  if (const auto* s = std::get_if<std::string>(&value)) out.push_back(*s);
  if (const auto* is = std::get_if<std::vector<int64_t>>(&value)) {
    for (int64_t i : *is) out.push_back(std::to_string(i));
  }
  if (const auto* ds = std::get_if<std::vector<double>>(&value)) {
    for (double d : *ds) out.push_back(FloatText(d));
  }
  return out;
}

const OpRef kConv2D("nn.conv2d");
const OpRef kConv2DTranspose("nn.conv2d_transpose");
const OpRef kDense("nn.dense");
const OpRef kBatchMatmul("nn.batch_matmul");
const OpRef kMaxPool2D("nn.max_pool2d");
const OpRef kAvgPool2D("nn.avg_pool2d");
const OpRef kGlobalAvgPool2D("nn.global_avg_pool2d");
const OpRef kLayerNorm("nn.layer_norm");

// The attributes Relay's op of that name has and kiln's lacks (their values implied by the
// types), so that a runtime written for TVM's graphs reads kiln's.
void AddRelayAttrs(const CallNode& call, std::map<std::string, std::vector<std::string>>& attrs) {
  auto shape_of = [&](size_t i) { return call.args.at(i)->type().tensor().shape; };
  if (kConv2D.Is(call.op)) {
    std::vector<int64_t> w = shape_of(1);
    attrs.emplace("channels", std::vector<std::string>{std::to_string(w[0])});
    attrs.emplace("kernel_size", std::vector<std::string>{std::to_string(w[2]), std::to_string(w[3])});
  }
  if (kConv2DTranspose.Is(call.op)) {
    std::vector<int64_t> w = shape_of(1);
    attrs.emplace("channels", std::vector<std::string>{std::to_string(w[1] * call.attrs.GetInt("groups"))});
    attrs.emplace("kernel_size", std::vector<std::string>{std::to_string(w[2]), std::to_string(w[3])});
  }
  if (kDense.Is(call.op)) attrs.emplace("units", std::vector<std::string>{std::to_string(shape_of(1)[0])});
  if (IsAnyOf(call.op, {&kConv2D, &kConv2DTranspose, &kDense, &kBatchMatmul})) {
    attrs.emplace("out_dtype", std::vector<std::string>{""});
  }
  if (IsAnyOf(call.op, {&kMaxPool2D, &kAvgPool2D, &kGlobalAvgPool2D})) {
    attrs.emplace("out_layout", std::vector<std::string>{""});
  }
  if (kLayerNorm.Is(call.op)) {
    attrs.emplace("center", std::vector<std::string>{"1"});
    attrs.emplace("scale", std::vector<std::string>{"1"});
  }
}

std::map<std::string, std::vector<std::string>> RelayAttrsOf(const CallNode& call) {
  std::map<std::string, std::vector<std::string>> attrs;
  for (const auto& [key, value] : call.attrs.values()) {
    if (key != "implementation") attrs[key] = AttrStrings(value);  // kiln's kernel choice, no Relay attribute
  }
  AddRelayAttrs(call, attrs);
  return attrs;
}

class Serializer {
 public:
  explicit Serializer(std::string const_prefix) : const_prefix_(std::move(const_prefix)) {}

  JsonSubgraph Run(const FunctionNode& f) {
    result_.graph.symbol = const_prefix_;
    for (const Expr& param : f.params) {
      runtime::JsonNode node;
      node.op = "input";
      node.name = param->As<VarNode>()->name;
      entries_[param.get()] = Add(std::move(node), param->type());
    }
    for (const Expr& e : PostOrder(f.body)) Visit(e);
    result_.graph.heads = entries_.at(f.body.get());
    for (uint32_t n = 0; n < result_.graph.nodes.size(); ++n) {
      if (result_.graph.nodes[n].op != "kernel") result_.graph.arg_nodes.push_back(n);
    }
    result_.graph.node_row_ptr.push_back(0);
    for (const runtime::JsonNode& node : result_.graph.nodes) {
      result_.graph.node_row_ptr.push_back(result_.graph.node_row_ptr.back() + static_cast<uint32_t>(node.num_outputs()));
    }
    return std::move(result_);
  }

 private:
  std::vector<runtime::JsonEntry> Add(runtime::JsonNode node, const Type& type) {
    uint32_t id = static_cast<uint32_t>(result_.graph.nodes.size());
    std::vector<runtime::JsonEntry> entries;
    std::vector<Type> fields = type.is_tuple() ? type.fields() : std::vector<Type>{type};
    for (size_t k = 0; k < fields.size(); ++k) {
      runtime::Check(fields[k].is_tensor(), "JSON codegen: node '", node.name, "' gives a nested tuple");
      node.shapes.push_back(fields[k].tensor().shape);
      node.dtypes.push_back(fields[k].tensor().dtype);
      entries.push_back({id, static_cast<uint32_t>(k)});
    }
    result_.graph.nodes.push_back(std::move(node));
    return entries;
  }

  void Visit(const Expr& e) {
    switch (e->kind()) {
      case ExprKind::kVar:
      case ExprKind::kFunction:  // a composite: visited where it is called
        return;
      case ExprKind::kConstant: {
        runtime::JsonNode node;
        node.op = "const";
        node.name = const_prefix_ + "_const_" + std::to_string(result_.constants.size());
        result_.constants.emplace_back(node.name, e->As<ConstantNode>()->value);
        entries_[e.get()] = Add(std::move(node), e->type());
        return;
      }
      case ExprKind::kTuple: {
        std::vector<runtime::JsonEntry> all;
        for (const Expr& field : e->As<TupleNode>()->fields) {
          const auto& part = entries_.at(field.get());
          all.insert(all.end(), part.begin(), part.end());
        }
        entries_[e.get()] = all;
        return;
      }
      case ExprKind::kTupleGetItem: {
        const auto* item = e->As<TupleGetItemNode>();
        entries_[e.get()] = {entries_.at(item->tuple.get()).at(item->index)};
        return;
      }
      case ExprKind::kCall:
        VisitCall(e);
        return;
    }
  }

  void VisitCall(const Expr& e) {
    const auto* call = e->As<CallNode>();
    runtime::JsonNode node;
    node.op = "kernel";
    if (call->op != nullptr) {
      node.name = call->op->name;
      node.attrs = RelayAttrsOf(*call);
    } else {
      const auto* f = call->function->As<FunctionNode>();
      runtime::Check(f->attrs.Has("Composite"), "JSON codegen: the external function calls a function that is not a composite");
      node.name = f->attrs.GetString("Composite");
      std::vector<const CallNode*> ops;
      const CallNode* heaviest = nullptr;
      std::string pattern;
      for (const Expr& inner : PostOrder(f->body)) {
        const auto* c = inner->As<CallNode>();
        if (c == nullptr || c->op == nullptr) continue;
        ops.push_back(c);
        pattern += c->op->name + "_";
        if (heaviest == nullptr || c->op->pattern > heaviest->op->pattern) heaviest = c;
      }
      runtime::Check(heaviest != nullptr, "JSON codegen: the composite ", node.name, " holds no op");
      ops.insert(ops.begin(), heaviest);
      for (const CallNode* c : ops) {
        for (auto& [key, values] : RelayAttrsOf(*c)) node.attrs.emplace(key, std::move(values));
      }
      node.attrs["PartitionedFromPattern"] = {pattern};
    }
    for (const Expr& arg : call->args) {
      const auto& part = entries_.at(arg.get());
      node.inputs.insert(node.inputs.end(), part.begin(), part.end());
    }
    entries_[e.get()] = Add(std::move(node), e->type());
  }

  std::string const_prefix_;
  JsonSubgraph result_;
  std::unordered_map<const ExprNode*, std::vector<runtime::JsonEntry>> entries_;
};

class JsonExportModule final : public runtime::ModuleNode {
 public:
  JsonExportModule(std::string type_key, std::string symbol, std::string graph_json,
                   std::vector<std::string> const_names)
      : type_key_(std::move(type_key)), symbol_(std::move(symbol)), graph_json_(std::move(graph_json)),
        const_names_(std::move(const_names)) {}
  const char* type_key() const override { return type_key_.c_str(); }
  bool IsBinarySerializable() const override { return true; }
  void SaveToBinary(runtime::ByteWriter& writer) const override {
    writer.WriteString(symbol_);
    writer.WriteString(graph_json_);
    writer.WriteStringVector(const_names_);
  }
  runtime::PackedFunc GetFunction(const std::string& name) override {
    auto self = std::static_pointer_cast<JsonExportModule>(shared_from_this());
    if (name == "get_symbol") {
      return runtime::PackedFunc([self](const runtime::Args&, runtime::RetValue* r) { r->SetString(self->symbol_); });
    }
    if (name == "get_const_vars") {
      return runtime::PackedFunc([self](const runtime::Args&, runtime::RetValue* r) {
        std::string joined;
        for (const std::string& c : self->const_names_) joined += (joined.empty() ? "" : ",") + c;
        r->SetString(joined);
      });
    }
    return runtime::PackedFunc();
  }

 private:
  std::string type_key_, symbol_, graph_json_;
  std::vector<std::string> const_names_;
};

}  // namespace

runtime::Module JsonModuleForExport(const std::string& type_key, const std::string& symbol,
                                    const std::string& graph_json, std::vector<std::string> const_names) {
  return runtime::Module(std::make_shared<JsonExportModule>(type_key, symbol, graph_json, std::move(const_names)));
}

JsonSubgraph SerializeToJson(const Expr& function, const std::string& const_prefix) {
  const auto* f = function->As<FunctionNode>();
  runtime::CheckInternal(f != nullptr, "JSON codegen: expected a function");
  return Serializer(const_prefix).Run(*f);
}

}  // namespace kiln::backend
