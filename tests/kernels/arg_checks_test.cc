// The argument checks at the entry of every operator function of a model library: CheckArgs
// (fixed shapes), CheckBatchedArgs (a function run once per sample of a batch dimension) and
// DimArgs (the shape dimensions a function of a library with such dimensions takes last).
#include <string>
#include <utility>
#include <vector>

#include "kernels/backend_api.h"
#include "kernel_test_util.h"

namespace kiln::kernels {
namespace {

// A compact float32 CPU tensor of `shape` (no data: the checks read only the description).
struct Tensor {
  explicit Tensor(std::vector<int64_t> extents) : shape(std::move(extents)) {
    dl.data = nullptr;
    dl.device = {kDLCPU, 0};
    dl.ndim = static_cast<int>(shape.size());
    dl.dtype = {kDLFloat, 32, 1};
    dl.shape = shape.data();
    dl.strides = nullptr;
    dl.byte_offset = 0;
  }
  Tensor(const Tensor&) = delete;  // dl.shape points into shape
  Tensor& operator=(const Tensor&) = delete;
  std::vector<int64_t> shape;
  DLTensor dl;
};

// Arguments as the executor passes them: DLTensor handles.
struct Call {
  explicit Call(std::vector<Tensor*> tensors) {
    for (Tensor* t : tensors) {
      values.push_back(TVMValue{});
      values.back().v_handle = &t->dl;
      codes.push_back(kTVMDLTensorHandle);
    }
  }
  int count() const { return static_cast<int>(values.size()); }
  std::vector<TVMValue> values;
  std::vector<int> codes;
};

const int64_t kImage[] = {1, 3, 4, 4};     // one sample of the input
const int64_t kWeight[] = {8, 3, 1, 1};    // not batched
const int64_t kOutput[] = {2, 8, 4, 4};    // one sample is two rows of the output
const ArgSpec kSpecs[] = {{kDLFloat, 32, 4, kImage}, {kDLFloat, 32, 4, kWeight}, {kDLFloat, 32, 4, kOutput}};
const unsigned char kBatched[] = {1, 0, 1};

TEST(ArgChecks, FixedShapesMustMatchExactly) {
  Tensor image({1, 3, 4, 4}), weight({8, 3, 1, 1}), output({2, 8, 4, 4});
  Call call({&image, &weight, &output});
  EXPECT_EQ(CheckArgs("f", call.values.data(), call.codes.data(), call.count(), kSpecs, 3), 0);
  Tensor two_images({2, 3, 4, 4});
  Call batch({&two_images, &weight, &output});
  EXPECT_EQ(CheckArgs("f", batch.values.data(), batch.codes.data(), batch.count(), kSpecs, 3), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("f: argument 0 does not have the dtype, shape"), std::string::npos);
}

// An output whose storage the executor sizes as the graph runs: any extents, but its rank and dtype.
TEST(ArgChecks, ASpecWithoutExtentsTakesAnyOfItsRank) {
  const ArgSpec sized[] = {{kDLFloat, 32, 1, nullptr}};
  for (int64_t n : {0, 1, 1000}) {
    Tensor flat({n});
    Call call({&flat});
    EXPECT_EQ(CheckArgs("g", call.values.data(), call.codes.data(), 1, sized, 1), 0) << n;
  }
  Tensor matrix({2, 3});
  Call call({&matrix});
  EXPECT_EQ(CheckArgs("g", call.values.data(), call.codes.data(), 1, sized, 1), -1);
}

TEST(ArgChecks, BatchedArgumentsGiveTheSampleCount) {
  for (int64_t n : {1, 3, 8}) {
    Tensor image({n, 3, 4, 4}), weight({8, 3, 1, 1}), output({2 * n, 8, 4, 4});
    Call call({&image, &weight, &output});
    int64_t samples = -7;
    EXPECT_EQ(CheckBatchedArgs("f", call.values.data(), call.codes.data(), call.count(), kSpecs, kBatched, 3, &samples),
              0)
        << TVMGetLastError();
    EXPECT_EQ(samples, n);
  }
}

// Each case: the arguments, and the index of the argument the message names.
TEST(ArgChecks, BatchedArgumentsThatDisagreeAreRefused) {
  struct Case {
    std::vector<int64_t> image, weight, output;
    int named;
  };
  const Case cases[] = {
      {{3, 3, 4, 4}, {8, 3, 1, 1}, {4, 8, 4, 4}, 2},   // 3 samples in, 2 out
      {{2, 3, 4, 4}, {8, 3, 1, 1}, {6, 8, 4, 4}, 2},   // 2 in, 3 out
      {{2, 3, 4, 4}, {16, 3, 1, 1}, {4, 8, 4, 4}, 1},  // an argument without samples batched
      {{2, 3, 4, 4}, {8, 3, 1, 1}, {3, 8, 4, 4}, 2},   // not a whole number of samples
      {{0, 3, 4, 4}, {8, 3, 1, 1}, {0, 8, 4, 4}, 0},   // no sample
      {{2, 3, 4, 5}, {8, 3, 1, 1}, {4, 8, 4, 4}, 0},   // another extent
  };
  for (const Case& c : cases) {
    Tensor image(c.image), weight(c.weight), output(c.output);
    Call call({&image, &weight, &output});
    int64_t samples = 0;
    EXPECT_EQ(CheckBatchedArgs("g", call.values.data(), call.codes.data(), call.count(), kSpecs, kBatched, 3, &samples),
              -1);
    std::string expected = "g: argument " + std::to_string(c.named) + " does not have";
    EXPECT_NE(std::string(TVMGetLastError()).find(expected), std::string::npos) << TVMGetLastError();
  }
}

TEST(ArgChecks, ArgumentCountAndKindsAreChecked) {
  Tensor image({1, 3, 4, 4}), weight({8, 3, 1, 1});
  Call call({&image, &weight});
  int64_t samples = 0;
  EXPECT_EQ(CheckBatchedArgs("h", call.values.data(), call.codes.data(), call.count(), kSpecs, kBatched, 3, &samples),
            -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("h: expected 3 arguments, got 2"), std::string::npos);
  Tensor output({2, 8, 4, 4});
  Call wrong_kind({&image, &weight, &output});
  wrong_kind.codes[1] = kTVMArgInt;
  EXPECT_EQ(CheckArgs("h", wrong_kind.values.data(), wrong_kind.codes.data(), 3, kSpecs, 3), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("h: argument 1 is not a tensor"), std::string::npos);
}

TEST(ArgChecks, ShapeDimensionsComeAfterTheTensorsAsPositiveIntegers) {
  Tensor image({1, 3, 4, 4});
  Call call({&image});
  call.values.push_back(TVMValue{});
  call.values.back().v_int64 = 37;
  call.codes.push_back(kDLInt);
  int64_t dims[1] = {0};
  EXPECT_EQ(DimArgs("f", call.values.data(), call.codes.data(), call.count(), 1, dims, 1), 0);
  EXPECT_EQ(dims[0], 37);
  EXPECT_EQ(DimArgs("f", call.values.data(), call.codes.data(), call.count(), 1, dims, 2), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("f: expected 1 tensors and 2 shape dimensions, got 2 arguments"),
            std::string::npos);
  call.values.back().v_int64 = 0;
  EXPECT_EQ(DimArgs("f", call.values.data(), call.codes.data(), call.count(), 1, dims, 1), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("f: shape dimension 0 (argument 1) is not a positive integer"),
            std::string::npos);
  call.values.back().v_int64 = 37;
  call.codes.back() = kTVMDLTensorHandle;
  EXPECT_EQ(DimArgs("f", call.values.data(), call.codes.data(), call.count(), 1, dims, 1), -1);
}

}  // namespace
}  // namespace kiln::kernels
