// The linked-parameter image of an exported library.
#include "backend/linked_params.h"

#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "kernels/linked_params.h"

namespace kiln::backend {

LinkedParams LinkParams(const runtime::Graph& graph, const runtime::NamedArrays& params) {
  // Storage ids that hold something else too: what an operator or a copy writes, and the outputs.
  std::set<uint32_t> not_linkable;
  for (uint32_t n = 0; n < graph.nodes.size(); ++n) {
    const runtime::GraphNode& node = graph.nodes[n];
    if (node.is_input() || node.func_name == "__nop") continue;  // a __nop of a parameter is a view of it
    for (uint32_t k = 0; k < node.num_outputs; ++k) not_linkable.insert(graph.storage_ids[graph.EntryId(n, k)]);
  }
  for (const runtime::GraphEntryRef& head : graph.heads) not_linkable.insert(graph.storage_ids[graph.EntryId(head)]);
  std::map<std::string, uint32_t> storage_of_input;
  for (uint32_t node : graph.arg_nodes) storage_of_input[graph.nodes[node].name] = graph.storage_ids[graph.EntryId(node, 0)];

  LinkedParams linked;
  std::map<int64_t, const runtime::NDArray*> by_storage;  // sorted, as the lookup needs
  for (const auto& [name, array] : params) {
    auto it = storage_of_input.find(name);
    if (it == storage_of_input.end() || not_linkable.count(it->second) != 0 ||
        !by_storage.emplace(it->second, &array).second) {
      linked.unlinked.emplace_back(name, array);
    }
  }
  if (by_storage.empty()) return linked;
  auto aligned = [](uint64_t bytes) {
    return (bytes + kernels::kLinkedParamAlignment - 1) / kernels::kLinkedParamAlignment * kernels::kLinkedParamAlignment;
  };
  uint64_t count = by_storage.size();
  uint64_t offset = aligned(sizeof(uint64_t) + count * sizeof(kernels::LinkedParam));
  std::vector<kernels::LinkedParam> entries;
  for (const auto& [storage_id, array] : by_storage) {
    entries.push_back({storage_id, offset});
    offset = aligned(offset + array->NumBytes());
  }
  linked.header.assign(reinterpret_cast<const char*>(&count), sizeof(count));
  linked.header.append(reinterpret_cast<const char*>(entries.data()), entries.size() * sizeof(kernels::LinkedParam));
  linked.image.size = offset;
  linked.image.pieces.emplace_back(0, linked.header);
  size_t i = 0;
  for (const auto& [storage_id, array] : by_storage) {
    std::string_view data(static_cast<const char*>(array->data()), array->NumBytes());
    if (!data.empty()) linked.image.pieces.emplace_back(entries[i].offset, data);
    ++i;
  }
  return linked;
}

}  // namespace kiln::backend
