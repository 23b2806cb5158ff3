// Lowering a primitive function to its plan: buffers for the values that need one, and a step per
// op or group of ops, in the function's order. Ops after a kernel that the kernel applies as its
// epilogue join its step; runs of elementwise ops of one shape share a loop.
#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

#include "backend/codegen/lowering.h"
#include "ir/ops/infer_util.h"
#include "runtime/error.h"
#include "strategy/config.h"
#include "transform/pattern.h"

namespace kiln::backend {

using namespace ir;

namespace {

// One tensor a function returns: result `index` of value `value`.
struct OutputRef {
  Expr value;
  size_t index;
};

// The tensors a function returns, in output order (a tuple's fields, a tuple-valued call's
// results, or the single tensor).
std::vector<OutputRef> OutputsOf(const Expr& body) {
  std::vector<OutputRef> outputs;
  auto add = [&](const Expr& e) {
    if (const auto* item = e->As<TupleGetItemNode>()) {
      outputs.push_back({item->tuple, static_cast<size_t>(item->index)});
    } else if (e->type().is_tuple()) {
      for (size_t r = 0; r < e->type().fields().size(); ++r) outputs.push_back({e, r});
    } else {
      outputs.push_back({e, 0});
    }
  };
  if (const auto* tuple = body->As<TupleNode>()) {
    for (const Expr& field : tuple->fields) add(field);
  } else {
    add(body);
  }
  return outputs;
}

std::vector<TensorType> ResultTypes(const Expr& e) {
  if (!e->type().is_tuple()) return {e->type().tensor()};
  std::vector<TensorType> types;
  for (const Type& t : e->type().fields()) types.push_back(t.tensor());
  return types;
}

// Gather loops copy runs of at least this many elements; shorter ones are left to the ops' own
// loops, whose inner loops need no division per element.
constexpr int64_t kMinGatherRun = 8;

const OpRef kConcatenate("concatenate");
const OpRef kMultiply("multiply");
const OpRef kSigmoid("sigmoid");

// Lowers one function; the state of the walk over its values in order.
class Lowerer {
 public:
  Lowerer(const std::string& symbol, const Expr& function, const target::Target& target, bool extents_vary)
      : f_(*function->As<FunctionNode>()), target_(target) {
    plan_.symbol = symbol;
    plan_.function = function;
    plan_.extents_vary = extents_vary;
    if (extents_vary) plan_.parallel_elements = strategy::ConfigFor(target_).parallel_elements;
  }

