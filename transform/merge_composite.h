// MergeComposite (TVM's pass of that name): each match of a composite pattern becomes a call of
// a function with the attribute Composite="<name>" whose body is the matched ops, so that the
// partitioning that follows (AnnotateTarget) claims the ops together and an external codegen
// sees them as one fused operation (dnnl.conv2d_bias_relu: a convolution with its post-ops).
//
// The patterns are tried one after another over the whole function, in the table's order, so
// list longer patterns before the shorter ones they contain. A match is taken only when nothing
// outside it reads its interior. The function's parameters are the values the match reads (its
// leaves, constants included) in the order the pattern lists them, whichever order a commutative
// op matched in (a codegen finds a convolution's data, weight, bias and residual in that order);
// the call passes them.
//
// May run: before AnnotateTarget.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/expr.h"
#include "transform/pattern.h"

namespace kiln::transform {

struct CompositePattern {
  std::string name;  // "<compiler>.<what>": dnnl.conv2d_bias_relu
  Pattern pattern;
  std::function<bool(const Match&)> check;  // when set, a match is taken only if it holds
};

ir::Expr MergeComposite(const ir::Expr& main, const std::vector<CompositePattern>& patterns);

// The Composite attribute of `function` (a call's function), or "" when it is not a composite.
std::string CompositeName(const ir::Expr& function);

}  // namespace kiln::transform
