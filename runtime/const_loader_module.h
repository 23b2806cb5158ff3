// The const-loader module (TVM's `const_loader`, formerly `metadata`): owns the constants of the
// external functions (name -> array) and which constants each function (symbol) takes. It sits
// between the executor factory and the code: its imports are the compiled host code and the
// external modules. The first lookup of a symbol calls `__init_<symbol>`(its constants, one array
// argument each) in the import that has it, exactly once even under concurrent lookups, then
// every lookup is forwarded to the imports. Once every symbol is initialized the module drops
// its own references to the constants (the external modules hold what they need).
// `get_const_var_ndarray` answers the number of constants it still holds.
//
// Binary form (TVM v0.19 const_loader_module.cc): vector<string> names; u64 count; count NDArray
// records; vector<string> symbols; u64 symbol count; per symbol vector<string> of its constants.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/module.h"
#include "runtime/params.h"

namespace kiln::runtime {

// Throws Error when a symbol names a constant that is not among `constants`, or a name repeats.
Module CreateConstLoaderModule(NamedArrays constants,
                               std::vector<std::pair<std::string, std::vector<std::string>>> constants_by_symbol);
// The loader of the "const_loader" and "metadata" blob entries.
Module LoadConstLoaderModule(ByteReader& reader);

}  // namespace kiln::runtime