  Plan Run() {
    std::vector<OutputRef> outputs = OutputsOf(f_.body);
    for (size_t i = 0; i < f_.params.size(); ++i) {
      values_[f_.params[i].get()] = {Add(PlanBuffer::kParam, f_.params[i]->type().tensor())};
    }
    for (size_t k = 0; k < outputs.size(); ++k) {
      const Type& t = outputs[k].value->type();
      BufferId id = Add(PlanBuffer::kOutput, t.is_tuple() ? t.fields()[outputs[k].index].tensor() : t.tensor());
      const auto* call = outputs[k].value->As<CallNode>();
      plan_.buffers[id].sized_at_run_time =
          call != nullptr && call->op != nullptr && call->op->sized_by_input >= 0 && outputs[k].index == 0;
      output_slots_.emplace(std::make_pair(outputs[k].value.get(), outputs[k].index), id);  // the first one wins
      returned_.insert(outputs[k].value.get());
    }
    order_ = PostOrder(f_.body);
    for (const Expr& e : order_) {
      for (const Expr& input : Inputs(e)) readers_[input.get()].push_back(e);
    }
    for (const Expr& e : order_) {
      if (IsGatherOp(e) && !InsideGatherTree(e)) PlanGatherTree(e);
    }
    for (const Expr& e : order_) PlaceParts(e);
    for (size_t position = 0; position < order_.size(); ++position) {
      const Expr& e = order_[position];
      if (e->kind() == ExprKind::kVar || e->kind() == ExprKind::kTuple || fused_.count(e.get()) != 0) continue;
      if (gathered_.count(e.get()) != 0) continue;  // computed by its tree's gather loop
      if (PartsInPlace(e)) {  // its parts were computed where they lie in its output
        values_[e.get()] = {output_slots_.at(std::make_pair(e.get(), size_t{0}))};
        continue;
      }
      if (std::optional<ElementwiseLoop::Operand> joined = JoinedInPlace(e)) {  // read where its parts lie
        joined_in_place_.emplace(e.get(), std::move(*joined));
        continue;
      }
      if (auto root = gather_runs_.find(e.get()); root != gather_runs_.end()) {
        LowerGatherLoop(e, root->second);
        continue;
      }
      if (const auto* item = e->As<TupleGetItemNode>()) {
        values_[e.get()] = {values_.at(item->tuple.get()).at(item->index)};
        continue;
      }
      const auto* call = e->As<CallNode>();
      runtime::CheckInternal(call != nullptr && call->op != nullptr, "lowering ", plan_.symbol,
                             ": it holds something other than op calls (constants must be parameters)");
      const Lowering* lowering = FindLowering(*call->op);
      runtime::CheckInternal(lowering != nullptr, "op ", call->op->name, " has no lowering");
      if (lowering->elementwise()) {
        position = LowerElementwiseRun(position) - 1;
      } else if (lowering->kernel != nullptr) {
        LowerKernelCall(e, *lowering);
      } else {
        std::vector<BufferId> inputs = ArgumentBuffers(*call);
        if (lowering->copy && IsView(e)) {  // the same bytes: no step where its argument lies in place
          auto slot = output_slots_.find(std::make_pair(e.get(), size_t{0}));
          if (slot == output_slots_.end()) {
            values_[e.get()] = {View(inputs.at(0), e->type().tensor())};
            continue;
          }
          if (Root(inputs.at(0)) == slot->second) {  // written there by its producer (Allocate)
            values_[e.get()] = {slot->second};
            continue;
          }
        }
        std::vector<BufferId> results = AllocateResults(e, e);
        if (lowering->copy) {
          plan_.steps.push_back(Copy{inputs.at(0), results.at(0)});
        } else {
          // Large by its output or, for a reduction (global pooling), by what it reads.
          bool large = e->type().is_tensor() && SplitAcrossThreads(e->type().tensor());
          for (const Expr& arg : call->args) {
            large = large || (lowering->reduces && arg->type().is_tensor() && SplitAcrossThreads(arg->type().tensor()));
          }
          plan_.steps.push_back(LoopOp{call, inputs, results, large});
        }
      }
    }
    // Outputs not computed in place (parameters returned as they are, a value returned twice,
    // tuple items): copy them.
    for (size_t k = 0; k < outputs.size(); ++k) {
      BufferId from = values_.at(outputs[k].value.get()).at(outputs[k].index);
      BufferId to = plan_.Output(static_cast<int>(k));
      if (from != to) plan_.steps.push_back(Copy{from, to});
    }
    return std::move(plan_);
  }

 private:
  BufferId Add(PlanBuffer::Kind kind, const TensorType& type) {
    plan_.buffers.push_back({kind, plan_.NumOf(kind), type});
    return static_cast<BufferId>(plan_.buffers.size() - 1);
  }

  // The buffer of result `result` of `value`: the output it is returned as, its place in a
  // concatenation's output (PlaceParts), the output that the one reshape reading it is returned as
  // (seen with its type), or new workspace.
  BufferId Allocate(const Expr& value, size_t result, const TensorType& type) {
    auto slot = output_slots_.find(std::make_pair(value.get(), result));
    if (slot != output_slots_.end()) return slot->second;
    if (auto part = placed_.find(value.get()); part != placed_.end() && result == 0) {
      return View(part->second.first, type, part->second.second);
    }
    auto it = readers_.find(value.get());
    if (result == 0 && value->type().is_tensor() && it != readers_.end() && it->second.size() == 1) {
      const Expr& reader = it->second[0];
      auto reader_slot = output_slots_.find(std::make_pair(reader.get(), size_t{0}));
      if (reader_slot != output_slots_.end() && IsView(reader)) return View(reader_slot->second, type);
    }
    return Add(PlanBuffer::kWorkspace, type);
  }

