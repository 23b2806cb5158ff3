// AnnotateTarget (TVM's pass of that name): every op call an external codegen supports, and every
// composite named for it (MergeComposite's "dnnl.<...>"), is marked as a region of that codegen
// of its own: each tensor argument passes through annotation.compiler_begin and the result
// through annotation.compiler_end, both with compiler="<codegen>". Constant arguments stay as
// they are (PartitionGraph keeps them inside the region). Calls taking or giving tuples are left
// to the host. The first target in the list that claims a call takes it.
//
// May run: after MergeComposite, before MergeCompilerRegions.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/expr.h"

namespace kiln::transform {

struct CompilerTarget {
  std::string name;                                   // the codegen: "dnnl"
  std::function<bool(const ir::CallNode&)> supports;  // op calls it runs (composites go by name)
};

ir::Expr AnnotateTarget(const ir::Expr& main, const std::vector<CompilerTarget>& targets);

// The annotation ops, for the passes that read them.
extern const ir::OpRef kCompilerBegin;
extern const ir::OpRef kCompilerEnd;

// `e` as a call of `op`, or null when it is something else.
const ir::CallNode* AsCallOf(const ir::Expr& e, const ir::OpRef& op);

}  // namespace kiln::transform
