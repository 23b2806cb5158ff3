// Annotations the partitioning passes write (TVM's names): annotation.compiler_begin marks a value
// entering a region an external codegen compiles, annotation.compiler_end one leaving it. Both
// are the identity; PartitionGraph removes them all, so they never reach code generation.
#include "ir/op.h"
#include "ir/ops/infer_util.h"

namespace kiln::ir {
namespace {

Type Identity(const std::vector<Type>& args, const Attrs& attrs) {
  runtime::Check(!attrs.GetString("compiler").empty(), "the compiler attribute is empty");
  return args[0];
}

}  // namespace

void RegisterAnnotationOps(OpTable& table) {
  for (const char* name : {"annotation.compiler_begin", "annotation.compiler_end"}) {
    table[name] = OpDef{name,
                        1,
                        1,
                        {{"compiler", AttrKind::kString, {}, "the external codegen of the region"}},
                        OpPattern::kOpaque,
                        Identity,
                        "its argument, marking the border of a region for an external codegen"};
  }
}

}  // namespace kiln::ir
