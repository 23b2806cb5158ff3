// PartitionGraph: regions found from their compiler_end annotations back to their
// compiler_begin ones, then one rewrite of the main function.
#include "transform/partition_graph.h"

#include <map>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "runtime/error.h"
#include "transform/annotate_target.h"
#include "transform/merge_composite.h"

namespace kiln::transform {

using namespace ir;

namespace {

// The arguments of a call (a function call's function is not one).
std::vector<Expr> ArgsOf(const Expr& e) {
  const auto* call = e->As<CallNode>();
  return call != nullptr ? call->args : Inputs(e);
}

int OpCount(const Expr& call) {
  const auto* c = call->As<CallNode>();
  if (c->op != nullptr) return 1;
  int count = 0;
  for (const Expr& e : PostOrder(c->function->As<FunctionNode>()->body)) {
    const auto* inner = e->As<CallNode>();
    count += inner != nullptr && inner->op != nullptr ? 1 : 0;
  }
  return count;
}

// `function` applied to `args`: its body with each parameter replaced by its argument.
Expr Inline(const Expr& function, const std::vector<Expr>& args) {
  const auto* f = function->As<FunctionNode>();
  std::unordered_map<const ExprNode*, Expr> bound;
  for (size_t i = 0; i < f->params.size(); ++i) bound[f->params[i].get()] = args[i];
  return Rewrite(f->body, [&](const Expr& original, const std::vector<Expr>& inputs) {
    auto it = bound.find(original.get());
    return it != bound.end() ? it->second : WithInputs(original, inputs);
  });
}

struct Region {
  std::string compiler;
  std::unordered_set<const ExprNode*> members;  // the claimed calls
  std::vector<Expr> entering;                   // the values read through compiler_begin, in order
  std::vector<const ExprNode*> ends;            // its compiler_end annotations, in order
  int ops = 0;
  bool kept = false;
  Expr function;  // when kept
  Expr call;      // when kept: its call in the rewritten main, made at its first end
};

class Partitioner {
 public:
  Partitioner(const Expr& body, const PartitionOptions& options) : options_(options), order_(PostOrder(body)) {
    std::unordered_map<const ExprNode*, size_t> position;
    for (size_t i = 0; i < order_.size(); ++i) position[order_[i].get()] = i;
    FindRegions();
    // Kept regions become functions in the order of their first end, numbered per codegen.
    std::map<std::string, int> counts;
    for (Region& r : regions_) {
      r.kept = r.ops >= options_.min_region_ops;
      if (!r.kept) continue;
      std::sort(r.entering.begin(), r.entering.end(),
                [&](const Expr& a, const Expr& b) { return position.at(a.get()) < position.at(b.get()); });
      MakeFunction(r, counts[r.compiler]++);
    }
  }

  Expr Run(const Expr& body) {
    std::unordered_map<const ExprNode*, Expr> done;
    return Rewrite(body, [&](const Expr& original, const std::vector<Expr>& inputs) {
      Expr result = Replace(original, inputs, done);
      done[original.get()] = result;
      return result;
    });
  }

 private:
  // Walks back from each compiler_end to the compiler_begin annotations; ends that reach a common
  // call are one region.
  void FindRegions() {
    std::unordered_map<const ExprNode*, int> owner;  // claimed call -> region
    std::vector<int> parent;
    auto find = [&](int r) {
      while (parent[r] != r) r = parent[r] = parent[parent[r]];
      return r;
    };
    std::vector<Region> found;
    for (const Expr& e : order_) {
      const CallNode* end = AsCallOf(e, kCompilerEnd);
      if (end == nullptr) continue;
      int id = static_cast<int>(found.size());
      found.emplace_back();
      parent.push_back(id);
      found[id].compiler = end->attrs.GetString("compiler");
      found[id].ends.push_back(e.get());
      end_region_[e.get()] = id;
      std::vector<Expr> stack = {end->args[0]};
      while (!stack.empty()) {
        Expr n = stack.back();
        stack.pop_back();
        if (AsCallOf(n, kCompilerBegin) != nullptr) {
          found[id].entering.push_back(n->As<CallNode>()->args[0]);
          begin_of_[n.get()] = n->As<CallNode>()->args[0];
          continue;
        }
        if (n->kind() == ExprKind::kConstant) continue;
        runtime::CheckInternal(n->kind() == ExprKind::kCall && AsCallOf(n, kCompilerEnd) == nullptr,
                               "PartitionGraph: a region reads a value that does not enter it through compiler_begin");
        auto [it, added] = owner.emplace(n.get(), id);
        if (!added) {
          int a = find(it->second), b = find(id);
          if (a != b) parent[b] = a;
          continue;
        }
        found[id].members.insert(n.get());
        for (const Expr& arg : ArgsOf(n)) stack.push_back(arg);
      }
    }
    // Merge the regions found to share calls, in the order of their first end.
    std::unordered_map<int, int> index;  // root -> position in regions_
    for (int id = 0; id < static_cast<int>(found.size()); ++id) {
      int root = find(id);
      auto [it, added] = index.emplace(root, static_cast<int>(regions_.size()));
      if (added) regions_.push_back(Region{found[id].compiler, {}, {}, {}, 0, false, nullptr, nullptr});
      Region& r = regions_[it->second];
      r.members.insert(found[id].members.begin(), found[id].members.end());
      for (const Expr& v : found[id].entering) {
        bool seen = false;
        for (const Expr& w : r.entering) seen = seen || w == v;
        if (!seen) r.entering.push_back(v);
      }
      r.ends.insert(r.ends.end(), found[id].ends.begin(), found[id].ends.end());
    }
    for (auto& [end, id] : end_region_) id = index.at(find(id));
    for (Region& r : regions_) {
      for (const Expr& e : order_) {
        if (r.members.count(e.get()) != 0) r.ops += OpCount(e);
      }
    }
  }

