// Stress test of the executor's thread-safety contract: one executor is used by one thread at a
// time, and any number of executors sharing parameters (ShareParams) run concurrently. The test
// model's operators use the workspace pool and a parallel launch with a barrier, so the thread
// pool is exercised as well. Built for ThreadSanitizer by `make test-tsan`.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/graph_executor.h"
#include "runtime/graph_json.h"
#include "runtime/module.h"
#include "runtime/params.h"
#include "runtime/thread_pool.h"
#include "test_util.h"

namespace kiln::runtime {
namespace {

using Executors = std::vector<std::unique_ptr<GraphExecutor>>;

class SharedParamsConcurrency : public ::testing::Test {
 protected:
  void SetUp() override {
    SetNumThreads(2);
    graph_ = ParseGraphJson(ReadFile(test::DataPath("test_model.json")));
    ops_ = LoadModuleFromFile(test::LibPath("kiln_test_ops"));
    params_blob_ = SaveParams(ParamsOf(*NewExecutor()));
  }
  void TearDown() override { SetNumThreads(0); }

  std::unique_ptr<GraphExecutor> NewExecutor() const { return std::make_unique<GraphExecutor>(graph_, ops_); }

  // Every input named p_* with values ParamValue(i).
  static NamedArrays ParamsOf(const GraphExecutor& exec) {
    NamedArrays params;
    for (int index = 0; index < exec.NumInputs(); ++index) {
      const std::string& name = exec.InputName(index);
      if (name.rfind("p_", 0) != 0) continue;
      NDArray input = exec.GetInput(index);
      std::vector<float> values(input.NumBytes() / sizeof(float));
      for (size_t i = 0; i < values.size(); ++i) values[i] = test::ParamValue(static_cast<int64_t>(i));
      params.emplace_back(name, test::FloatArray(input.shape(), values));
    }
    return params;
  }

  std::unique_ptr<GraphExecutor> NewSource() const {
    auto source = NewExecutor();
    source->LoadParams(params_blob_);
    return source;
  }

  std::unique_ptr<GraphExecutor> NewSharing(const GraphExecutor& source) const {
    auto exec = NewExecutor();
    exec->ShareParams(source, params_blob_);
    return exec;
  }

  // Runs `exec` on an input made from `seed`; true when both outputs equal the reference.
  static bool RunAndCheck(GraphExecutor& exec, float seed) {
    std::vector<float> x = test::TestInput(seed);
    exec.SetInput(exec.InputIndex("x"), *test::FloatArray({1, 8}, x).get());
    exec.Run();
    std::vector<float> want0, want1;
    test::ReferenceTestModel(x, want0, want1);
    return test::ToVector(exec.GetOutput(0)) == want0 && test::ToVector(exec.GetOutput(1)) == want1;
  }

  // Runs every executor in a thread of its own, `iterations` times with inputs particular to the
  // thread and iteration; returns the number of wrong results (or errors) per thread.
  static std::vector<int> RunConcurrently(const Executors& executors, int iterations) {
    std::vector<int> wrong(executors.size(), 0);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < executors.size(); ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < iterations; ++i) {
          float seed = static_cast<float>(t) + 0.01f * static_cast<float>(i);
          try {
            if (!RunAndCheck(*executors[t], seed)) ++wrong[t];
          } catch (const std::exception& e) {
            ADD_FAILURE() << "thread " << t << ": " << e.what();
            ++wrong[t];
          }
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    return wrong;
  }

