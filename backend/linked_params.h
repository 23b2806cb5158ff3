// Which parameters an exported library links into its data (TVM's link-params), and
// the image that holds them (layout: kernels/linked_params.h).
#pragma once

#include <string>

#include "backend/blob_object.h"
#include "runtime/graph_json.h"
#include "runtime/params.h"

namespace kiln::backend {

struct LinkedParams {
  // The bytes at __kiln_linked_params (size 0 when none is linked): the header, then each
  // parameter's data where it lies, in `header` and the params given to LinkParams.
  BlobBytes image;
  std::string header;
  runtime::NamedArrays unlinked;  // the parameters the factory keeps (and copies into each executor)

  LinkedParams() = default;
  // The image refers to `header`: a copy would refer to the original's; a move keeps the header's
  // buffer (it is never short enough to be stored inline: 8 bytes and 16 per parameter).
  LinkedParams(const LinkedParams&) = delete;
  LinkedParams& operator=(const LinkedParams&) = delete;
  LinkedParams(LinkedParams&&) = default;
};

// Links every parameter of `graph` that no operator writes and that is not an output (an executor
// hands outputs to the caller as memory it may write): a parameter's storage holds only it. The
// image refers to `params`' arrays and to the result's header: both outlive its use.
LinkedParams LinkParams(const runtime::Graph& graph, const runtime::NamedArrays& params);

}  // namespace kiln::backend
