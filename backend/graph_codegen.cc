// Turning the main function into graph nodes, entries, parameters and operator functions.
#include "backend/graph_codegen.h"

#include <algorithm>
#include <map>
#include <set>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "backend/memory_planner.h"
#include "backend/run_conditions.h"
#include "ir/text.h"
#include "runtime/error.h"

namespace kiln::backend {

using namespace ir;

namespace {

// "tvmgen_default_fused_nn_conv2d_add_nn_relu" from the ops of the function, in order.
std::string BaseSymbol(const FunctionNode& f, const std::string& module_name) {
  std::string name = "tvmgen_" + module_name + "_fused";
  for (const Expr& e : PostOrder(f.body)) {
    const auto* call = e->As<CallNode>();
    if (call == nullptr || call->op == nullptr) continue;
    std::string op = call->op->name;
    for (char& ch : op) {
      if (ch == '.') ch = '_';
    }
    if (name.size() + op.size() > 80) break;  // keep symbols readable, as TVM does
    name += "_" + op;
  }
  return name;
}

const OpRef kIfThenElse("if_then_else");
const OpRef kReshape("reshape"), kSqueeze("squeeze"), kExpandDims("expand_dims");

// Whether `f` only reshapes its one parameter (reshape, squeeze, expand_dims): its result is the
// parameter's bytes, so its call can be a __nop whose output shares the argument's storage.
bool ReshapesOnly(const FunctionNode& f) {
  if (f.params.size() != 1 || !f.type().is_tensor() || !f.params[0]->type().is_tensor()) return false;
  const TensorType &in = f.params[0]->type().tensor(), &out = f.type().tensor();
  if (in.dtype != out.dtype || in.NumBytes() != out.NumBytes()) return false;
  for (const Expr& e : PostOrder(f.body)) {
    if (e->kind() == ExprKind::kVar) continue;
    const auto* call = e->As<CallNode>();
    if (call == nullptr || !IsAnyOf(call->op, {&kReshape, &kSqueeze, &kExpandDims})) return false;
  }
  return f.body->kind() != ExprKind::kVar;
}

// Which parameters a function that is one if_then_else of its parameters (FuseOps never fuses
// it) selects with; nullopt for any other function.
std::optional<SelectInputs> SelectOf(const FunctionNode& f) {
  const auto* call = f.body->As<CallNode>();
  if (call == nullptr || !kIfThenElse.Is(call->op)) return std::nullopt;
  std::vector<size_t> slots;
  for (const Expr& arg : call->args) {
    auto param = std::find(f.params.begin(), f.params.end(), arg);
    if (param == f.params.end()) return std::nullopt;
    slots.push_back(static_cast<size_t>(param - f.params.begin()));
  }
  return SelectInputs{slots[0], slots[1], slots[2]};
}

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string module_name) : module_name_(std::move(module_name)) {}

