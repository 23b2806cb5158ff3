// Run conditions for the graph nodes that only one side of an if_then_else needs (ONNX If with a
// condition known at run time): each node gets the conditions on every path from it to an
// output, so the graph executor runs it only when its side is taken.
#pragma once

#include <cstdint>
#include <map>

#include "runtime/graph_json.h"

namespace kiln::backend {

// Where an if_then_else node reads its operands: indices into the node's inputs.
struct SelectInputs {
  size_t condition = 0;
  size_t then_side = 1;
  size_t else_side = 2;
};

// Sets run_if of every operator node of `graph` from its if_then_else nodes (by node id). A
// node's conditions are those on all its paths to the outputs, outermost first, cut before the
// first condition not computed before the node; nodes with no such conditions run always.
void AddRunConditions(runtime::Graph& graph, const std::map<uint32_t, SelectInputs>& selects);

}  // namespace kiln::backend
