// The memory planner on hand-made graphs with known answers, on a ResNet-like chain and on a few
// hundred random graphs, each plan checked by a validity checker written independently of the
// planner (pairwise, quadratic), plus malformed inputs.
#include "backend/memory_planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "runtime/error.h"

namespace kiln::backend {
namespace {

// Builds the planner's input the way graph codegen would: steps in execution order, each reading
// earlier tensors and writing new ones; last_used_at follows from the reads.
class GraphBuilder {
 public:
  int Input(int64_t bytes) {
    tensors_.push_back({bytes, -1, -1, true, -1});
    return Last();
  }
  // One step writing one tensor per entry of `bytes`; returns the index of the first.
  int Op(const std::vector<int>& inputs, std::vector<int64_t> bytes) {
    int step = steps_++;
    Read(inputs, step);
    for (int64_t b : bytes) tensors_.push_back({b, step, step, false, -1});
    return Last() - static_cast<int>(bytes.size()) + 1;
  }
  int Op(const std::vector<int>& inputs, int64_t bytes) {
    return Op(inputs, std::vector<int64_t>{bytes});
  }
  // A `__nop` reshape: its output shares the input's storage.
  int Nop(int input) {
    int step = steps_++;
    Read({input}, step);
    tensors_.push_back({tensors_[input].bytes, step, step, false, input});
    return Last();
  }
  void MarkOutput(int t) { tensors_[t].external = true; }
  const std::vector<PlannedTensor>& tensors() const { return tensors_; }
  int steps() const { return steps_; }

 private:
  void Read(const std::vector<int>& inputs, int step) {
    for (int i : inputs) tensors_[i].last_used_at = std::max(tensors_[i].last_used_at, step);
  }
  int Last() const { return static_cast<int>(tensors_.size()) - 1; }

  std::vector<PlannedTensor> tensors_;
  int steps_ = 0;
};

int Root(const std::vector<PlannedTensor>& t, int i) {
  while (t[i].alias_of != -1) i = t[i].alias_of;
  return i;
}

bool IsExternalGroup(const std::vector<PlannedTensor>& t, int i) {
  int root = Root(t, i);
  for (size_t j = 0; j < t.size(); ++j)
    if (Root(t, static_cast<int>(j)) == root && t[j].external) return true;
  return false;
}

// Steps during which the storage of i's alias group holds live data; externals: always.
std::pair<int, int> GroupLifetime(const std::vector<PlannedTensor>& t, int i) {
  if (IsExternalGroup(t, i)) return {-1, kLiveToEnd};
  int root = Root(t, i);
  int start = kLiveToEnd, end = -1;
  for (size_t j = 0; j < t.size(); ++j) {
    if (Root(t, static_cast<int>(j)) != root) continue;
    start = std::min(start, t[j].defined_at);
    end = std::max(end, t[j].last_used_at);
  }
  return {start, end};
}

// Checks a plan against the planner's contract, independently of how the planner works.
::testing::AssertionResult IsValidPlan(const std::vector<PlannedTensor>& t, const MemoryPlan& p) {
  const int n = static_cast<int>(t.size());
  const int num_storages = static_cast<int>(p.storage_bytes.size());
  if (static_cast<int>(p.storage_ids.size()) != n)
    return ::testing::AssertionFailure() << p.storage_ids.size() << " storage ids for " << n;
  std::vector<int64_t> largest(num_storages, -1);
  int64_t unshared = 0;
  for (int i = 0; i < n; ++i) {
    int sid = p.storage_ids[i];
    if (sid < 0 || sid >= num_storages)
      return ::testing::AssertionFailure() << "tensor " << i << ": storage id " << sid;
    largest[sid] = std::max(largest[sid], t[i].bytes);
    unshared += t[i].bytes;
    if (t[i].alias_of != -1 && sid != p.storage_ids[t[i].alias_of])
      return ::testing::AssertionFailure() << "alias " << i << " does not share its storage";
  }
  int64_t planned = 0;
  for (int s = 0; s < num_storages; ++s) {
    if (largest[s] == -1) return ::testing::AssertionFailure() << "storage " << s << " unused";
    if (p.storage_bytes[s] != largest[s])
      return ::testing::AssertionFailure() << "storage " << s << " has " << p.storage_bytes[s]
                                           << " bytes, its largest tensor " << largest[s];
    planned += p.storage_bytes[s];
  }
  if (planned != p.planned_bytes || unshared != p.unshared_bytes)
    return ::testing::AssertionFailure() << "wrong totals";
  // No two tensors of different alias groups with overlapping lifetimes share a storage.
  std::vector<std::pair<int, int>> life(n);
  for (int i = 0; i < n; ++i) life[i] = GroupLifetime(t, i);
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      if (p.storage_ids[i] != p.storage_ids[j] || Root(t, i) == Root(t, j)) continue;
      bool disjoint = life[i].second < life[j].first || life[j].second < life[i].first;
      if (!disjoint)
        return ::testing::AssertionFailure()
               << "tensors " << i << " [" << life[i].first << ", " << life[i].second << "] and "
               << j << " [" << life[j].first << ", " << life[j].second << "] share storage "
               << p.storage_ids[i];
    }
  }
  // External groups own the lowest ids, in tensor order.
  int next_external = 0;
  for (int i = 0; i < n; ++i) {
    if (Root(t, i) != i || !IsExternalGroup(t, i)) continue;
    if (p.storage_ids[i] != next_external++)
      return ::testing::AssertionFailure() << "external group of tensor " << i << " has id "
                                           << p.storage_ids[i];
  }
  return ::testing::AssertionSuccess();
}

