// TVM's Array<NDArray> object (kiln/tvm_objects.h) in the runtime: the const loader passes a
// symbol's constants to `__init_<symbol>` as one, as TVM's const loader does, and kiln's JSON
// runtime takes its constants from one.
#pragma once

#include <string>
#include <vector>

#include "kiln/tvm_objects.h"
#include "runtime/ndarray.h"

namespace kiln::runtime {

// An Array<NDArray> of `arrays` laid out as TVM's runtime lays it out, alive as long as this is.
// Its containers refer to the arrays, which NDArraysOfTvmArray shares rather than copies.
class TvmNDArrayArray {
 public:
  explicit TvmNDArrayArray(std::vector<NDArray> arrays);
  TvmNDArrayArray(const TvmNDArrayArray&) = delete;
  TvmNDArrayArray& operator=(const TvmNDArrayArray&) = delete;

  // The object handle to pass with type code kTVMObjectHandle.
  void* handle() { return &node_.front(); }

 private:
  std::vector<NDArray> arrays_;
  std::vector<KilnTvmNDArray> containers_;
  std::vector<KilnTvmArray> node_;  // the node, then room for the element references
};

// The arrays of the Array<NDArray> object `handle`: those of a TvmNDArrayArray shared, any other
// copied (its owner may free it after the call). Throws Error saying what `what` is not.
std::vector<NDArray> NDArraysOfTvmArray(void* handle, const std::string& what);

}  // namespace kiln::runtime
