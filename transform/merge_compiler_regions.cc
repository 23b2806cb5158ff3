// MergeCompilerRegions: regions grown in topological order with a union-find; each value knows the
// regions it depends on, which is what the cycle check asks.
#include "transform/merge_compiler_regions.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <unordered_map>

#include "runtime/error.h"
#include "transform/annotate_target.h"

namespace kiln::transform {

using namespace ir;

namespace {

class RegionMerger {
 public:
  explicit RegionMerger(const Expr& body) : order_(PostOrder(body)) {
    for (const Expr& e : order_) {
      if (const CallNode* end = AsCallOf(e, kCompilerEnd)) {
        region_[end->args[0].get()] = static_cast<int>(parent_.size());
        parent_.push_back(static_cast<int>(parent_.size()));
        members_.push_back({end->args[0]});
        compiler_.push_back(end->attrs.GetString("compiler"));
      }
    }
  }

  // Decides the regions, then drops the pairs inside them.
  Expr Run(const Expr& body) {
    for (const Expr& e : order_) {
      std::set<int>& deps = deps_[e.get()];
      for (const Expr& input : Inputs(e)) {
        const std::set<int>& more = deps_.at(input.get());
        deps.insert(more.begin(), more.end());
      }
      auto it = region_.find(e.get());
      if (it == region_.end()) continue;
      Join(e);
      deps.insert(it->second);
    }
    std::unordered_map<const ExprNode*, Expr> rewritten;
    return Rewrite(body, [&](const Expr& original, const std::vector<Expr>& inputs) {
      Expr result = WithInputs(original, inputs);
      auto it = region_.find(original.get());
      if (it != region_.end()) {
        std::vector<Expr> joined = inputs;
        std::vector<Expr> originals = Inputs(original);
        for (size_t i = 0; i < originals.size(); ++i) {
          const ExprNode* producer = SameCodegenProducer(originals[i], it->second);
          if (producer != nullptr && Find(region_.at(producer)) == Find(it->second)) {
            joined[i] = rewritten.at(producer);
          }
        }
        result = WithInputs(original, joined);
      }
      rewritten[original.get()] = result;
      return result;
    });
  }

 private:
  int Find(int r) {
    while (parent_[r] != r) r = parent_[r] = parent_[parent_[r]];
    return r;
  }

  // The claimed call `arg` reads through compiler_begin(compiler_end(call)) when that call is of
  // the codegen of `region`; null otherwise.
  const ExprNode* SameCodegenProducer(const Expr& arg, int region) {
    const CallNode* begin = AsCallOf(arg, kCompilerBegin);
    const CallNode* end = begin == nullptr ? nullptr : AsCallOf(begin->args[0], kCompilerEnd);
    if (end == nullptr) return nullptr;
    auto it = region_.find(end->args[0].get());
    if (it == region_.end() || compiler_[it->second] != compiler_[region]) return nullptr;
    return end->args[0].get();
  }

  // Whether `value` depends on a region of `regions` (canonical ids).
  bool DependsOn(const ExprNode* value, const std::set<int>& regions) {
    for (int r : deps_.at(value)) {
      if (regions.count(Find(r)) != 0) return true;
    }
    return false;
  }

  // Whether joining `regions` into one leaves no path that leaves it and comes back: no input of
  // a member read from outside the joined regions depends on them.
  bool CanJoin(const std::set<int>& regions) {
    for (int r : regions) {
      for (const Expr& member : members_[r]) {
        for (const Expr& input : Inputs(member)) {
          const ExprNode* producer = SameCodegenProducer(input, region_.at(member.get()));
          bool inside = producer != nullptr && regions.count(Find(region_.at(producer))) != 0;
          if (!inside && DependsOn(input.get(), regions)) return false;
        }
      }
    }
    return true;
  }

  void Union(const std::set<int>& regions) {
    int root = *regions.begin();
    for (int r : regions) {
      if (r == root) continue;
      parent_[r] = root;
      members_[root].insert(members_[root].end(), members_[r].begin(), members_[r].end());
      members_[r].clear();
    }
  }

  // Joins the claimed call `e` to the regions of its producers of its codegen, all of them when
  // that is safe, else the first one that is.
  void Join(const Expr& e) {
    int own = region_.at(e.get());
    std::vector<int> producers;
    for (const Expr& input : Inputs(e)) {
      if (const ExprNode* producer = SameCodegenProducer(input, own)) {
        int r = Find(region_.at(producer));
        if (std::find(producers.begin(), producers.end(), r) == producers.end()) producers.push_back(r);
      }
    }
    if (producers.empty()) return;
    std::set<int> all(producers.begin(), producers.end());
    all.insert(own);
    if (CanJoin(all)) return Union(all);
    for (int r : producers) {
      std::set<int> pair = {r, own};
      if (CanJoin(pair)) return Union(pair);
    }
  }

  std::vector<Expr> order_;
  std::unordered_map<const ExprNode*, int> region_;  // per claimed call: its first region id
  std::vector<int> parent_;
  std::vector<std::vector<Expr>> members_;  // per root region id: its claimed calls
  std::vector<std::string> compiler_;                  // per region id
  std::unordered_map<const ExprNode*, std::set<int>> deps_;  // per value: the regions it depends on
};

}  // namespace

Expr MergeCompilerRegions(const Expr& main) {
  const auto* f = main->As<FunctionNode>();
  runtime::CheckInternal(f != nullptr, "MergeCompilerRegions: expected a function");
  Expr body = RegionMerger(f->body).Run(f->body);
  return body == f->body ? main : Function(f->params, body, f->attrs);
}

}  // namespace kiln::transform
