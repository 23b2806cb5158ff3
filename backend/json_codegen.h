// JSON codegen (TVM's JSONSerializer): an external function as the JSON subgraph its runtime
// module runs (runtime/json_graph.h). Parameters become `input` nodes named as the parameters
// (dnnl_0_i0); constants `const` nodes named <prefix>_const_<i> in the order they are met, their
// arrays handed to the const-loader module; op calls `kernel` nodes named by the op with its
// attributes; a call of a composite (MergeComposite) one `kernel` node named by the composite,
// carrying the attributes of its ops (its heaviest op's first, which wins where two ops name one
// attribute) and PartitionedFromPattern (its ops in order, each followed by "_"). Attribute
// values are written as TVM writes them: integers in decimal, floats with max_digits10 digits,
// lists one string per element; the attributes Relay's op has and kiln's lacks (conv2d's
// channels and kernel_size, dense's units, out_dtype, pooling's out_layout, layer_norm's center
// and scale) are added with the values the types imply.
#pragma once

#include <string>
#include <vector>

#include "ir/expr.h"
#include "runtime/json_graph.h"
#include "runtime/module.h"
#include "runtime/params.h"

namespace kiln::backend {

struct JsonSubgraph {
  runtime::JsonGraph graph;
  runtime::NamedArrays constants;  // in the order of the const nodes
};

// Throws Error when the function holds what the format cannot say (a nested function call that
// is not a composite, a tuple-typed parameter of a kernel, ...).
JsonSubgraph SerializeToJson(const ir::Expr& function, const std::string& const_prefix);

// A module of type `type_key` (dnnl_json, ...) holding a JSON subgraph for export only: it writes
// the JSON runtime's binary form (runtime/json_runtime.h) and answers get_symbol and
// get_const_vars; the runtime that runs it is loaded with the library (it may live in a library of
// its own, such as libkiln_dnnl).
runtime::Module JsonModuleForExport(const std::string& type_key, const std::string& symbol,
                                    const std::string& graph_json, std::vector<std::string> const_names);

}  // namespace kiln::backend
