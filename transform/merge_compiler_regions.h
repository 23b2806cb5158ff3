// MergeCompilerRegions (TVM's pass of that name): after AnnotateTarget every claimed call is a
// region of its own; this joins a call to the regions of its producers of the same codegen by
// dropping the compiler_end / compiler_begin pair between them, so that a chain of claimed ops
// becomes one region (one external function). A join that would create a cycle (a path leaving
// the region and entering it again through a value the codegen does not compute) is not made:
// the call then joins one producer's region where that is safe, or stays a region of its own.
//
// May run: after AnnotateTarget, before PartitionGraph.
#pragma once

#include "ir/expr.h"

namespace kiln::transform {

ir::Expr MergeCompilerRegions(const ir::Expr& main);

}  // namespace kiln::transform
