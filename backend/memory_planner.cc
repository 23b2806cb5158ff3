// The liveness-based memory planner: alias groups -> lifetimes -> best-fit reuse of storages.
#include "backend/memory_planner.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <queue>
#include <set>
#include <string>
#include <utility>

#include "runtime/error.h"

namespace kiln::backend {
namespace {

using runtime::Check;

void Validate(const std::vector<PlannedTensor>& tensors) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    const PlannedTensor& t = tensors[i];
    const std::string where = runtime::StrCat("memory planner: tensor ", i, ": ");
    Check(t.bytes >= 0, where, "negative size (", t.bytes, " bytes)");
    Check(t.defined_at >= -1, where, "defined_at is ", t.defined_at,
          "; it must be a step index or -1 (graph input or parameter)");
    if (t.alias_of != -1) {
      Check(t.alias_of >= 0 && static_cast<size_t>(t.alias_of) < i, where, "alias_of is ",
            t.alias_of, "; an alias must name an earlier tensor");
      Check(t.defined_at >= tensors[t.alias_of].defined_at, where, "written at step ",
            t.defined_at, ", before tensor ", t.alias_of, " whose storage it shares (step ",
            tensors[t.alias_of].defined_at, ")");
    } else if (!t.external) {
      Check(t.defined_at >= 0, where,
            "no step writes it (defined_at -1) but it is not external; graph inputs and "
            "parameters must be marked external");
    }
    if (!t.external) {
      Check(t.last_used_at >= t.defined_at, where, "last read at step ", t.last_used_at,
            ", before it is written at step ", t.defined_at);
    }
  }
}

// One alias group: the tensors that share one storage because of aliasing.
struct Group {
  int64_t bytes = 0;
  int start = 0;  // step writing its first member
  int end = 0;    // last step reading any member
  bool external = false;
};

}  // namespace

MemoryPlan PlanMemory(const std::vector<PlannedTensor>& tensors) {
  Validate(tensors);
  const int n = static_cast<int>(tensors.size());

  // Alias groups, each keyed by its root (the member with the lowest index).
  std::vector<int> root(n);
  std::vector<Group> groups(n);
  for (int i = 0; i < n; ++i) {
    const PlannedTensor& t = tensors[i];
    root[i] = t.alias_of == -1 ? i : root[t.alias_of];
    Group& g = groups[root[i]];
    if (root[i] == i) {
      g.start = t.defined_at;
      g.end = t.last_used_at;
    }
    g.bytes = std::max(g.bytes, t.bytes);
    g.end = std::max(g.end, t.last_used_at);
    g.external = g.external || t.external;
  }

  MemoryPlan plan;
  std::vector<int> group_storage(n, -1);
  std::vector<int> internal;  // roots of the shared (non-external) groups
  for (int i = 0; i < n; ++i) {
    if (root[i] != i) continue;
    if (groups[i].external) {
      group_storage[i] = static_cast<int>(plan.storage_bytes.size());
      plan.storage_bytes.push_back(groups[i].bytes);
    } else {
      internal.push_back(i);
    }
  }
  std::stable_sort(internal.begin(), internal.end(),
                   [&](int a, int b) { return groups[a].start < groups[b].start; });

  // Storages in use, by the last step reading them (earliest first), and free ones by size.
  using EndAndStorage = std::pair<int, int>;
  std::priority_queue<EndAndStorage, std::vector<EndAndStorage>, std::greater<>> in_use;
  std::set<std::pair<int64_t, int>> free_storages;  // (bytes, storage id)
  for (int r : internal) {
    const Group& g = groups[r];
    while (!in_use.empty() && in_use.top().first < g.start) {
      int sid = in_use.top().second;
      in_use.pop();
      free_storages.emplace(plan.storage_bytes[sid], sid);
    }
    int sid;
    auto fit = free_storages.lower_bound({g.bytes, -1});  // smallest that is large enough
    if (fit == free_storages.end() && !free_storages.empty()) {
      // None is large enough: grow the largest (the lowest id among equally large ones).
      fit = free_storages.lower_bound({std::prev(free_storages.end())->first, -1});
    }
    if (fit != free_storages.end()) {
      sid = fit->second;
      free_storages.erase(fit);
      plan.storage_bytes[sid] = std::max(plan.storage_bytes[sid], g.bytes);
    } else {
      sid = static_cast<int>(plan.storage_bytes.size());
      plan.storage_bytes.push_back(g.bytes);
    }
    group_storage[r] = sid;
    in_use.emplace(g.end, sid);
  }

  plan.storage_ids.resize(n);
  for (int i = 0; i < n; ++i) {
    plan.storage_ids[i] = group_storage[root[i]];
    plan.unshared_bytes += tensors[i].bytes;
  }
  for (int64_t b : plan.storage_bytes) plan.planned_bytes += b;
  return plan;
}

}  // namespace kiln::backend
