// The memory planner: gives every tensor of a graph a storage id, so that tensors whose lifetimes
// do not overlap share one buffer. This is what the graph executor's `storage_id` attribute means
// (each storage id is one buffer, sized to the largest tensor using it).
//
// Contract
// - Steps are the operator calls in execution order, numbered from 0. A tensor is written by step
//   `defined_at` (-1: a graph input or parameter, there before the first step) and read last by
//   step `last_used_at`; its data must survive from the start of the first step to the end of the
//   second. A tensor nobody reads has last_used_at == defined_at. Outputs and inputs of one step
//   never share storage (no operator works in place).
// - External tensors (graph inputs, parameters, outputs) get storage of their own that no other
//   tensor shares; their last_used_at is ignored (they live for the whole run).
// - An alias (alias_of = index of an earlier tensor, e.g. the output of a `__nop` reshape) shares
//   the storage of the tensor it names, transitively. Such an alias group is planned as one
//   tensor: its lifetime spans all its members, its size is the largest member's, and it is
//   external if any member is.
// - Storage ids are dense from 0: first one per external group, in tensor order (so inputs and
//   parameters get the low ids, as in TVM), then the shared storages in the order they were
//   created. A tensor of 0 bytes still gets a storage.
// - Throws runtime::Error naming the tensor for a malformed input: negative bytes, an alias that
//   does not point to an earlier tensor or is written before it, defined_at < -1, a non-external
//   tensor that no step writes or that is read before it is written.
//
// Algorithm (greedy, like TVM's GraphPlanMemory): walk the non-external groups in order of the
// step that writes them; first release every storage whose group was last read before that step,
// then take the best fit among the free storages: the smallest one of at least the needed size,
// or else the largest one, grown to the needed size; a new storage only when none is free. TVM
// looks only within a factor of 16 of the size; we consider every free storage, since growing one
// never costs more bytes than allocating another.
//
// Complexity: O(n log n) time and O(n) memory for n tensors. Thread-safe (pure function).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace kiln::backend {

// last_used_at of a tensor that must live to the end of the run.
inline constexpr int kLiveToEnd = std::numeric_limits<int>::max();

struct PlannedTensor {
  int64_t bytes = 0;
  int defined_at = -1;    // step that writes it, or -1 for graph inputs and parameters
  int last_used_at = -1;  // last step that reads it (kLiveToEnd: alive to the end)
  bool external = false;  // graph input, parameter or output: never shared
  int alias_of = -1;      // index of an earlier tensor whose storage it shares, or -1
};

struct MemoryPlan {
  std::vector<int> storage_ids;        // per tensor
  std::vector<int64_t> storage_bytes;  // per storage id: the largest tensor using it
  int64_t planned_bytes = 0;           // sum of storage_bytes
  int64_t unshared_bytes = 0;          // sum of tensor bytes: one buffer per tensor
};

MemoryPlan PlanMemory(const std::vector<PlannedTensor>& tensors);

}  // namespace kiln::backend