  Graph graph_;
  Module ops_;
  std::string params_blob_;
};

TEST_F(SharedParamsConcurrency, TheBlobHoldsEveryParameter) {
  NamedArrays params = LoadParams(params_blob_);
  ASSERT_EQ(params.size(), 1u);
  EXPECT_EQ(params[0].first, "p_w");
  EXPECT_EQ(test::ToVector(params[0].second), test::ToVector(test::TestModelParams()[0].second));
}

TEST_F(SharedParamsConcurrency, SharingExecutorsRunConcurrentlyWithTheSource) {
  auto source = NewSource();
  Executors executors;
  for (int i = 0; i < 6; ++i) executors.push_back(NewSharing(*source));
  // Sharing is real: every executor reads the source's parameter memory.
  int p_w = source->InputIndex("p_w");
  for (const auto& exec : executors) EXPECT_EQ(exec->GetInput(p_w).data(), source->GetInput(p_w).data());
  executors.push_back(std::move(source));

  std::vector<int> wrong = RunConcurrently(executors, 300);
  for (size_t t = 0; t < wrong.size(); ++t) EXPECT_EQ(wrong[t], 0) << "executor " << t;
}

TEST_F(SharedParamsConcurrency, ExecutorsComeAndGoWhileOthersRun) {
  auto source = NewSource();
  Executors runners;
  for (int i = 0; i < 3; ++i) runners.push_back(NewSharing(*source));

  // Creators build, share, run and destroy executors while the runners run; the source itself
  // is only read (by ShareParams).
  constexpr int kCreators = 3;
  constexpr int kLifetimes = 30;
  std::vector<int> creator_wrong(kCreators, 0);
  std::vector<std::thread> creators;
  for (int c = 0; c < kCreators; ++c) {
    creators.emplace_back([&, c] {
      for (int i = 0; i < kLifetimes; ++i) {
        try {
          // Some fresh executors load their own copy of the parameters instead.
          auto exec = i % 3 == 0 ? NewSource() : NewSharing(*source);
          if (!RunAndCheck(*exec, -1.0f - static_cast<float>(c) - 0.1f * static_cast<float>(i))) {
            ++creator_wrong[c];
          }
        } catch (const std::exception& e) {
          ADD_FAILURE() << "creator " << c << ": " << e.what();
          ++creator_wrong[c];
        }
      }
    });
  }
  std::vector<int> runner_wrong = RunConcurrently(runners, 200);
  for (std::thread& thread : creators) thread.join();
  for (size_t t = 0; t < runner_wrong.size(); ++t) EXPECT_EQ(runner_wrong[t], 0) << "runner " << t;
  for (int c = 0; c < kCreators; ++c) EXPECT_EQ(creator_wrong[c], 0) << "creator " << c;
}

TEST_F(SharedParamsConcurrency, SharingExecutorsOutliveTheSource) {
  auto source = NewSource();
  Executors executors;
  for (int i = 0; i < 4; ++i) executors.push_back(NewSharing(*source));
  source.reset();
  int p_w = executors[0]->InputIndex("p_w");
  std::vector<float> want(8);
  for (int i = 0; i < 8; ++i) want[i] = test::ParamValue(i);
  for (const auto& exec : executors) EXPECT_EQ(test::ToVector(exec->GetInput(p_w)), want);

  std::vector<int> wrong = RunConcurrently(executors, 200);
  for (size_t t = 0; t < wrong.size(); ++t) EXPECT_EQ(wrong[t], 0) << "executor " << t;
  // A second generation shares from a sharing executor, which then goes away too.
  auto grandchild = NewSharing(*executors[0]);
  executors.clear();
  EXPECT_EQ(test::ToVector(grandchild->GetInput(p_w)), want);
  EXPECT_TRUE(RunAndCheck(*grandchild, 3.5f));
}

TEST_F(SharedParamsConcurrency, SharingDoesNotCopyOrKeepParameterStorage) {
  auto source = NewSource();
  auto sharing = NewSharing(*source);
  auto loaded = NewSource();
  // The sharing executor freed its own parameter buffer: it owns less than one that loaded.
  EXPECT_LT(sharing->OwnedStorageBytes(), loaded->OwnedStorageBytes());
  EXPECT_EQ(loaded->OwnedStorageBytes() - sharing->OwnedStorageBytes(), 8 * sizeof(float));
}

}  // namespace
}  // namespace kiln::runtime
