// The soak test: a model kiln compiled runs KILN_SOAK_RUNS times (default 3,000 in `make test`;
// `make soak` runs 100,000) on executors created and destroyed in four threads at once, the
// library loaded again now and then, each output checked against a reference computed here. Resident memory, open descriptors and threads
// are measured after a first tenth of the runs and again at the end: the descriptors and threads
// must be the same, and memory may grow by at most kMaxGrowthBytes.
#include <dirent.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend/build.h"
#include "ir/text.h"
#include "runtime/graph_executor_module.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

constexpr int kThreads = 4;
constexpr int kRunsPerExecutor = 50;
constexpr int64_t kMaxGrowthBytes = 8 << 20;
constexpr int kRows = 64, kIn = 128, kOut = 128;  // big enough that the matmul uses the thread pool

int64_t ResidentBytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

int CountEntries(const char* directory) {
  int count = 0;
  DIR* dir = opendir(directory);
  while (dirent* entry = readdir(dir)) count += entry->d_name[0] != '.';
  closedir(dir);
  return count;
}

struct Usage {
  int64_t resident;
  int descriptors, threads;
};

// (One descriptor of /proc/self/fd is the one reading it.)
Usage Measure() { return {ResidentBytes(), CountEntries("/proc/self/fd") - 1, CountEntries("/proc/self/task")}; }

class SoakTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* runs = std::getenv("KILN_SOAK_RUNS")) runs_ = std::atoi(runs);
    std::mt19937 random(5);
    std::normal_distribution<float> normal;
    x_.resize(kRows * kIn);
    w_.resize(kOut * kIn);
    for (float& v : x_) v = normal(random);
    for (float& v : w_) v = normal(random) / 16;
    want_.assign(kRows * kOut, 0.0f);  // relu(x w^T), in double
    for (int i = 0; i < kRows; ++i) {
      for (int j = 0; j < kOut; ++j) {
        double sum = 0;
        for (int k = 0; k < kIn; ++k) sum += double{x_[i * kIn + k]} * w_[j * kIn + k];
        want_[i * kOut + j] = static_cast<float>(std::max(sum, 0.0));
      }
    }
    path_ = fs::path(::testing::TempDir()) / ("kiln_soak_" + std::to_string(getpid()) + ".so");
    std::string text = R"(fn (%x: Tensor[(64, 128), float32], %w: Tensor[(128, 128), float32]) {
      %0 = nn.dense(%x, %w);
      nn.relu(%0)
    })";
    backend::Build(ir::ParseFunction(text), backend::BuildOptions()).ExportLibrary(path_.string());
  }
  void TearDown() override { fs::remove(path_); }

  // `runs` runs spread over kThreads threads; each thread makes a new executor every
  // kRunsPerExecutor runs. Returns the number of wrong outputs.
  int Soak(const runtime::Module& lib, int runs) {
    std::atomic<int> next{0}, wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        runtime::NDArray x = runtime::NDArray::Empty({kRows, kIn}, runtime::kFloat32);
        x.CopyFromBytes(x_.data(), x_.size() * sizeof(float));
        std::vector<float> y(kRows * kOut);
        for (int made = 0; next.fetch_add(kRunsPerExecutor) < runs; ++made) {
          // Now and then the library is loaded again too (checked, opened and closed: the live
          // module comes back), so a descriptor or handle that loading leaks would show.
          runtime::Module from = made % 10 == 9 ? runtime::LoadModuleFromFile(path_.string()) : lib;
          auto executor = runtime::GetGraphExecutor(from.GetFunction("default")(runtime::kCPU).AsModule());
          executor->SetInput(executor->GetInputIndex("w"), *weights_.get());
          for (int r = 0; r < kRunsPerExecutor; ++r) {
            executor->SetInput(0, *x.get());
            executor->Run();
            executor->GetOutput(0).CopyToBytes(y.data(), y.size() * sizeof(float));
            for (size_t i = 0; i < y.size(); ++i) {
              if (std::abs(y[i] - want_[i]) > 1e-4f + 1e-4f * std::abs(want_[i])) {
                ++wrong;
                break;
              }
            }
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
    return wrong.load();
  }

  int runs_ = 3000;
  std::vector<float> x_, w_, want_;
  runtime::NDArray weights_;
  fs::path path_;
};

TEST_F(SoakTest, ManyRunsOnExecutorsMadeAndDroppedInThreadsLeakNothing) {
  runtime::Module lib = runtime::LoadModuleFromFile(path_.string());
  weights_ = runtime::NDArray::Empty({kOut, kIn}, runtime::kFloat32);
  weights_.CopyFromBytes(w_.data(), w_.size() * sizeof(float));
  int warm_up = std::max(runs_ / 10, kThreads * kRunsPerExecutor);
  ASSERT_EQ(Soak(lib, warm_up), 0);
  Usage before = Measure();
  ASSERT_EQ(Soak(lib, runs_ - warm_up), 0);
  Usage after = Measure();
  std::printf("soak: %d runs in %d threads; resident %.1f MiB -> %.1f MiB, %d -> %d descriptors, %d -> %d threads\n",
              runs_, kThreads, before.resident / 1048576.0, after.resident / 1048576.0, before.descriptors,
              after.descriptors, before.threads, after.threads);
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer keeps freed memory in quarantine, so resident memory grows with any churn;
  // there LeakSanitizer checks for leaks at exit instead.
  std::printf("soak: resident memory not bounded under AddressSanitizer\n");
#else
  EXPECT_LE(after.resident - before.resident, kMaxGrowthBytes);
#endif
  EXPECT_EQ(after.descriptors, before.descriptors);
  EXPECT_EQ(after.threads, before.threads);
}

}  // namespace
}  // namespace kiln
