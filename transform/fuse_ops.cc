// FuseOps: greedy grouping over the dataflow graph in topological order.
#include "transform/fuse_ops.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ir/ops/infer_util.h"
#include "ir/provenance.h"
#include "runtime/error.h"

namespace kiln::transform {

using namespace ir;

namespace {

const OpRef kConcatenate("concatenate");

bool IsOpCall(const Expr& e) {
  const auto* call = e->As<CallNode>();
  return call != nullptr && call->op != nullptr;
}

OpPattern PatternOf(const Expr& e) { return e->As<CallNode>()->op->pattern; }

struct Group {
  std::vector<Expr> members;  // in topological order; the last one is the group's result
  OpPattern anchor;           // the strongest pattern in the group
};

// Whether `op` (pattern p) may join a group whose strongest pattern is `anchor`.
bool CanJoin(OpPattern anchor, OpPattern p) {
  // A reduction takes elementwise and injective producers as its input stage.
  if (p == OpPattern::kCommReduce) return anchor <= OpPattern::kInjective;
  if (p > OpPattern::kInjective) return false;  // heavy and opaque ops start groups
  if (anchor == OpPattern::kOutEWiseFusable || anchor == OpPattern::kCommReduce) return p <= OpPattern::kBroadcast;
  return anchor <= OpPattern::kInjective;
}

constexpr size_t kMaxDiamond = 8;  // ops between a value and the op where its readers meet again

// The ops from the readers of `value` (read more than once) up to the first op where every path
// from `value` meets again, in topological order, when they form such a diamond: only the last
// is read from outside it (or is a graph output). Then no op outside depends on `value` except
// through the last, so the diamond and `value`'s group make one group without a cycle. Empty
// otherwise. x * sigmoid(x) is the common case.
std::vector<Expr> Diamond(const Expr& value, const std::vector<Expr>& order,
                          const std::unordered_map<const ExprNode*, size_t>& position,
                          const std::unordered_map<const ExprNode*, int>& consumers,
                          const std::unordered_set<const ExprNode*>& outputs) {
  std::unordered_map<const ExprNode*, int> open;  // values with readers not reached yet
  open[value.get()] = consumers.at(value.get());
  std::vector<Expr> region;
  for (size_t i = position.at(value.get()) + 1; i < order.size() && region.size() < kMaxDiamond; ++i) {
    const Expr& e = order[i];
    bool reads_open = false;
    for (const Expr& input : Inputs(e)) reads_open = reads_open || open.count(input.get()) != 0;
    if (!reads_open) continue;
    if (!IsOpCall(e)) return {};
    for (const Expr& input : Inputs(e)) {
      auto it = open.find(input.get());
      if (it != open.end() && --it->second == 0) open.erase(it);
    }
    region.push_back(e);
    if (open.empty()) return region;  // all paths meet in e
    if (outputs.count(e.get()) != 0) return {};           // read from outside before they meet
    auto readers = consumers.find(e.get());
    if (readers == consumers.end()) return {};
    open[e.get()] = readers->second;
  }
  return {};
}

}  // namespace

Expr FuseOps(const Expr& main, const FuseOptions& options) {
  const auto* f = main->As<FunctionNode>();
  runtime::CheckInternal(f != nullptr, "FuseOps: expected a function");
  runtime::Check(options.max_depth >= 1, "FuseOps: max_depth must be at least 1, got ", options.max_depth);
  std::vector<Expr> order = PostOrder(f->body);

  std::unordered_map<const ExprNode*, int> consumers;
  for (const Expr& e : order) {
    if (const auto* call = e->As<CallNode>()) {
      runtime::Check(call->op != nullptr || IsExternal(call->function),
                     "FuseOps: the main function already calls primitive functions");
    }
    for (const Expr& input : Inputs(e)) ++consumers[input.get()];
  }
  std::unordered_set<const ExprNode*> outputs;
  if (const auto* tuple = f->body->As<TupleNode>()) {
    for (const Expr& field : tuple->fields) outputs.insert(field.get());
  } else {
    outputs.insert(f->body.get());
  }

  std::unordered_map<const ExprNode*, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i].get()] = i;

  // Assign groups. The ops of a diamond after a group's result join that group together.
  std::vector<Group> groups;
  std::unordered_map<const ExprNode*, int> group_of;
  std::unordered_map<const ExprNode*, int> diamond_group;  // op -> the group it joins
  for (const Expr& e : order) {
    if (!IsOpCall(e)) continue;
    WorkingOn scope(e);
    OpPattern p = PatternOf(e);
    int joined = -1;
    if (auto it = diamond_group.find(e.get()); it != diamond_group.end()) joined = it->second;
    for (const Expr& arg : e->As<CallNode>()->args) {
      if (joined >= 0) break;
      auto it = group_of.find(arg.get());
      if (it == group_of.end()) continue;
      Group& g = groups[it->second];
      bool single_use = consumers[arg.get()] == 1 && outputs.count(arg.get()) == 0;
      bool is_result = g.members.back() == arg;
      if (single_use && is_result && CanJoin(g.anchor, p) && static_cast<int>(g.members.size()) < options.max_depth) {
        joined = it->second;
        break;
      }
    }
    if (joined < 0) {
      joined = static_cast<int>(groups.size());
      groups.push_back({{}, p});
    }
    groups[joined].members.push_back(e);
    groups[joined].anchor = std::max(groups[joined].anchor, p);
    group_of[e.get()] = joined;
    // A result read more than once joins with the diamond of its readers, when all of it fits.
    if (consumers[e.get()] > 1 && outputs.count(e.get()) == 0) {
      std::vector<Expr> diamond = Diamond(e, order, position, consumers, outputs);
      Group& g = groups[joined];
      bool fits = !diamond.empty() && g.members.size() + diamond.size() <= static_cast<size_t>(options.max_depth);
      for (const Expr& d : diamond) {
        fits = fits && CanJoin(g.anchor, PatternOf(d)) && PatternOf(d) != OpPattern::kCommReduce;
        // Two diamonds may end in one op (YOLOv5's Focus: two slices each read twice, all four
        // reads concatenated): the op joins the first; the second diamond stays apart, or the
        // first group's interior values would be read from outside it.
        auto claimed = diamond_group.find(d.get());
        fits = fits && (claimed == diamond_group.end() || claimed->second == joined);
      }
      for (const Expr& d : diamond) {
        if (fits) diamond_group[d.get()] = joined;
      }
    }
  }

  // A concatenation alone in its group whose parts are each the result of a group of their own
  // with a heavy op (a convolution and its epilogue), read only by it, takes those groups in:
  // lowering then computes each part in its place in the concatenation's output, which copies
  // nothing (backend/codegen/lower.cc, PlaceParts). Only where the parts follow one another in
  // memory (the axes before the joined one of extent 1): SqueezeNet's fire modules, Inception's
  // branches.
  for (const Expr& e : order) {
    if (!IsOpCall(e) || !kConcatenate.Is(e->As<CallNode>()->op) || !e->type().is_tensor()) continue;
    const int joined = group_of.at(e.get());
    if (groups[joined].members.size() != 1) continue;
    const auto& call = *e->As<CallNode>();
    if (!PartsFollowOneAnother(e->type().tensor(), call.attrs)) continue;
    std::vector<int> parts;
    size_t size = 1;
    bool ok = true;
    for (const Expr& arg : call.args) {
      auto it = group_of.find(arg.get());
      ok = ok && it != group_of.end() && consumers[arg.get()] == 1 && outputs.count(arg.get()) == 0 &&
           groups[it->second].members.back() == arg && groups[it->second].anchor == OpPattern::kOutEWiseFusable;
      if (!ok) break;
      parts.push_back(it->second);
      size += groups[it->second].members.size();
    }
    if (!ok || parts.empty() || size > static_cast<size_t>(options.max_depth)) continue;
    std::vector<Expr> members;
    for (int part : parts) {
      for (Expr& m : groups[part].members) {
        group_of[m.get()] = joined;
        members.push_back(std::move(m));
      }
      groups[part].members.clear();
    }
    std::sort(members.begin(), members.end(),
              [&](const Expr& a, const Expr& b) { return position.at(a.get()) < position.at(b.get()); });
    members.push_back(e);
    groups[joined].members = std::move(members);
    groups[joined].anchor = OpPattern::kOutEWiseFusable;
  }

  // Rebuild the main function with a primitive function per group.
  std::unordered_map<const ExprNode*, Expr> rewritten;  // original node -> value in the new main
  auto value_of = [&](const Expr& e) { return rewritten.at(e.get()); };
  for (const Expr& e : order) {
    if (!IsOpCall(e)) {
      std::vector<Expr> inputs = Inputs(e);
      for (Expr& input : inputs) input = value_of(input);
      rewritten[e.get()] = WithInputs(e, inputs);
      continue;
    }
    WorkingOn scope(e);
    Group& g = groups[group_of.at(e.get())];
    if (g.members.back() != e) continue;  // built when the group's result is reached
    // Parameters: values from outside the group, in order of first use.
    std::unordered_map<const ExprNode*, Expr> inner;  // original -> expression inside the function
    std::vector<Expr> params, args;
    std::unordered_set<const ExprNode*> in_group;
    for (const Expr& m : g.members) in_group.insert(m.get());
    for (const Expr& m : g.members) {
      std::vector<Expr> member_args;
      for (const Expr& arg : m->As<CallNode>()->args) {
        if (in_group.count(arg.get()) == 0 && inner.count(arg.get()) == 0) {
          Expr param = Var("p" + std::to_string(params.size()), arg->type());
          inner[arg.get()] = param;
          params.push_back(param);
          args.push_back(value_of(arg));
        }
        member_args.push_back(inner.at(arg.get()));
      }
      const auto* call = m->As<CallNode>();
      WorkingOn member_scope(m);
      inner[m.get()] = Call(*call->op, member_args, call->attrs);
    }
    Attrs attrs;
    attrs.Set(attr::kPrimitive, int64_t{1});
    Expr function = Function(params, inner.at(e.get()), attrs);
    rewritten[e.get()] = CallFunction(function, args);
  }
  return Function(f->params, value_of(f->body), f->attrs);
}

}  // namespace kiln::transform
