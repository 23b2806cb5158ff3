// Parameters linked into a model library (TVM's link-params): the weights lie in the library's
// data, where every executor of the library, in every process, reads the same file pages;
// `_lookup_linked_param` (linked_params.cc) tells the executor where each one is.
//
// The image, at the hidden symbol __kiln_linked_params (aligned to kLinkedParamAlignment): a
// uint64 count, `count` LinkedParam entries sorted by storage id, then the arrays' bytes, each at an
// offset from the symbol that is a multiple of kLinkedParamAlignment. backend/linked_params.cc
// writes it at export; a library without it (the three-file form) links no parameters.
#pragma once

#include <cstdint>

namespace kiln::kernels {

struct LinkedParam {
  int64_t storage_id;  // the graph JSON's storage id of the parameter
  uint64_t offset;     // of its bytes, from the start of the image
};

constexpr uint64_t kLinkedParamAlignment = 64;

}  // namespace kiln::kernels
