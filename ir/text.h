// The IR's text form: a printer and a parser that round-trip, so tests are written in IR text.
//
//   fn (%x: Tensor[(1, 8), float32]) -> Tensor[(1, 8), float32] {
//     %0 = const(Tensor[(8), float32], [0.5, 1, 2, 3, 4, 5, 6, 7]);
//     %1 = add(%x, %0);
//     %2 = fn [Primitive=1] (%p0: Tensor[(1, 8), float32]) -> Tensor[(1, 8), float32] {
//       %0 = nn.relu(%p0);
//       %0
//     };
//     %3 = %2(%1);
//     %3
//   }
//
// Every computed value is bound to a name; call arguments are names. Tuples are `(%a, %b)`,
// tuple items `%t.0`. A nested function has a scope of its own and sees only its parameters.
// Names that are not [A-Za-z0-9_.]+ are quoted: %"input:0".
#pragma once

#include <string>
#include <string_view>

#include "ir/expr.h"

namespace kiln::ir {

struct PrintOptions {
  // Constants with more elements print as `const(Type, ...)`, which the parser rejects.
  int64_t max_constant_elements = 1024;
};

std::string PrintFunction(const Expr& function, const PrintOptions& options = {});
// Throws Error "line L, column C: ..." for text that is not a well-typed function.
Expr ParseFunction(std::string_view text);

// True when the two functions compute the same graph: same structure, ops, attributes, types
// and constant values, parameters matched by position (names may differ).
bool StructurallyEqual(const Expr& a, const Expr& b);

}  // namespace kiln::ir
