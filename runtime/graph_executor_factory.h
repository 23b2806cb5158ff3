// GraphExecutorFactory: graph JSON + parameters + module name, with the compiled code as its
// first import. It is what an exported library's import blob holds, so `load_module("m.so")`
// followed by `lib["default"](dev)` gives a ready executor. Packed functions: `<module name>`
// (devices...), `debug_create`(module name, devices...), `get_graph_json`, `get_graph_params`
// (a params blob), `remove_params` (a factory without parameters).
#pragma once

#include <string>

#include "runtime/graph_json.h"
#include "runtime/module.h"
#include "runtime/params.h"

namespace kiln::runtime {

// Throws Error when the graph JSON is malformed.
Module CreateGraphExecutorFactory(const std::string& graph_json, NamedArrays params,
                                  const std::string& module_name, const Module& lib);
// The loader of the "GraphExecutorFactory" (and legacy "GraphRuntimeFactory") blob entries.
Module LoadGraphExecutorFactory(ByteReader& reader);

}  // namespace kiln::runtime