  GraphCodegenResult Build(const FunctionNode& main) {
    std::vector<bool> batched_params(main.params.size(), false);
    if (main.attrs.Has(attr::kBatchDim)) {
      const std::vector<int64_t>& range = main.attrs.GetInts(attr::kBatchRange);
      result_.graph.batch = {main.attrs.GetString(attr::kBatchDim), range.at(0), range.at(1)};
      for (int64_t index : main.attrs.GetInts(attr::kBatchInputs)) batched_params.at(static_cast<size_t>(index)) = true;
    }
    for (size_t i = 0; i < main.params.size(); ++i) {
      AddInput(main.params[i], main.params[i]->As<VarNode>()->name, batched_params[i]);
    }
    CollectReturned(main.body);
    for (const Expr& e : PostOrder(main.body)) Visit(e);
    for (const Entry& head : EntriesOf(main.body)) result_.graph.heads.push_back({head.node, head.index, 0});
    if (main.attrs.Has(attr::kOutputTrim)) {
      const std::vector<int64_t>& trims = main.attrs.GetInts(attr::kOutputTrim);
      for (size_t i = 0; i + 2 < trims.size(); i += 3) {
        result_.graph.output_trims.push_back({static_cast<uint32_t>(trims[i]), static_cast<uint32_t>(trims[i + 1]),
                                              static_cast<uint32_t>(trims[i + 2])});
      }
    }
    if (main.attrs.Has(attr::kOutputShapes)) {
      const std::vector<int64_t>& pairs = main.attrs.GetInts(attr::kOutputShapes);
      for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
        result_.graph.output_trims.push_back(
            {static_cast<uint32_t>(pairs[i]), static_cast<uint32_t>(pairs[i + 1]), 0, true});
      }
    }
    runtime::Graph& g = result_.graph;
    if (g.has_batch()) g.batched_entries = batched_entries_;
    g.node_row_ptr.push_back(0);
    for (const runtime::GraphNode& node : g.nodes) g.node_row_ptr.push_back(g.node_row_ptr.back() + node.num_outputs);
    for (const runtime::OutputTrim& trim : g.output_trims) {
      runtime::Check(!trim.whole_shape || !g.has_batch() || !g.batched_entries[g.EntryId(g.heads[trim.output])],
                     "output ", trim.output, " has a shape that input values decide at run time and holds the ",
                     "batch's samples; kiln runs either, not both");
    }
    return std::move(result_);
  }

  std::vector<ir::TensorType>& entry_types() { return entry_types_; }
  const std::map<uint32_t, SelectInputs>& selects() const { return selects_; }

 private:
  struct Entry {
    uint32_t node;
    uint32_t index;
  };

  std::vector<Entry> EntriesOf(const Expr& e) {
    if (const auto* tuple = e->As<TupleNode>()) {
      std::vector<Entry> all;
      for (const Expr& field : tuple->fields) {
        std::vector<Entry> part = EntriesOf(field);
        all.insert(all.end(), part.begin(), part.end());
      }
      return all;
    }
    if (const auto* item = e->As<TupleGetItemNode>()) {
      std::vector<Entry> all = EntriesOf(item->tuple);
      return {all.at(item->index)};
    }
    auto it = entries_.find(e.get());
    runtime::CheckInternal(it != entries_.end(), "graph codegen: a value of the main function has no node");
    return it->second;
  }

  // `batched` per output: whether it holds the batch's samples (frontend/batch_samples.h); such an
  // entry holds the largest batch (axis 0 times its maximum).
  uint32_t AddNode(runtime::GraphNode node, const std::vector<TensorType>& outputs, const std::vector<bool>& batched) {
    uint32_t id = static_cast<uint32_t>(result_.graph.nodes.size());
    node.num_outputs = static_cast<uint32_t>(outputs.size());
    result_.graph.nodes.push_back(std::move(node));
    first_entries_.push_back(static_cast<uint32_t>(batched_entries_.size()));
    std::vector<Entry> entries;
    for (uint32_t k = 0; k < outputs.size(); ++k) {
      entries.push_back({id, k});
      TensorType type = outputs[k];
      if (batched[k]) type.shape.at(0) *= result_.graph.batch.max;
      result_.graph.shapes.push_back(type.shape);
      result_.graph.dtypes.push_back(type.dtype);
      entry_types_.push_back(type);
      batched_entries_.push_back(batched[k]);
    }
    current_entries_ = entries;
    return id;
  }

  void AddInput(const Expr& e, const std::string& name, bool batched = false) {
    runtime::Check(e->type().is_tensor(), "graph codegen: input '", name, "' is a tuple; inputs must be tensors");
    runtime::Check(!batched || e->type().tensor().ndim() > 0, "graph codegen: input '", name,
                   "' is a scalar; it has no axis 0 to hold the batch");
    runtime::GraphNode node;
    node.op = "null";
    node.name = name;
    uint32_t id = AddNode(std::move(node), {e->type().tensor()}, {batched});
    result_.graph.arg_nodes.push_back(id);
    entries_[e.get()] = current_entries_;
  }

  void Visit(const Expr& e) {
    switch (e->kind()) {
      case ExprKind::kVar:
        runtime::CheckInternal(entries_.count(e.get()) != 0, "graph codegen: variable %", e->As<VarNode>()->name,
                               " is not a parameter of the main function");
        return;
      case ExprKind::kConstant: {
        std::string name = "p" + std::to_string(result_.params.size());
        result_.params.emplace_back(name, e->As<ConstantNode>()->value);
        AddInput(e, name);
        return;
      }
      case ExprKind::kFunction:
        return;  // compiled when called
      case ExprKind::kTuple:
      case ExprKind::kTupleGetItem:
        return;  // resolved to entries where used
      case ExprKind::kCall:
        VisitCall(e);
        return;
    }
  }

  void VisitCall(const Expr& e) {
    const auto* call = e->As<CallNode>();
    runtime::CheckInternal(call->function != nullptr, "graph codegen: the main function calls op ",
                           call->op ? call->op->name : "?", " directly; run FuseOps first");
    const auto* f = call->function->As<FunctionNode>();
    // Which arguments hold the batch's samples, and so which outputs do: a function of samples
    // computes samples (the importer checked that every op keeps them apart).
    std::vector<bool> batched_args;
    bool any_batched = false;
    for (const Expr& arg : call->args) {
      bool batched = false;
      for (const Entry& entry : EntriesOf(arg)) batched = batched || batched_entries_[EntryIndex(entry)];
      batched_args.push_back(batched);
      any_batched = any_batched || batched;
    }
    std::vector<bool> batched_outputs;
    if (any_batched) {
      if (IsExternal(call->function)) {
        runtime::Fail("the batch dimension cannot be decided at run time in a function of the external codegen '",
                      f->attrs.GetString(attr::kCompiler), "' (fixed shapes only): compile without --byoc, or with a ",
                      "fixed batch");
      }
      batched_outputs.assign(f->type().is_tuple() ? f->type().fields().size() : 1, true);
    }
    runtime::GraphNode node;
    node.op = "tvm_op";
    if (IsNop(e)) {
      // The argument's memory seen with this shape: TVM's executor and kiln's run nothing for a
      // __nop, and AssignStorage gives its output the argument's storage id.
      node.func_name = "__nop";
      node.name = BaseSymbol(*f, module_name_) + "_nop";
      node.attrs[runtime::kImplementationAttr] = "view";
    } else {
      node.func_name = SymbolFor(call->function, batched_args, batched_outputs);
      node.name = node.func_name;
    }
    node.attrs["func_name"] = node.func_name;
    node.attrs["flatten_data"] = "0";
    // What the function computes, for `kiln inspect` (readers ignore extra string attributes).
    std::string ops;
    OpPattern anchor = OpPattern::kElemWise;
    for (const Expr& inner : PostOrder(f->body)) {
      const auto* op_call = inner->As<CallNode>();
      if (op_call == nullptr) continue;
      if (op_call->op == nullptr) {  // in an external function: a composite (dnnl.conv2d_bias_relu)
        const Attrs& composite = op_call->function->As<FunctionNode>()->attrs;
        if (composite.Has("Composite")) ops += (ops.empty() ? "" : ",") + composite.GetString("Composite");
        continue;
      }
      ops += (ops.empty() ? "" : ",") + op_call->op->name;
      anchor = std::max(anchor, op_call->op->pattern);
    }
    node.attrs["kiln_ops"] = ops;
    node.attrs["kiln_pattern"] = OpPatternName(anchor);
    for (const Expr& arg : call->args) {
      for (const Entry& entry : EntriesOf(arg)) node.inputs.push_back({entry.node, entry.index, 0});
    }
    node.attrs["num_inputs"] = std::to_string(node.inputs.size());
    std::vector<TensorType> outputs;
    if (f->type().is_tuple()) {
      for (const Type& t : f->type().fields()) {
        runtime::Check(t.is_tensor(), "graph codegen: ", node.func_name, " returns a nested tuple");
        outputs.push_back(t.tensor());
      }
    } else {
      outputs.push_back(f->type().tensor());
    }
    node.attrs["num_outputs"] = std::to_string(outputs.size());
    std::optional<SelectInputs> select = SelectOf(*f);
    if (!any_batched) batched_outputs.assign(outputs.size(), false);
    std::vector<runtime::GraphEntryRef> inputs = node.inputs;
    uint32_t id = AddNode(std::move(node), outputs, batched_outputs);
    if (select) selects_[id] = *select;
    entries_[e.get()] = current_entries_;
    RecordSizedOutput(*f, inputs, id);
  }

  // An op whose result's field 0 the executor sizes (OpDef::sized_by_input) is the function's one
  // call, on its parameters: the node's output 0 sized by the node's input that parameter is.
  void RecordSizedOutput(const FunctionNode& f, const std::vector<runtime::GraphEntryRef>& inputs, uint32_t id) {
    for (const Expr& inner : PostOrder(f.body)) {
      const auto* op_call = inner->As<CallNode>();
      if (op_call == nullptr || op_call->op == nullptr || op_call->op->sized_by_input < 0) continue;
      const Expr& shape = op_call->args.at(static_cast<size_t>(op_call->op->sized_by_input));
      auto param = std::find(f.params.begin(), f.params.end(), shape);
      runtime::CheckInternal(param != f.params.end() && f.params.size() == inputs.size(), "graph codegen: ",
                             op_call->op->name, "'s shape is not a parameter of its function");
      result_.graph.sized_entries.push_back(
          {first_entries_[id], first_entries_[inputs[param - f.params.begin()].node_id] +
                                   inputs[param - f.params.begin()].index});
    }
  }

  uint32_t EntryIndex(const Entry& entry) const { return first_entries_[entry.node] + entry.index; }

  // The values main returns (its body, a tuple's fields, the fields of tuples it returns items of).
  void CollectReturned(const Expr& e) {
    returned_.insert(e.get());
    if (const auto* tuple = e->As<TupleNode>()) {
      for (const Expr& field : tuple->fields) CollectReturned(field);
    }
    if (const auto* item = e->As<TupleGetItemNode>()) returned_items_.insert({item->tuple.get(), item->index});
  }

  // Whether main returns `e`: itself, or as a field of a tuple it returns whole or by item.
  bool Returned(const Expr& e) const {
    const auto* item = e->As<TupleGetItemNode>();
    return returned_.count(e.get()) != 0 ||
           (item != nullptr && (returned_.count(item->tuple.get()) != 0 ||
                                returned_items_.count({item->tuple.get(), item->index}) != 0));
  }

  // Whether call `e` is a __nop: a host function that only reshapes an intermediate value that
  // main does not return (a graph input's or parameter's memory set_input and load_params may
  // replace or share, a returned value's set_output_zero_copy: TVM's executor repoints only that
  // entry, not the __nop's output beside it), and whose result main does not return either.
  bool IsNop(const Expr& e) {
    const auto* call = e->As<CallNode>();
    if (IsExternal(call->function) || !ReshapesOnly(*call->function->As<FunctionNode>()) || call->args.size() != 1 ||
        Returned(e) || Returned(call->args[0])) {
      return false;
    }
    std::vector<Entry> in = EntriesOf(call->args[0]);
    return in.size() == 1 && !result_.graph.nodes[in[0].node].is_input();
  }

  // One symbol per distinct function (functions that print the same and take the batch in the
  // same arguments are the same); an external function's is its global_symbol.
  std::string SymbolFor(const Expr& function, const std::vector<bool>& batched_args,
                        const std::vector<bool>& batched_outputs) {
    if (IsExternal(function)) return ExternalSymbol(function);
    std::string key = PrintFunction(function);
    std::vector<bool> batched = batched_args;  // per argument, parameters then outputs
    batched.insert(batched.end(), batched_outputs.begin(), batched_outputs.end());
    if (!batched_outputs.empty()) {
      key += "\nbatched:";
      for (bool b : batched) key += b ? '1' : '0';
    }
    auto it = symbols_.find(key);
    if (it != symbols_.end()) return it->second;
    std::string base = BaseSymbol(*function->As<FunctionNode>(), module_name_);
    int& count = name_counts_[base];
    std::string symbol = count == 0 ? base : base + "_" + std::to_string(count);
    ++count;
    symbols_[key] = symbol;
    result_.functions.push_back({symbol, function, batched_outputs.empty() ? std::vector<bool>{} : batched});
    return symbol;
  }

  std::string ExternalSymbol(const Expr& function) {
    const Attrs& attrs = function->As<FunctionNode>()->attrs;
    runtime::Check(attrs.Has(attr::kGlobalSymbol), "graph codegen: a function for the external codegen '",
                   attrs.GetString(attr::kCompiler), "' has no ", attr::kGlobalSymbol, " attribute");
    const std::string& symbol = attrs.GetString(attr::kGlobalSymbol);
    auto [it, added] = external_symbols_.emplace(symbol, function);
    if (added) {
      result_.external_functions.push_back({symbol, function, {}});
    } else {
      runtime::Check(it->second == function || PrintFunction(it->second) == PrintFunction(function),
                     "graph codegen: two different external functions have the symbol '", symbol, "'");
    }
    return symbol;
  }

  std::string module_name_;
  GraphCodegenResult result_;
  std::map<uint32_t, SelectInputs> selects_;
  std::map<std::string, Expr> external_symbols_;
  std::unordered_map<const ExprNode*, std::vector<Entry>> entries_;
  std::vector<Entry> current_entries_;
  std::map<std::string, std::string> symbols_;
  std::map<std::string, int> name_counts_;
  std::vector<TensorType> entry_types_;
  std::vector<bool> batched_entries_;     // per entry: whether it holds the batch's samples
  std::unordered_set<const ExprNode*> returned_;  // values main returns
  std::set<std::pair<const ExprNode*, int>> returned_items_;  // (tuple, index) of items it returns
  std::vector<uint32_t> first_entries_;  // per node: the entry of its output 0
};

