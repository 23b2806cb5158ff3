// DLPack exchange as Python's kiln.nd.from_dlpack uses it: bool tensors of DLPack 0.8 (numpy,
// newer frameworks), and tensors that are rejected stay owned by the caller.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/error.h"
#include "runtime/ndarray.h"

namespace kiln::runtime {
namespace {

struct Producer {
  int64_t shape[2] = {2, 3};
  int64_t strides[2] = {3, 1};
  uint8_t data[6] = {1, 0, 1, 1, 0, 0};
  int deleted = 0;
  DLManagedTensor managed{};

  DLManagedTensor* Tensor(DLDataType dtype) {
    managed.dl_tensor = DLTensor{data, kCPU, 2, dtype, shape, strides, 0};
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* self) { ++static_cast<Producer*>(self->manager_ctx)->deleted; };
    return &managed;
  }
};

TEST(DLPackInteropTest, Dlpack08BoolIsKilnBool) {
  Producer producer;
  {
    NDArray array = NDArray::FromDLPack(producer.Tensor(DLDataType{6, 8, 1}));
    EXPECT_EQ(DTypeToString(array.dtype()), "bool");
    EXPECT_EQ(array.NumBytes(), 6u);
    EXPECT_EQ(array.data(), producer.data);  // no copy
    NDArray copy = array;
    array = NDArray();
    EXPECT_EQ(producer.deleted, 0);
  }
  EXPECT_EQ(producer.deleted, 1);
}

TEST(DLPackInteropTest, OtherDtypesAreKept) {
  Producer producer;
  NDArray array = NDArray::FromDLPack(producer.Tensor(DLDataType{kDLUInt, 8, 1}));
  EXPECT_EQ(DTypeToString(array.dtype()), "uint8");
}

TEST(DLPackInteropTest, RejectedTensorsStayWithTheCaller) {
  Producer producer;
  producer.strides[0] = 1;  // a transposed view: not compact
  producer.strides[1] = 2;
  EXPECT_THROW(NDArray::FromDLPack(producer.Tensor(DLDataType{kDLUInt, 8, 1})), Error);
  EXPECT_EQ(producer.deleted, 0);  // the caller still owns it and calls the deleter itself
}

}  // namespace
}  // namespace kiln::runtime
