// ParallelFor (kernels/support.cc) on the runtime's thread pool: every item runs once, in grains
// taken from a shared counter.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "kernels/kernels.h"
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
  for (int64_t count : {1, 2, 7, 64, 1001}) {
    Record record(count);
    ASSERT_EQ(ParallelFor(count, RecordItems, &record), 0);
    for (int64_t i = 0; i < count; ++i) EXPECT_EQ(record.runs[i].load(), 1) << "item " << i << " of " << count;
  }
}

}  // namespace
}  // namespace kiln::kernels