// Storage ids from the liveness planner: inputs, parameters and outputs keep buffers of their
// own; intermediate tensors share buffers when their lifetimes do not overlap.
void AssignStorage(GraphCodegenResult& result, const std::vector<TensorType>& types) {
  runtime::Graph& g = result.graph;
  std::vector<PlannedTensor> tensors(g.shapes.size());
  int step = 0;
  for (uint32_t n = 0; n < g.nodes.size(); ++n) {
    const runtime::GraphNode& node = g.nodes[n];
    for (uint32_t k = 0; k < node.num_outputs; ++k) {
      PlannedTensor& t = tensors[g.EntryId(n, k)];
      t.bytes = static_cast<int64_t>(types[g.EntryId(n, k)].NumBytes());
      t.defined_at = node.is_input() ? -1 : step;
      t.last_used_at = t.defined_at;
      t.external = node.is_input();
    }
    if (node.is_input()) continue;
    for (const runtime::GraphEntryRef& in : node.inputs) {
      PlannedTensor& t = tensors[g.EntryId(in)];
      t.last_used_at = std::max(t.last_used_at, step);
    }
    if (node.func_name == "__nop") tensors[g.EntryId(n, 0)].alias_of = static_cast<int>(g.EntryId(node.inputs.at(0)));
    ++step;
  }
  for (const runtime::GraphEntryRef& head : g.heads) tensors[g.EntryId(head)].external = true;
  MemoryPlan plan = PlanMemory(tensors);
  std::vector<bool> external_storage(plan.storage_bytes.size(), false);
  for (size_t e = 0; e < tensors.size(); ++e) {
    g.storage_ids.push_back(static_cast<uint32_t>(plan.storage_ids[e]));
    if (tensors[e].external) {
      external_storage[plan.storage_ids[e]] = true;
    } else {
      result.unshared_bytes += tensors[e].bytes;
    }
  }
  for (size_t sid = 0; sid < plan.storage_bytes.size(); ++sid) {
    if (!external_storage[sid]) result.planned_bytes += plan.storage_bytes[sid];
  }
}

}  // namespace

GraphCodegenResult GenerateGraph(const Expr& main, const std::string& module_name) {
  const auto* f = main->As<FunctionNode>();
  runtime::CheckInternal(f != nullptr, "graph codegen: expected the main function");
  GraphBuilder builder(module_name);
  GraphCodegenResult result = builder.Build(*f);
  AddRunConditions(result.graph, builder.selects());
  for (const OperatorFunction& external : result.external_functions) {
    for (const OperatorFunction& host : result.functions) {
      runtime::Check(host.symbol != external.symbol, "graph codegen: the external function symbol '",
                     external.symbol, "' is also the symbol of a compiled operator");
    }
  }
  AssignStorage(result, builder.entry_types());
  return result;
}

}  // namespace kiln::backend
