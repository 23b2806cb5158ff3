// PartitionGraph (TVM's pass of that name): each region MergeCompilerRegions left (the claimed
// calls between compiler_begin and compiler_end annotations) becomes an external function with
// the attributes Compiler="<codegen>", global_symbol="tvmgen_<module>_<codegen>_main_<k>",
// Primitive=1 and Inline=1, called from the main function in the region's place. Its parameters
// are the values entering the region (named <codegen>_<k>_i<j>); constants the region reads stay
// inside it; several values leaving it make a tuple result. A region of fewer ops than
// min_region_ops (a composite counts its ops) stays on the host, and so does every composite
// call outside a region: its function is inlined again. No annotation is left.
//
// May run: after MergeCompilerRegions.
#pragma once

#include <string>

#include "ir/expr.h"

namespace kiln::transform {

struct PartitionOptions {
  std::string module_name = "default";
  int min_region_ops = 1;
};

ir::Expr PartitionGraph(const ir::Expr& main, const PartitionOptions& options = {});

}  // namespace kiln::transform