  // Whether `e` is a reshape-kind op (the same bytes; Bytes lowering) of one tensor into one of its
  // dtype that no gather loop computes: its result can be its argument's buffer.
  bool IsView(const Expr& e) const {
    const auto* call = e->As<CallNode>();
    if (call == nullptr || call->op == nullptr || call->args.empty() || !e->type().is_tensor()) return false;
    const Lowering* lowering = FindLowering(*call->op);
    if (lowering == nullptr || !lowering->copy || gathered_.count(e.get()) != 0 || gather_runs_.count(e.get()) != 0) {
      return false;
    }
    const Type& arg = call->args[0]->type();
    return arg.is_tensor() && arg.tensor().dtype == e->type().tensor().dtype &&
           arg.tensor().NumBytes() == e->type().tensor().NumBytes();
  }

  // The buffer whose memory `b` is.
  BufferId Root(BufferId b) const {
    while (plan_.buffers[b].view_of >= 0) b = plan_.buffers[b].view_of;
    return b;
  }

  // A workspace buffer of `type` over the bytes of `base`, from its element `offset` on.
  BufferId View(BufferId base, const TensorType& type, int64_t offset = 0) {
    BufferId view = Add(PlanBuffer::kWorkspace, type);
    plan_.buffers[view].view_of = base;
    plan_.buffers[view].view_offset = offset;
    return view;
  }

  // Buffers for the results of `op`, which `value` (op itself, or the last op of its epilogue) stands for.
  std::vector<BufferId> AllocateResults(const Expr& op, const Expr& value) {
    std::vector<BufferId> results;
    std::vector<TensorType> types = ResultTypes(op);
    for (size_t r = 0; r < types.size(); ++r) results.push_back(Allocate(value, r, types[r]));
    values_[value.get()] = results;
    values_[op.get()] = results;
    return results;
  }

  std::vector<BufferId> ArgumentBuffers(const CallNode& call) const {
    std::vector<BufferId> buffers;
    for (const Expr& arg : call.args) buffers.push_back(values_.at(arg.get()).at(0));
    return buffers;
  }

  void LowerKernelCall(const Expr& e, const Lowering& lowering) {
    const auto& call = *e->As<CallNode>();
    KernelOperands operands{call, strategy::ConfigFor(target_), ArgumentBuffers(call), {}, {}, {}, {}};
    for (BufferId b : operands.inputs) operands.input_types.push_back(plan_.buffers[b].type);
    // Ops the kernel applies as its epilogue: the result is that of the last of them.
    std::vector<Expr> chain;
    if (lowering.epilogue_length != nullptr) {
      std::vector<std::vector<Expr>> links = EpilogueChain(e, &operands.epilogue);
      operands.epilogue.resize(links.empty() ? 0
                                             : lowering.epilogue_length(call, operands.input_types, operands.epilogue));
      links.resize(operands.epilogue.size());
      for (const std::vector<Expr>& link : links) chain.insert(chain.end(), link.begin(), link.end());
    }
    Expr result = chain.empty() ? e : chain.back();
    operands.outputs = AllocateResults(e, result);
    for (BufferId b : operands.outputs) operands.output_types.push_back(plan_.buffers[b].type);
    for (const Expr& member : chain) {
      fused_.insert(member.get());
      values_[member.get()] = operands.outputs;
    }
    KernelCall kernel_call = lowering.kernel(operands);
    if (kernel_call.implementation.empty()) kernel_call.implementation = kernel_call.kernel;
    plan_.steps.push_back(std::move(kernel_call));
  }

