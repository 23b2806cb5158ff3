// Whole-run benchmarks (what Python's GraphModule.benchmark calls): the statistics, the options'
// checks, inputs set before timing, and end-to-end runs that copy inputs and outputs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/error.h"
#include "runtime/profiler.h"
#include "test_util.h"

namespace kiln::runtime {
namespace {

using ::testing::HasSubstr;

TEST(SummarizeTimesTest, StatisticsOfMeasurements) {
  BenchmarkResult r = SummarizeTimes({4.0, 1.0, 3.0, 2.0});
  EXPECT_EQ(r.results, (std::vector<double>{4.0, 1.0, 3.0, 2.0}));  // in measurement order
  EXPECT_DOUBLE_EQ(r.mean, 2.5);
  EXPECT_DOUBLE_EQ(r.median, 2.5);
  EXPECT_DOUBLE_EQ(r.min, 1.0);
  EXPECT_DOUBLE_EQ(r.max, 4.0);
  EXPECT_DOUBLE_EQ(r.std, std::sqrt(1.25));
  EXPECT_DOUBLE_EQ(SummarizeTimes({3.0, 1.0, 2.0}).median, 2.0);
  EXPECT_THAT(r.Summary(), HasSubstr("mean (ms)    median (ms)  max (ms)     min (ms)     std (ms)"));
  EXPECT_THAT(r.Summary(), HasSubstr("2500.0000    2500.0000    4000.0000    1000.0000"));
  EXPECT_THROW(SummarizeTimes({}), Error);
}

class BenchmarkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    exec_ = std::make_unique<GraphExecutor>(ParseGraphJson(ReadFile(test::DataPath("test_model.json"))),
                                            LoadModuleFromFile(test::LibPath("kiln_test_ops")));
    exec_->LoadParams(test::TestModelParams());
  }
  std::unique_ptr<GraphExecutor> exec_;
};

TEST_F(BenchmarkTest, MeasuresRepeatTimesWithInputsSetFirst) {
  std::vector<float> x = test::TestInput(2.0f);
  BenchmarkResult r = Benchmark(*exec_, BenchmarkOptions{3, 4, 0, false}, {{"x", test::FloatArray({1, 8}, x)}});
  ASSERT_EQ(r.results.size(), 4u);
  EXPECT_GT(r.min, 0.0);
  EXPECT_LE(r.min, r.median);
  EXPECT_LE(r.median, r.max);
  std::vector<float> want0, want1;
  test::ReferenceTestModel(x, want0, want1);
  EXPECT_EQ(test::ToVector(exec_->GetOutput(0)), want0);
}

TEST_F(BenchmarkTest, EndToEndAndMinRepeatMs) {
  BenchmarkResult r = Benchmark(*exec_, BenchmarkOptions{1, 2, 5, true},
                                {{"x", test::FloatArray({1, 8}, test::TestInput(1.0f))}});
  ASSERT_EQ(r.results.size(), 2u);
  EXPECT_GT(r.mean, 0.0);
}

TEST_F(BenchmarkTest, BadOptionsAndInputsAreErrorsBeforeAnyRun) {
  auto message = [&](const BenchmarkOptions& options, const NamedArrays& inputs) {
    try {
      Benchmark(*exec_, options, inputs);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message({0, 1, 0, false}, {}), HasSubstr("number and repeat must be positive"));
  EXPECT_THAT(message({1, 1, -1, false}, {}), HasSubstr("min_repeat_ms not negative"));
  EXPECT_THAT(message({1, 1, 0, false}, {{"nope", test::FloatArray({1, 8}, test::TestInput(1.0f))}}),
              HasSubstr("nope"));
  EXPECT_THAT(message({1, 1, 0, false}, {{"x", test::FloatArray({2, 4}, test::TestInput(1.0f))}}),
              HasSubstr("shape"));
}

}  // namespace
}  // namespace kiln::runtime
