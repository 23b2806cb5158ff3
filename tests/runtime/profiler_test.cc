// The profiling executor: per-node timings, the sorted table, the Chrome trace and
// run_individual, checked on the test model.
#include "runtime/profiler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runtime/error.h"
#include "runtime/thread_pool.h"
#include "test_util.h"

namespace kiln::runtime {
namespace {

using ::testing::HasSubstr;

class ProfilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    exec_ = std::make_unique<GraphExecutor>(ParseGraphJson(ReadFile(test::DataPath("test_model.json"))),
                                            LoadModuleFromFile(test::LibPath("kiln_test_ops")));
    exec_->LoadParams(test::TestModelParams());
    x_ = test::TestInput(1.0f);
    exec_->SetInput(0, *test::FloatArray({1, 8}, x_).get());
  }
  std::unique_ptr<GraphExecutor> exec_;
  std::vector<float> x_;
};

TEST_F(ProfilerTest, ProfiledRunComputesTheSameOutputs) {
  ProfileReport report = ProfileRun(*exec_);
  std::vector<float> want0, want1;
  test::ReferenceTestModel(x_, want0, want1);
  EXPECT_EQ(test::ToVector(exec_->GetOutput(0)), want0);
  EXPECT_EQ(test::ToVector(exec_->GetOutput(1)), want1);
  ASSERT_EQ(report.nodes.size(), 6u);  // the __nop takes no step
}

TEST_F(ProfilerTest, TimingsAreOrderedAndSumToTheTotal) {
  ProfileReport report = ProfileRun(*exec_);
  double sum = 0;
  for (size_t i = 0; i < report.nodes.size(); ++i) {
    const NodeTiming& t = report.nodes[i];
    EXPECT_GE(t.duration_us, 0.0);
    if (i > 0) {
      EXPECT_GE(t.start_us, report.nodes[i - 1].start_us + report.nodes[i - 1].duration_us);
    }
    sum += t.duration_us;
  }
  EXPECT_DOUBLE_EQ(report.total_us, sum);
  EXPECT_EQ(report.nodes[0].name, "add");
  EXPECT_EQ(report.nodes[0].function, "test_add");
  EXPECT_EQ(report.nodes[0].shapes, "float32[1, 8], float32[1, 8] -> float32[1, 8]");
  EXPECT_EQ(report.nodes[2].shapes, "float32[2, 4] -> float32[2, 4], float32[2, 4]");
}

TEST_F(ProfilerTest, ManyRunsGiveMediansThatTileARun) {
  ProfileReport report = ProfileRun(*exec_, 5);
  std::vector<float> want0, want1;
  test::ReferenceTestModel(x_, want0, want1);
  EXPECT_EQ(test::ToVector(exec_->GetOutput(0)), want0);
  ASSERT_EQ(report.nodes.size(), 6u);
  double end = 0;
  for (const NodeTiming& t : report.nodes) {
    EXPECT_DOUBLE_EQ(t.start_us, end);
    end += t.duration_us;
  }
  EXPECT_DOUBLE_EQ(report.total_us, end);
  EXPECT_THAT([&] { ProfileRun(*exec_, 0); }, ::testing::ThrowsMessage<Error>(HasSubstr("at least one run, got 0")));
}

TEST_F(ProfilerTest, TableIsSortedSlowestFirst) {
  ProfileReport report;
  report.nodes = {{0, "fast", "f_fast", "loops", 0, 1.0, "a"}, {1, "slow", "f_slow", "conv2d.nchwc_direct", 1, 3.0, "b"}};
  report.total_us = 4.0;
  std::string table = report.Table();
  EXPECT_LT(table.find("slow"), table.find("fast"));
  EXPECT_THAT(table, HasSubstr("75.00"));
  EXPECT_THAT(table, HasSubstr("25.00"));
  EXPECT_THAT(table, HasSubstr("Total"));
  EXPECT_THAT(table, HasSubstr("Time (us)"));
  EXPECT_THAT(table, HasSubstr("Implementation"));
  EXPECT_LT(table.find("conv2d.nchwc_direct"), table.find("loops"));
}

TEST_F(ProfilerTest, ChromeTraceHasOneCompleteEventPerNode) {
  ProfileReport report = ProfileRun(*exec_);
  auto trace = nlohmann::json::parse(report.ChromeTrace());
  ASSERT_EQ(trace["traceEvents"].size(), report.nodes.size());
  for (size_t i = 0; i < report.nodes.size(); ++i) {
    const auto& event = trace["traceEvents"][i];
    EXPECT_EQ(event["ph"], "X");
    EXPECT_EQ(event["name"], report.nodes[i].name);
    EXPECT_DOUBLE_EQ(event["dur"].get<double>(), report.nodes[i].duration_us);
    EXPECT_EQ(event["args"]["function"], report.nodes[i].function);
  }
}

TEST_F(ProfilerTest, RunIndividualMeasuresEveryStep) {
  auto times = RunIndividual(*exec_, 3, 2, 1);
  ASSERT_EQ(times.size(), exec_->NumSteps());
  for (const auto& step : times) {
    ASSERT_EQ(step.size(), 2u);
    for (double t : step) EXPECT_GT(t, 0.0);
  }
  EXPECT_THROW(RunIndividual(*exec_, 0, 1, 0), Error);
  EXPECT_THROW(RunIndividual(*exec_, 1, 1, -1), Error);
}

}  // namespace
}  // namespace kiln::runtime
