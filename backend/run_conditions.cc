// Run conditions from the if_then_else nodes, propagated from the outputs to the inputs.
#include "backend/run_conditions.h"

#include <optional>
#include <vector>

namespace kiln::backend {

namespace {

using Conditions = std::vector<runtime::RunCondition>;

bool Same(const runtime::RunCondition& a, const runtime::RunCondition& b) {
  return a.condition.node_id == b.condition.node_id && a.condition.index == b.condition.index && a.taken == b.taken;
}

// The conditions both lists start with: what holds whenever either does.
Conditions CommonPrefix(const Conditions& a, const Conditions& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && Same(a[n], b[n])) ++n;
  return Conditions(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n));
}

}  // namespace

void AddRunConditions(runtime::Graph& graph, const std::map<uint32_t, SelectInputs>& selects) {
  if (selects.empty()) return;
  // Per node: the conditions under which some reader needs it (nullopt: no reader seen yet).
  std::vector<std::optional<Conditions>> needed(graph.nodes.size());
  for (const runtime::GraphEntryRef& head : graph.heads) needed[head.node_id] = Conditions{};
  for (size_t n = graph.nodes.size(); n-- > 0;) {
    runtime::GraphNode& node = graph.nodes[n];
    if (node.is_input()) continue;
    Conditions own = needed[n].value_or(Conditions{});
    auto select = selects.find(static_cast<uint32_t>(n));
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      Conditions reader = own;
      const SelectInputs* s = select == selects.end() ? nullptr : &select->second;
      if (s != nullptr && s->then_side != s->else_side && (i == s->then_side || i == s->else_side)) {
        reader.push_back({node.inputs[s->condition], i == s->then_side});
      }
      std::optional<Conditions>& producer = needed[node.inputs[i].node_id];
      producer = producer ? CommonPrefix(*producer, reader) : reader;
    }
    // A condition read before its node has run says nothing: cut there.
    size_t keep = 0;
    while (keep < own.size() && own[keep].condition.node_id < n) ++keep;
    own.resize(keep);
    node.run_if = std::move(own);
  }
}

}  // namespace kiln::backend
