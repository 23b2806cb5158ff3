// TVM's Array<NDArray> object built and read (tvm_object_array.h).
#include "runtime/tvm_object_array.h"

#include <cstring>

#include "runtime/dtype.h"
#include "runtime/error.h"

namespace kiln::runtime {
namespace {

// The deleter of the containers a TvmNDArrayArray owns: their reference count never reaches zero
// (the array frees them), and the deleter marks them as kiln's, manager_ctx pointing at the NDArray.
void OwnedByTvmNDArrayArray(KilnTvmObject*) {}

}  // namespace

TvmNDArrayArray::TvmNDArrayArray(std::vector<NDArray> arrays)
    : arrays_(std::move(arrays)), containers_(arrays_.size()) {
  size_t pointers_per_node = sizeof(KilnTvmArray) / sizeof(KilnTvmObject*);
  node_.resize(1 + (arrays_.size() + pointers_per_node - 1) / pointers_per_node);
  KilnTvmArray& node = node_.front();
  node.object = {kKilnTvmArrayTypeIndex, 1, nullptr};
  node.size = node.capacity = static_cast<int64_t>(arrays_.size());
  for (size_t i = 0; i < arrays_.size(); ++i) {
    KilnTvmNDArray& c = containers_[i];
    c.object = {kKilnTvmNDArrayTypeIndex, 1, &OwnedByTvmNDArrayArray};
    c.dl_tensor = *arrays_[i].get();
    c.manager_ctx = &arrays_[i];
    c.shape = nullptr;
    KilnTvmArrayElements(&node)[i] = &c.object;
  }
}

std::vector<NDArray> NDArraysOfTvmArray(void* handle, const std::string& what) {
  Check(handle != nullptr, what, " is a null object, expected TVM's Array<NDArray>");
  auto* node = static_cast<KilnTvmArray*>(handle);
  Check(node->object.type_index == kKilnTvmArrayTypeIndex, what, " is an object of type index ",
        node->object.type_index, ", expected TVM's Array (", static_cast<int>(kKilnTvmArrayTypeIndex), ")");
  Check(node->size >= 0 && node->size <= node->capacity, what, " is an array of ", node->size,
        " elements and capacity ", node->capacity);
  std::vector<NDArray> arrays;
  for (int64_t i = 0; i < node->size; ++i) {
    KilnTvmObject* element = KilnTvmArrayElements(node)[i];
    Check(element != nullptr && element->type_index == kKilnTvmNDArrayTypeIndex, what, ": element ", i,
          " is not an NDArray");
    auto* c = reinterpret_cast<KilnTvmNDArray*>(element);
    if (element->deleter == &OwnedByTvmNDArrayArray) {
      arrays.push_back(*static_cast<const NDArray*>(c->manager_ctx));
      continue;
    }
    NDArray copy = NDArray::Empty(std::vector<int64_t>(c->dl_tensor.shape, c->dl_tensor.shape + c->dl_tensor.ndim),
                                  c->dl_tensor.dtype);
    copy.CopyFrom(c->dl_tensor);
    arrays.push_back(copy);
  }
  return arrays;
}

}  // namespace kiln::runtime