  // The value x * sigmoid(x) when `x`'s readers are exactly that sigmoid (read only there) and
  // that multiply; null otherwise.
  const CallNode* SwishOf(const Expr& x, Expr* sigmoid, Expr* multiply) const {
    static const transform::Pattern value = transform::Wildcard();
    static const transform::Pattern sigmoid_of_value = transform::IsOp(kSigmoid, {value});
    static const transform::Pattern swish = transform::IsOp(kMultiply, {value, sigmoid_of_value}).Commutative();
    auto it = readers_.find(x.get());
    if (it == readers_.end() || it->second.size() != 2) return nullptr;
    for (const Expr& reader : it->second) {
      std::optional<transform::Match> match = transform::MatchPattern(swish, reader);
      if (!match || (*match)[value] != x) continue;
      Expr sig = (*match)[sigmoid_of_value];
      auto sig_readers = readers_.find(sig.get());
      if (sig_readers == readers_.end() || sig_readers->second.size() != 1 || returned_.count(sig.get()) != 0) continue;
      *sigmoid = sig;
      *multiply = reader;
      return reader->As<CallNode>();
    }
    return nullptr;
  }

  // The ops that read `anchor`'s result one after another, each the only reader of the one
  // before and none returned before the last, whose other operands are parameters (so they can
  // move up to the anchor), as links: the ops one FusedOp (in `ops`) stands for, its result
  // last. A link is one op, or the sigmoid and multiply of x * sigmoid(x).
  std::vector<std::vector<Expr>> EpilogueChain(const Expr& anchor, std::vector<FusedOp>* ops) const {
    std::vector<std::vector<Expr>> links;
    Expr current = anchor;
    while (returned_.count(current.get()) == 0 && current->type().is_tensor()) {
      Expr sigmoid, multiply;
      if (const CallNode* swish = SwishOf(current, &sigmoid, &multiply)) {
        ops->push_back(FusedOp{swish, std::nullopt, {}, false, true});
        links.push_back({sigmoid, multiply});
        current = multiply;
        continue;
      }
      auto it = readers_.find(current.get());
      if (it == readers_.end() || it->second.size() != 1) break;
      const Expr& next = it->second[0];
      const auto* call = next->As<CallNode>();
      if (call == nullptr || call->op == nullptr || call->args.size() > 2) break;
      FusedOp op{call, std::nullopt, {}, false, false};
      bool ok = true;
      for (size_t i = 0; i < call->args.size() && ok; ++i) {
        if (call->args[i] == current) continue;
        ok = call->args[i]->kind() == ExprKind::kVar && !op.operand;
        if (!ok) break;
        BufferId b = values_.at(call->args[i].get()).at(0);
        op = FusedOp{call, b, plan_.buffers[b].type, i == 0, false};
      }
      if (!ok) break;
      ops->push_back(op);
      links.push_back({next});
      current = next;
    }
    return links;
  }