  void MakeFunction(Region& r, int k) {
    std::string prefix = r.compiler + "_" + std::to_string(k);
    std::unordered_map<const ExprNode*, Expr> copies;  // entering value -> parameter, member -> copy
    std::vector<Expr> params;
    for (const Expr& v : r.entering) {
      params.push_back(Var(prefix + "_i" + std::to_string(params.size()), v->type()));
      copies[v.get()] = params.back();
    }
    std::function<Expr(const Expr&)> copy = [&](const Expr& e) -> Expr {
      auto begin = begin_of_.find(e.get());
      if (begin != begin_of_.end()) return copies.at(begin->second.get());
      if (r.members.count(e.get()) == 0) return e;  // a constant, or a composite's function
      auto it = copies.find(e.get());
      if (it != copies.end()) return it->second;
      std::vector<Expr> inputs;
      for (const Expr& input : Inputs(e)) inputs.push_back(copy(input));
      return copies[e.get()] = WithInputs(e, inputs);
    };
    std::vector<Expr> outputs;
    for (const ExprNode* end : r.ends) outputs.push_back(copy(end->As<CallNode>()->args[0]));
    Attrs attrs;
    attrs.Set(attr::kCompiler, r.compiler);
    attrs.Set(attr::kGlobalSymbol, "tvmgen_" + options_.module_name + "_" + r.compiler + "_main_" + std::to_string(k));
    attrs.Set(attr::kPrimitive, int64_t{1});
    attrs.Set("Inline", int64_t{1});
    r.function = Function(params, outputs.size() == 1 ? outputs[0] : Tuple(outputs), attrs);
  }

  Expr Replace(const Expr& original, const std::vector<Expr>& inputs,
               const std::unordered_map<const ExprNode*, Expr>& done) {
    if (AsCallOf(original, kCompilerBegin) != nullptr) return inputs[0];
    if (AsCallOf(original, kCompilerEnd) != nullptr) {
      Region& r = regions_[end_region_.at(original.get())];
      if (!r.kept) return inputs[0];
      if (r.call == nullptr) {
        std::vector<Expr> args;
        for (const Expr& v : r.entering) args.push_back(done.at(v.get()));
        r.call = CallFunction(r.function, args);
      }
      if (r.ends.size() == 1) return r.call;
      size_t k = std::find(r.ends.begin(), r.ends.end(), original.get()) - r.ends.begin();
      return TupleGetItem(r.call, static_cast<int>(k));
    }
    const auto* call = original->As<CallNode>();
    if (call != nullptr && call->op == nullptr && !CompositeName(call->function).empty()) {
      return Inline(call->function, std::vector<Expr>(inputs.begin() + 1, inputs.end()));
    }
    return WithInputs(original, inputs);
  }

  PartitionOptions options_;
  std::vector<Expr> order_;
  std::vector<Region> regions_;
  std::unordered_map<const ExprNode*, int> end_region_;  // compiler_end -> region
  std::unordered_map<const ExprNode*, Expr> begin_of_;   // compiler_begin -> the value it marks
};

}  // namespace

Expr PartitionGraph(const Expr& main, const PartitionOptions& options) {
  const auto* f = main->As<FunctionNode>();
  runtime::CheckInternal(f != nullptr, "PartitionGraph: expected a function");
  runtime::Check(options.min_region_ops >= 1, "PartitionGraph: min_region_ops must be at least 1, got ",
                 options.min_region_ops);
  Expr body = Partitioner(f->body, options).Run(f->body);
  return body == f->body ? main : Function(f->params, body, f->attrs);
}

}  // namespace kiln::transform
