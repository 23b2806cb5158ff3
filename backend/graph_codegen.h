// Graph code generation: the main function (after FuseOps: it calls primitive functions only)
// becomes the graph executor's graph (TVM's graph JSON layout), the parameters (its constants,
// named p0, p1, ...) and the list of distinct primitive functions to compile, each with its
// symbol, and of the external functions it calls (their symbol is their global_symbol). Storage ids come from the memory planner.
#pragma once

#include <string>
#include <vector>

#include "ir/expr.h"
#include "runtime/graph_json.h"
#include "runtime/params.h"

namespace kiln::backend {

struct OperatorFunction {
  std::string symbol;  // tvmgen_<module>_fused_<ops>[_<n>], or an external function's global_symbol
  ir::Expr function;   // the primitive or external function
  // With a batch dimension: per argument (parameters, then outputs) whether it holds the samples
  // (backend/batch_samples.h); empty when none does.
  std::vector<bool> batched;
};

struct GraphCodegenResult {
  runtime::Graph graph;
  runtime::NamedArrays params;
  std::vector<OperatorFunction> functions;           // for the host code generator
  std::vector<OperatorFunction> external_functions;  // for their external codegens
  int64_t planned_bytes = 0;    // storage for intermediate tensors after sharing
  int64_t unshared_bytes = 0;   // the sum of all intermediate tensors (one buffer each)
};

// Throws Error when the main function holds something the graph executor cannot run.
GraphCodegenResult GenerateGraph(const ir::Expr& main, const std::string& module_name = "default");

}  // namespace kiln::backend