// No valid plan can use fewer bytes than the largest sum of live group sizes at one step.
int64_t LowerBound(const std::vector<PlannedTensor>& t, int steps) {
  int64_t best = 0;
  for (int s = 0; s < std::max(steps, 1); ++s) {
    int64_t live = 0;
    for (size_t i = 0; i < t.size(); ++i) {
      if (Root(t, static_cast<int>(i)) != static_cast<int>(i)) continue;
      auto [start, end] = GroupLifetime(t, static_cast<int>(i));
      if (start > s || end < s) continue;
      int64_t bytes = 0;
      for (size_t j = 0; j < t.size(); ++j)
        if (Root(t, static_cast<int>(j)) == static_cast<int>(i)) bytes = std::max(bytes, t[j].bytes);
      live += bytes;
    }
    best = std::max(best, live);
  }
  return best;
}

MemoryPlan PlanAndCheck(const GraphBuilder& g) {
  MemoryPlan plan = PlanMemory(g.tensors());
  EXPECT_TRUE(IsValidPlan(g.tensors(), plan));
  return plan;
}

std::string ErrorOf(const std::vector<PlannedTensor>& tensors) {
  try {
    PlanMemory(tensors);
  } catch (const runtime::Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(MemoryPlanner, EmptyGraph) {
  MemoryPlan plan = PlanMemory({});
  EXPECT_TRUE(plan.storage_ids.empty());
  EXPECT_TRUE(plan.storage_bytes.empty());
  EXPECT_EQ(plan.planned_bytes, 0);
  EXPECT_EQ(plan.unshared_bytes, 0);
}

TEST(MemoryPlanner, ChainReusesStorage) {
  GraphBuilder g;
  int x = g.Input(64);
  int a = g.Op({x}, 64);
  int b = g.Op({a}, 64);
  int c = g.Op({b}, 64);
  g.Op({c}, 64);  // a result nobody reads: live during its own step only
  MemoryPlan plan = PlanAndCheck(g);
  EXPECT_EQ(plan.storage_ids[x], 0);
  EXPECT_EQ(plan.storage_ids[a], plan.storage_ids[c]);
  EXPECT_NE(plan.storage_ids[a], plan.storage_ids[b]);
  EXPECT_EQ(plan.storage_bytes.size(), 3u);
}

TEST(MemoryPlanner, LongChainPingPongsBetweenTwoBuffers) {
  GraphBuilder g;
  int t = g.Input(1000);
  for (int i = 0; i < 50; ++i) t = g.Op({t}, 1000);
  g.MarkOutput(g.Op({t}, 1000));
  MemoryPlan plan = PlanAndCheck(g);
  EXPECT_EQ(plan.storage_bytes.size(), 4u);  // input, output, two shared buffers
  EXPECT_EQ(plan.planned_bytes, 4000);
  EXPECT_EQ(plan.unshared_bytes, 52000);
  std::set<int> shared(plan.storage_ids.begin() + 1, plan.storage_ids.end() - 1);
  EXPECT_EQ(shared, (std::set<int>{2, 3}));
}

TEST(MemoryPlanner, ExternalTensorsAreNeverShared) {
  GraphBuilder g;
  int x = g.Input(100);
  int w = g.Input(100);  // a parameter
  int a = g.Op({x, w}, 100);
  int out = g.Op({a}, 100);
  g.MarkOutput(out);
  int b = g.Op({a}, 100);  // after x, w and out were last read
  int c = g.Op({b}, 100);
  g.Op({c}, 100);
  MemoryPlan plan = PlanAndCheck(g);
  EXPECT_EQ(plan.storage_ids[x], 0);
  EXPECT_EQ(plan.storage_ids[w], 1);
  EXPECT_EQ(plan.storage_ids[out], 2);
  for (int i : {a, b, c}) EXPECT_GT(plan.storage_ids[i], 2) << "tensor " << i;
}

TEST(MemoryPlanner, ExternalIdsComeFirstInTensorOrder) {
  // Tensors listed out of the usual order: an internal one before the externals.
  std::vector<PlannedTensor> t = {
      {10, 0, 1, false, -1}, {20, -1, -1, true, -1}, {30, 1, 1, true, -1}, {40, -1, -1, true, -1}};
  MemoryPlan plan = PlanMemory(t);
  EXPECT_TRUE(IsValidPlan(t, plan));
  EXPECT_EQ(plan.storage_ids, (std::vector<int>{3, 0, 1, 2}));
  EXPECT_EQ(plan.storage_bytes, (std::vector<int64_t>{20, 30, 40, 10}));
}

TEST(MemoryPlanner, OutputsAreKeptToTheEnd) {
  GraphBuilder g;
  int x = g.Input(8);
  int early = g.Op({x}, 8);  // an output nobody reads afterwards
  g.MarkOutput(early);
  int t = g.Op({x}, 8);
  for (int i = 0; i < 5; ++i) t = g.Op({t}, 8);
  MemoryPlan plan = PlanAndCheck(g);
  for (size_t i = 0; i < plan.storage_ids.size(); ++i) {
    if (static_cast<int>(i) == early) continue;
    EXPECT_NE(plan.storage_ids[i], plan.storage_ids[early]);
  }

  // A non-external tensor may also be kept alive to the end.
  std::vector<PlannedTensor> kept = {{8, 0, kLiveToEnd, false, -1}, {8, 1, 1, false, -1},
                                     {8, 2, 2, false, -1}};
  MemoryPlan plan2 = PlanMemory(kept);
  EXPECT_TRUE(IsValidPlan(kept, plan2));
  EXPECT_NE(plan2.storage_ids[0], plan2.storage_ids[2]);
  EXPECT_EQ(plan2.storage_ids[1], plan2.storage_ids[2]);
}

TEST(MemoryPlanner, ResidualInputIsNotOverwritten) {
  GraphBuilder g;
  int x = g.Input(256);
  int a = g.Op({x}, 256);     // step 0, read again by the add
  int b = g.Op({a}, 256);     // step 1
  int c = g.Op({b}, 256);     // step 2
  int d = g.Op({c, a}, 256);  // step 3: the residual add
  g.MarkOutput(g.Op({d}, 256));
  MemoryPlan plan = PlanAndCheck(g);
  const std::vector<int>& s = plan.storage_ids;
  EXPECT_NE(s[a], s[b]);
  EXPECT_NE(s[a], s[c]);
  EXPECT_NE(s[b], s[c]);
  EXPECT_NE(s[d], s[a]);
  EXPECT_NE(s[d], s[c]);
  EXPECT_EQ(s[d], s[b]);  // b died at step 2
}

// The checker itself must catch broken plans, or the random test proves nothing.
TEST(MemoryPlanner, CheckerRejectsBrokenPlans) {
  GraphBuilder g;
  int x = g.Input(256);
  int a = g.Op({x}, 256);
  int b = g.Op({a}, 256);
  int c = g.Op({b}, 128);
  int d = g.Op({c, a}, 256);
  g.MarkOutput(g.Op({d}, 256));
  const MemoryPlan good = PlanMemory(g.tensors());
  ASSERT_TRUE(IsValidPlan(g.tensors(), good));

  MemoryPlan overlap = good;  // d written while a is still read
  overlap.storage_ids[d] = overlap.storage_ids[a];
  EXPECT_FALSE(IsValidPlan(g.tensors(), overlap));
  MemoryPlan external = good;  // c placed in the input's storage
  external.storage_ids[c] = external.storage_ids[x];
  EXPECT_FALSE(IsValidPlan(g.tensors(), external));
  MemoryPlan small = good;
  small.storage_bytes[small.storage_ids[b]] = 128;
  small.planned_bytes -= 128;
  EXPECT_FALSE(IsValidPlan(g.tensors(), small));
  MemoryPlan totals = good;
  totals.planned_bytes += 1;
  EXPECT_FALSE(IsValidPlan(g.tensors(), totals));
}

TEST(MemoryPlanner, BestFitPicksTheSmallestLargeEnoughStorage) {
  GraphBuilder g;
  int x = g.Input(4);
  int a = g.Op({x}, 100);
  int b = g.Op({x}, 10);
  int d = g.Op({a, b}, 4);  // frees both a's and b's storage
  g.MarkOutput(d);
  int c = g.Op({d}, 100);
  MemoryPlan plan = PlanAndCheck(g);
  EXPECT_EQ(plan.storage_ids[c], plan.storage_ids[a]);
  EXPECT_NE(plan.storage_ids[c], plan.storage_ids[b]);
  EXPECT_EQ(plan.planned_bytes, 4 + 4 + 100 + 10);
}

TEST(MemoryPlanner, GrowsTheLargestFreeStorageWhenNoneIsLargeEnough) {
  GraphBuilder g;
  int x = g.Input(4);
  int a = g.Op({x}, 50);
  int b = g.Op({x}, 10);
  int d = g.Op({a, b}, 4);
  g.MarkOutput(d);
  int c = g.Op({d}, 80);
  MemoryPlan plan = PlanAndCheck(g);
  EXPECT_EQ(plan.storage_ids[c], plan.storage_ids[a]);
  EXPECT_EQ(plan.storage_bytes[plan.storage_ids[a]], 80);
  EXPECT_EQ(plan.planned_bytes, 4 + 4 + 80 + 10);
}

TEST(MemoryPlanner, ZeroByteTensorsGetStorage) {
  GraphBuilder g;
  int x = g.Input(0);
  int a = g.Op({x}, 0);
  g.MarkOutput(g.Op({a}, 0));
  MemoryPlan plan = PlanAndCheck(g);
  EXPECT_EQ(plan.storage_bytes, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(plan.planned_bytes, 0);
}

TEST(MemoryPlanner, AliasSharesAndExtendsTheLifetimeOfItsStorage) {
  GraphBuilder g;
  int x = g.Input(64);
  int a = g.Op({x}, 64);   // step 0
  int r = g.Nop(a);        // step 1: a is last read here, but r lives on in a's storage
  int b = g.Op({r}, 64);   // step 2
  int c = g.Op({b}, 64);   // step 3
  int d = g.Op({c, r}, 64);  // step 4: r read again
  g.MarkOutput(g.Op({d}, 64));
  MemoryPlan plan = PlanAndCheck(g);
  const std::vector<int>& s = plan.storage_ids;
  EXPECT_EQ(s[r], s[a]);
  for (int t : {b, c, d}) EXPECT_NE(s[t], s[a]) << "tensor " << t;
}

TEST(MemoryPlanner, AliasOfAnInputOrAsAnOutputIsExternal) {
  GraphBuilder g;
  int x = g.Input(32);
  int rx = g.Nop(x);  // reshaped input: shares the input's storage
  int a = g.Op({rx}, 32);
  int ra = g.Nop(a);  // the graph output is a reshape of an intermediate
  g.MarkOutput(ra);
  int b = g.Op({x}, 32);
  int c = g.Op({b}, 32);
  g.MarkOutput(c);
  MemoryPlan plan = PlanAndCheck(g);
  const std::vector<int>& s = plan.storage_ids;
  EXPECT_EQ(s[rx], s[x]);
  EXPECT_EQ(s[x], 0);
  EXPECT_EQ(s[ra], s[a]);
  EXPECT_EQ(s[a], 1);  // a's group is external (it holds an output), ordered by a's index
  EXPECT_EQ(s[c], 2);
  EXPECT_EQ(plan.storage_bytes.size(), 4u);
}

TEST(MemoryPlanner, RejectsMalformedInput) {
  auto has = [](const std::string& message, const std::string& part) {
    return message.find(part) != std::string::npos;
  };
  std::string e = ErrorOf({{-1, 0, 0, false, -1}});
  EXPECT_TRUE(has(e, "tensor 0") && has(e, "negative size")) << e;
  e = ErrorOf({{4, 0, 1, false, 1}, {4, 1, 1, false, -1}});
  EXPECT_TRUE(has(e, "tensor 0") && has(e, "earlier tensor")) << e;
  e = ErrorOf({{4, 0, 1, false, -1}, {4, 1, 1, false, 1}});
  EXPECT_TRUE(has(e, "tensor 1") && has(e, "earlier tensor")) << e;
  e = ErrorOf({{4, 0, 1, false, -1}, {4, 1, 1, false, -7}});
  EXPECT_TRUE(has(e, "tensor 1") && has(e, "alias_of is -7")) << e;
  e = ErrorOf({{4, 3, 2, false, -1}});
  EXPECT_TRUE(has(e, "tensor 0") && has(e, "last read at step 2")) << e;
  e = ErrorOf({{4, -1, 2, false, -1}});
  EXPECT_TRUE(has(e, "tensor 0") && has(e, "must be marked external")) << e;
  e = ErrorOf({{4, -2, 2, true, -1}});
  EXPECT_TRUE(has(e, "tensor 0") && has(e, "defined_at is -2")) << e;
  e = ErrorOf({{4, 3, 4, false, -1}, {4, 2, 4, false, 0}});
  EXPECT_TRUE(has(e, "tensor 1") && has(e, "before tensor 0")) << e;
  // Externals may have any last_used_at.
  EXPECT_EQ(ErrorOf({{4, 3, -1, true, -1}}), "(no error)");
}

// ResNet-18-like activations at 224x224, batch 1, float32 (parameters left out: they are
// external in both counts). Each basic block: conv, relu, conv, add of the shortcut, relu.
TEST(MemoryPlanner, ResNetLikeChainUsesLessThanHalf) {
  auto bytes = [](int64_t c, int64_t hw) { return c * hw * hw * 4; };
  GraphBuilder g;
  int t = g.Input(bytes(3, 224));
  t = g.Op({t}, bytes(64, 112));  // stem conv + relu
  t = g.Op({t}, bytes(64, 56));   // max pool
  int64_t channels = 64, size = 56;
  for (int stage = 0; stage < 4; ++stage) {
    for (int block = 0; block < 2; ++block) {
      bool down = stage > 0 && block == 0;
      if (down) channels *= 2, size /= 2;
      int shortcut = down ? g.Op({t}, bytes(channels, size)) : t;
      int c1 = g.Op({t}, bytes(channels, size));
      int r1 = g.Op({c1}, bytes(channels, size));
      int c2 = g.Op({r1}, bytes(channels, size));
      int sum = g.Op({c2, shortcut}, bytes(channels, size));
      t = g.Op({sum}, bytes(channels, size));
    }
  }
  t = g.Op({t}, bytes(512, 1));  // global average pool
  t = g.Nop(t);                  // flatten
  g.MarkOutput(g.Op({t}, 1000 * 4));  // dense
  MemoryPlan plan = PlanAndCheck(g);
  int64_t bound = LowerBound(g.tensors(), g.steps());
  std::cout << "ResNet-like chain: planned " << plan.planned_bytes << " bytes, unshared "
            << plan.unshared_bytes << " (" << 100.0 * plan.planned_bytes / plan.unshared_bytes
            << "%), live lower bound " << bound << ", " << plan.storage_bytes.size()
            << " storages\n";
  ::testing::Test::RecordProperty("planned_bytes", std::to_string(plan.planned_bytes));
  ::testing::Test::RecordProperty("unshared_bytes", std::to_string(plan.unshared_bytes));
  EXPECT_LT(plan.planned_bytes, plan.unshared_bytes / 2);
  EXPECT_GE(plan.planned_bytes, bound);
}

// A random graph: inputs and parameters, then steps reading 1-3 earlier tensors (mostly recent
// ones) and writing 1-2 tensors, some steps `__nop` aliases; some tensors marked as outputs.
GraphBuilder RandomGraph(std::mt19937& rng) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto size = [&]() -> int64_t {
    int kind = uniform(0, 9);
    if (kind == 0) return 0;
    if (kind <= 4) return 64 * uniform(1, 4);  // a few common sizes, so reuse fits exactly
    return uniform(1, 5000);
  };
  GraphBuilder g;
  int num_external = uniform(1, 5);
  for (int i = 0; i < num_external; ++i) g.Input(size());
  int steps = uniform(1, 40);
  for (int s = 0; s < steps; ++s) {
    int available = static_cast<int>(g.tensors().size());
    auto pick = [&] {
      return uniform(0, 3) == 0 ? uniform(0, available - 1)
                                : uniform(std::max(0, available - 3), available - 1);
    };
    if (uniform(0, 6) == 0) {
      g.Nop(pick());
      continue;
    }
    std::vector<int> inputs(uniform(1, 3));
    for (int& i : inputs) i = pick();
    std::vector<int64_t> outputs(uniform(1, 2));
    for (int64_t& b : outputs) b = size();
    g.Op(inputs, outputs);
  }
  int n = static_cast<int>(g.tensors().size());
  g.MarkOutput(n - 1);
  for (int i = num_external; i < n - 1; ++i)
    if (uniform(0, 19) == 0) g.MarkOutput(i);
  return g;
}

TEST(MemoryPlanner, RandomGraphsGetValidPlans) {
  int64_t planned = 0, unshared = 0, bound = 0;
  for (int seed = 0; seed < 400; ++seed) {
    std::mt19937 rng(seed);
    GraphBuilder g = RandomGraph(rng);
    MemoryPlan plan = PlanMemory(g.tensors());
    ASSERT_TRUE(IsValidPlan(g.tensors(), plan)) << "seed " << seed;
    ASSERT_EQ(plan.storage_ids, PlanMemory(g.tensors()).storage_ids) << "not deterministic";
    int64_t lower = LowerBound(g.tensors(), g.steps());
    ASSERT_GE(plan.planned_bytes, lower) << "seed " << seed;
    ASSERT_LE(plan.planned_bytes, plan.unshared_bytes) << "seed " << seed;
    planned += plan.planned_bytes;
    unshared += plan.unshared_bytes;
    bound += lower;
  }
  std::cout << "400 random graphs: planned " << planned << " bytes, unshared " << unshared << " ("
            << 100.0 * planned / unshared << "%), live lower bound " << bound << " ("
            << 100.0 * bound / unshared << "%)\n";
  ::testing::Test::RecordProperty("planned_bytes", std::to_string(planned));
  ::testing::Test::RecordProperty("unshared_bytes", std::to_string(unshared));
}

}  // namespace
}  // namespace kiln::backend