  // Lowers the run of elementwise ops that starts at order_[begin] as one loop: the ops that
  // follow it in order while each is elementwise, has the first one's output shape, is not in an
  // earlier kernel's epilogue, and reads only values computed before the run or in it. A member
  // gets a buffer only when something outside the run reads it or the function returns it.
  // Returns the position after the run.
  size_t LowerElementwiseRun(size_t begin) {
    const TensorType& shape_type = order_[begin]->type().tensor();
    std::unordered_map<const ExprNode*, int> members;
    ElementwiseLoop loop;
    size_t end = begin;
    for (; end < order_.size(); ++end) {
      const Expr& e = order_[end];
      if (e->kind() == ExprKind::kVar) continue;  // parameters have their buffers
      const auto* call = e->As<CallNode>();
      if (call == nullptr || call->op == nullptr || !FindLowering(*call->op)->elementwise()) break;
      if (fused_.count(e.get()) != 0) break;  // computed in an earlier kernel's epilogue
      if (!e->type().is_tensor() || e->type().tensor().shape != shape_type.shape) break;
      bool ready = true;
      for (const Expr& arg : call->args) {
        ready = ready && (members.count(arg.get()) != 0 || values_.count(arg.get()) != 0 ||
                          joined_in_place_.count(arg.get()) != 0);
      }
      if (!ready) break;
      ElementwiseLoop::Member member{call, {}, std::nullopt};
      for (const Expr& arg : call->args) {
        if (auto inside = members.find(arg.get()); inside != members.end()) {
          member.operands.push_back(ElementwiseLoop::Operand{inside->second, -1, {}, -1});
        } else if (auto joined = joined_in_place_.find(arg.get()); joined != joined_in_place_.end()) {
          member.operands.push_back(joined->second);
        } else {
          member.operands.push_back(ElementwiseLoop::Operand{-1, values_.at(arg.get()).at(0), {}, -1});
        }
      }
      members[e.get()] = static_cast<int>(loop.members.size());
      loop.members.push_back(std::move(member));
    }
    // Buffers for the members read outside the loop or returned.
    for (size_t position = begin; position < end; ++position) {
      const Expr& e = order_[position];
      auto member = members.find(e.get());
      if (member == members.end()) continue;
      bool needed = returned_.count(e.get()) != 0;
      auto it = readers_.find(e.get());
      if (it != readers_.end()) {
        for (const Expr& reader : it->second) needed = needed || members.count(reader.get()) == 0;
      }
      if (needed) {
        BufferId b = Allocate(e, 0, e->type().tensor());
        loop.members[member->second].output = b;
        values_[e.get()] = {b};
      }
    }
    loop.parallel = SplitAcrossThreads(shape_type);
    plan_.steps.push_back(std::move(loop));
    return end;
  }

  // A concatenation that elementwise loops read where its parts lie, as their operand: one not
  // returned, whose readers are all elementwise ops of its shape (so each reads it element for
  // element, never broadcast), joined along an axis other than the last (so the loops' inner runs
  // lie in one part, the part chosen outside them), in a function of fixed extents (the parts'
  // offsets along the axis are written as numbers); nullopt for any other value.
  std::optional<ElementwiseLoop::Operand> JoinedInPlace(const Expr& e) const {
    const auto* call = e->As<CallNode>();
    if (plan_.extents_vary || call == nullptr || !kConcatenate.Is(call->op) || !e->type().is_tensor() ||
        returned_.count(e.get()) != 0) {
      return std::nullopt;
    }
    const std::vector<int64_t>& shape = e->type().tensor().shape;
    const int ndim = static_cast<int>(shape.size());
    int axis = static_cast<int>(call->attrs.GetInt("axis"));
    if (axis < 0) axis += ndim;
    if (axis < 0 || axis >= ndim - 1) return std::nullopt;
    auto readers = readers_.find(e.get());
    if (readers == readers_.end()) return std::nullopt;
    for (const Expr& reader : readers->second) {
      const auto* r = reader->As<CallNode>();
      if (r == nullptr || r->op == nullptr || !FindLowering(*r->op)->elementwise() || !reader->type().is_tensor() ||
          reader->type().tensor().shape != shape || fused_.count(reader.get()) != 0) {
        return std::nullopt;
      }
    }
    ElementwiseLoop::Operand joined;
    joined.axis = axis;
    for (const Expr& arg : call->args) {
      auto value = values_.find(arg.get());
      if (value == values_.end() || !arg->type().is_tensor()) return std::nullopt;
      joined.parts.push_back(value->second.at(0));
    }
    return joined;
  }

