// External codegens: functions of the main function marked Compiler="<name>" (ir::IsExternal;
// partitioning marks them) are compiled by another backend into a runtime module, which travels
// in the exported library beside kiln's compiled code and runs there (TVM's BYOC). The codegens
// are one plain table (external_codegen.cc); each is behind its own CMake option, and when that
// is off its entry answers "not enabled in this build".
#pragma once

#include <string>
#include <vector>

#include "ir/expr.h"
#include "runtime/module.h"
#include "runtime/params.h"
#include "transform/merge_composite.h"

namespace kiln::backend {

// What an external codegen makes of one external function: the module running it, and the
// constants its `__init_<symbol>` takes, in order (the const-loader module owns them).
struct ExternalModule {
  std::string symbol;  // the function it runs (the symbol the codegen was given)
  runtime::Module module;
  runtime::NamedArrays constants;
};

struct ExternalCodegen {
  std::string name;  // the Compiler attribute of the functions it takes ("dnnl")
  // Null when the codegen is not part of this build.
  bool (*supports)(const ir::CallNode& call) = nullptr;  // whether it can run this op call
  // The module running `function` (an external function) as the packed function `symbol`.
  ExternalModule (*generate)(const std::string& symbol, const ir::Expr& function) = nullptr;
  // The composites MergeComposite forms for it, longer patterns first (null: none).
  std::vector<transform::CompositePattern> (*patterns)() = nullptr;
  // A rewrite into the forms it takes, before the composites are formed (null: none).
  ir::Expr (*prepare)(const ir::Expr& main) = nullptr;

  bool enabled() const { return generate != nullptr; }
};

// Every external codegen kiln knows, enabled in this build or not.
const std::vector<ExternalCodegen>& ExternalCodegens();

// The codegen `name` of `table`. Throws Error when there is none of that name (naming those there
// are) or when it is not enabled in this build.
const ExternalCodegen& FindExternalCodegen(const std::string& name,
                                           const std::vector<ExternalCodegen>& table = ExternalCodegens());

}  // namespace kiln::backend
