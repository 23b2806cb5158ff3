// ParallelFor (kernels/support.cc) on the runtime's thread pool: every item runs once; each task
// starts on its home range of the items; a task held up does not hold up the launch.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "kernels/kernels.h"
#include "runtime/thread_pool.h"
#include "tests/kernels/kernel_test_util.h"

namespace kiln::kernels {
namespace {

struct Record {
  std::vector<std::atomic<int>> runs;
  explicit Record(size_t items) : runs(items) {}
};

void RecordItems(int64_t begin, int64_t end, void* context) {
  auto* record = static_cast<Record*>(context);
  for (int64_t i = begin; i < end; ++i) {
    record->runs[i].fetch_add(1);
  }
}

TEST(ParallelFor, EveryItemRunsOnce) {
  UseThreads(true);
  for (int threads : {1, 2, 3, 5, 20}) {  // 20: more tasks than home ranges
    runtime::ScopedThreadCount scoped(threads);
    for (int64_t count : {1, 2, 7, 64, 1001}) {
      Record record(count);
      ASSERT_EQ(ParallelFor(count, RecordItems, &record), 0);
      for (int64_t i = 0; i < count; ++i) {
        EXPECT_EQ(record.runs[i].load(), 1) << "item " << i << " of " << count << ", " << threads << " threads";
      }
    }
  }
}

// Waits until `done` holds or 10 s have passed; returns whether it held.
template <typename Condition>
bool WaitFor(Condition done) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// Each thread's first grain, taken while every thread of the launch has arrived.
struct FirstGrains {
  int threads;
  std::atomic<int> arrived{0};
  std::mutex mutex;
  std::set<std::thread::id> seen;
  std::set<int64_t> firsts;
  std::atomic<bool> all_arrived{true};
};

void RecordFirstGrain(int64_t begin, int64_t, void* context) {
  auto* record = static_cast<FirstGrains*>(context);
  {
    std::lock_guard<std::mutex> lock(record->mutex);
    if (!record->seen.insert(std::this_thread::get_id()).second) return;
    record->firsts.insert(begin);
  }
  record->arrived.fetch_add(1);
  if (!WaitFor([&] { return record->arrived.load() == record->threads; })) record->all_arrived = false;
}

TEST(ParallelFor, EachThreadStartsOnItsHomeRange) {
  UseThreads(true);
  for (int threads : {2, 3}) {
    runtime::ScopedThreadCount scoped(threads);
    for (int round = 0; round < 5; ++round) {
      FirstGrains record;
      record.threads = threads;
      const int64_t count = 120;
      ASSERT_EQ(ParallelFor(count, RecordFirstGrain, &record), 0);
      ASSERT_TRUE(record.all_arrived) << "the pool's threads did not all run";
      std::set<int64_t> homes;
      for (int t = 0; t < threads; ++t) homes.insert(count * t / threads);
      EXPECT_EQ(record.firsts, homes) << threads << " threads";
    }
  }
}

// The first grain of the second home range waits until every other item has run: the other thread
// must take the rest of that range as well as its own.
struct HeldUp {
  int64_t count, held_begin;
  std::atomic<int64_t> done{0};
  std::atomic<bool> finished_without_it{true};
};

void HoldUpOneGrain(int64_t begin, int64_t end, void* context) {
  auto* job = static_cast<HeldUp*>(context);
  if (begin == job->held_begin) {
    if (!WaitFor([&] { return job->done.load() == job->count - (end - begin); })) job->finished_without_it = false;
  }
  job->done.fetch_add(end - begin);
}

TEST(ParallelFor, AThreadHeldUpDoesNotHoldUpTheOthers) {
  UseThreads(true);
  runtime::ScopedThreadCount scoped(2);
  HeldUp job;
  job.count = 64;
  job.held_begin = 32;  // home range 1 of 2 starts at 64 * 1 / 2
  ASSERT_EQ(ParallelFor(job.count, HoldUpOneGrain, &job), 0);
  EXPECT_TRUE(job.finished_without_it);
  EXPECT_EQ(job.done.load(), job.count);
}

}  // namespace
}  // namespace kiln::kernels