  // A returned concatenation whose axes before the joined one have extent 1 is its parts one after
  // another in its output: where every part is computed by a step of this function that writes a
  // buffer of its own (an op's result, read only by the concatenation and not returned; not a
  // reshape's view), each part is given its range of the output as its buffer, and the
  // concatenation copies nothing (FuseOps puts the convolutions whose results SqueezeNet's fire
  // modules join in the function of their concatenation). Not in a function of varying extents.
  void PlaceParts(const Expr& e) {
    const auto* call = e->As<CallNode>();
    if (plan_.extents_vary || call == nullptr || call->op == nullptr || !kConcatenate.Is(call->op) ||
        !e->type().is_tensor() || gathered_.count(e.get()) != 0 || gather_runs_.count(e.get()) != 0) {
      return;
    }
    auto slot = output_slots_.find(std::make_pair(e.get(), size_t{0}));
    if (slot == output_slots_.end() || !PartsFollowOneAnother(e->type().tensor(), call->attrs)) return;
    for (const Expr& arg : call->args) {
      const auto* producer = arg->As<CallNode>();
      auto readers = readers_.find(arg.get());
      if (producer == nullptr || producer->op == nullptr || !arg->type().is_tensor() || readers == readers_.end() ||
          readers->second.size() != 1 || returned_.count(arg.get()) != 0 || IsView(arg)) {
        return;
      }
    }
    int64_t offset = 0;
    for (const Expr& arg : call->args) {
      placed_[arg.get()] = {slot->second, offset};
      offset += arg->type().tensor().NumElements();
    }
  }

  // Whether concatenation `e`'s parts were computed in its output (PlaceParts).
  bool PartsInPlace(const Expr& e) const {
    const auto* call = e->As<CallNode>();
    if (call == nullptr || call->op == nullptr || !kConcatenate.Is(call->op) || call->args.empty() ||
        placed_.count(call->args[0].get()) == 0) {
      return false;
    }
    for (const Expr& arg : call->args) {
      const auto& [output, offset] = placed_.at(arg.get());
      const PlanBuffer& buffer = plan_.buffers[values_.at(arg.get()).at(0)];
      runtime::CheckInternal(buffer.view_of == output && buffer.view_offset == offset, "lowering ", plan_.symbol,
                             ": a part of a concatenation was not computed in its place in the output");
    }
    return true;
  }

  // ---- Gather loops ------------------------------------------------------------------------------

  // A data-movement op that a gather loop computes (GatherRunBound).
  bool IsGatherOp(const Expr& e) const {
    const auto* call = e->As<CallNode>();
    return call != nullptr && call->op != nullptr && e->type().is_tensor() && GatherRunBound(*call) > 0;
  }

  // A gather op read once, by another, and not returned: inside the tree of its reader.
  bool InsideGatherTree(const Expr& e) const {
    if (!IsGatherOp(e) || returned_.count(e.get()) != 0) return false;
    auto it = readers_.find(e.get());
    return it != readers_.end() && it->second.size() == 1 && IsGatherOp(it->second[0]);
  }

  // `e` and the gather ops inside its tree, into `members`; `run` becomes the gcd of their bounds.
  void CollectGatherTree(const Expr& e, std::vector<const ExprNode*>* members, int64_t* run) const {
    members->push_back(e.get());
    *run = std::gcd(*run, GatherRunBound(*e->As<CallNode>()));
    for (const Expr& arg : e->As<CallNode>()->args) {
      if (InsideGatherTree(arg)) CollectGatherTree(arg, members, run);
    }
  }

  // Makes `root` and the ops inside its tree one gather loop when they are two ops or more and
  // their runs are long enough; otherwise tries the subtrees under it.
  void PlanGatherTree(const Expr& root) {
    std::vector<const ExprNode*> members;
    int64_t run = root->type().tensor().NumElements();
    if (run == 0) return;
    CollectGatherTree(root, &members, &run);
    if (members.size() >= 2 && run >= kMinGatherRun) {
      gather_runs_[root.get()] = run;
      gathered_.insert(members.begin() + 1, members.end());
      return;
    }
    for (const Expr& arg : root->As<CallNode>()->args) {
      if (InsideGatherTree(arg)) PlanGatherTree(arg);
    }
  }

