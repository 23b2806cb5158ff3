// Which parameters an exported library links into its data (TVM's link-params), and
// the image that holds them (layout: kernels/linked_params.h).
#pragma once

#include <string>

#include "runtime/graph_json.h"
#include "runtime/params.h"

namespace kiln::backend {

struct LinkedParams {
  std::string image;             // the bytes at __kiln_linked_params; empty when none is linked
  runtime::NamedArrays unlinked;  // the parameters the factory keeps (and copies into each executor)
};

// Links every parameter of `graph` that no operator writes and that is not an output (an executor
// hands outputs to the caller as memory it may write): a parameter's storage holds only it.
LinkedParams LinkParams(const runtime::Graph& graph, const runtime::NamedArrays& params);

}  // namespace kiln::backend
