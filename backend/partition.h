// Partitioning for one external codegen, as TVM's partition_for_<codegen>(mod, params) does it:
// the parameters named in `params` become constants, SimplifyInference, CombineLayerNorm and
// FoldConstant run (batch norms folded into convolutions, exported layer norms one op, shape
// computations gone), then MergeComposite with the
// codegen's patterns, AnnotateTarget, MergeCompilerRegions and PartitionGraph. The result calls an
// external function per region the codegen claims; the rest stays for kiln's host code, and Build
// sends each external function to the codegen.
#pragma once

#include <string>
#include <vector>

#include "backend/external_codegen.h"
#include "ir/expr.h"
#include "runtime/params.h"
#include "transform/partition_graph.h"

namespace kiln::backend {

// Throws Error when there is no such codegen or this build does not have it.
ir::Expr PartitionForCodegen(const ir::Expr& main, const std::string& codegen, const runtime::NamedArrays& params = {},
                             const transform::PartitionOptions& options = {},
                             const std::vector<ExternalCodegen>& table = ExternalCodegens());

}  // namespace kiln::backend