  // The node of `e` in `loop` (a call of the tree, or a leaf: a buffer already computed).
  int AddGatherNode(const Expr& e, bool root, GatherLoop* loop) {
    int index = static_cast<int>(loop->nodes.size());
    loop->nodes.emplace_back();
    if (!root && gathered_.count(e.get()) == 0) {
      loop->nodes[index].leaf = values_.at(e.get()).at(0);
      return index;
    }
    const auto* call = e->As<CallNode>();
    loop->nodes[index].call = call;
    for (const Expr& arg : call->args) {
      int input = AddGatherNode(arg, false, loop);
      loop->nodes[index].inputs.push_back(input);
    }
    return index;
  }

  void LowerGatherLoop(const Expr& root, int64_t run) {
    GatherLoop loop;
    AddGatherNode(root, true, &loop);
    loop.output = AllocateResults(root, root).at(0);
    loop.run = run;
    loop.parallel = SplitAcrossThreads(root->type().tensor());
    plan_.steps.push_back(std::move(loop));
  }

  // Whether a loop writing (or, for a reduction, reading) `values` is split across the runtime's
  // threads: when there are enough (the kernel configuration's parallel_elements). Not a question
  // of the target's cores: the runtime's thread count decides where the model runs, and with one
  // thread the split loop runs on the calling thread.
  bool SplitAcrossThreads(const TensorType& values) const {
    if (plan_.parallel_elements > 0) return values.NumElements() > 0;  // decided as it runs
    return values.NumElements() >= strategy::ConfigFor(target_).parallel_elements;
  }

  const FunctionNode& f_;
  const target::Target& target_;  // outlives the Lowerer: LowerPrimitiveFunction's argument
  Plan plan_;
  std::vector<Expr> order_;
  std::unordered_map<const ExprNode*, std::vector<BufferId>> values_;    // per value: its tensors' buffers
  std::map<std::pair<const ExprNode*, size_t>, BufferId> output_slots_;  // (value, result) -> output
  std::unordered_map<const ExprNode*, std::vector<Expr>> readers_;       // within the function
  std::set<const ExprNode*> returned_;
  std::set<const ExprNode*> fused_;  // ops computed in the epilogue of an earlier kernel
  std::unordered_map<const ExprNode*, int64_t> gather_runs_;  // roots of gather loops: their runs
  std::set<const ExprNode*> gathered_;  // ops inside a gather loop's tree, below its root
  // Concatenations the elementwise loops read where their parts lie (JoinedInPlace).
  std::unordered_map<const ExprNode*, ElementwiseLoop::Operand> joined_in_place_;
  // Parts of a concatenation computed in its output: the output and the part's offset (PlaceParts).
  std::unordered_map<const ExprNode*, std::pair<BufferId, int64_t>> placed_;
};

}  // namespace

int Plan::NumOf(PlanBuffer::Kind kind) const {
  int count = 0;
  for (const PlanBuffer& b : buffers) count += b.kind == kind ? 1 : 0;
  return count;
}

std::string Plan::Implementations() const {
  std::vector<std::string> names;
  for (const PlanStep& step : steps) {
    std::string name;
    if (const auto* kernel = std::get_if<KernelCall>(&step)) name = kernel->implementation;
    if (std::holds_alternative<ElementwiseLoop>(step)) name = "elementwise loop";
    if (const auto* loop = std::get_if<LoopOp>(&step)) name = loop->call->op->name + " loops";
    if (std::holds_alternative<Copy>(step)) name = "copy";
    if (std::holds_alternative<GatherLoop>(step)) name = "gather loop";
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : " + ") + name;
  return text;
}

Plan LowerPrimitiveFunction(const std::string& symbol, const Expr& primitive, const target::Target& target,
                            bool extents_vary) {
  const auto* f = primitive->As<FunctionNode>();
  runtime::CheckInternal(f != nullptr, "lowering: ", symbol, " is not a function");
  return Lowerer(symbol, primitive, target, extents_vary).Run();
}

}  // namespace kiln::backend
