// Tests of the backend C API that compiled operators call: the per-thread workspace pool
// (TVMBackendAllocWorkspace / FreeWorkspace), parallel launch and barrier, the environment
// lookup (TVMBackendGetFuncFromEnv) and TVMBackendRunOnce.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <csignal>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "kiln/c_backend_api.h"
#include "runtime/module.h"
#include "runtime/thread_pool.h"
#include "runtime/workspace_pool.h"

namespace kiln::runtime {
namespace {

using ::testing::HasSubstr;

// Runs `body` in a thread of its own, so it starts with an empty workspace pool.
void RunInFreshThread(const std::function<void()>& body) { std::thread(body).join(); }

void* Alloc(uint64_t nbytes) { return TVMBackendAllocWorkspace(kDLCPU, 0, nbytes, kDLFloat, 32); }
int Free(void* pointer) { return TVMBackendFreeWorkspace(kDLCPU, 0, pointer); }

// ---- BackendWorkspace ------------------------------------------------------------------------

TEST(BackendWorkspace, BlocksAre64ByteAlignedAndUsableForTheirWholeSize) {
  RunInFreshThread([] {
    for (uint64_t nbytes : {1ull, 63ull, 64ull, 4095ull, 4096ull, 10000ull, 1ull << 20}) {
      auto* block = static_cast<unsigned char*>(Alloc(nbytes));
      ASSERT_NE(block, nullptr) << TVMGetLastError();
      EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % 64, 0u) << nbytes << " bytes";
      // Under AddressSanitizer, a block smaller than asked for fails here.
      for (uint64_t i = 0; i < nbytes; ++i) block[i] = static_cast<unsigned char>(i * 7);
      for (uint64_t i = 0; i < nbytes; ++i) ASSERT_EQ(block[i], static_cast<unsigned char>(i * 7));
      EXPECT_EQ(Free(block), 0) << TVMGetLastError();
    }
  });
}

TEST(BackendWorkspace, ZeroBytesGivesAnAlignedBlock) {
  RunInFreshThread([] {
    void* block = Alloc(0);
    ASSERT_NE(block, nullptr) << TVMGetLastError();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % 64, 0u);
    EXPECT_EQ(Free(block), 0);
  });
}

TEST(BackendWorkspace, AFreedBlockIsReusedForTheSameSize) {
  RunInFreshThread([] {
    void* first = Alloc(1000);
    ASSERT_EQ(Free(first), 0);
    void* second = Alloc(1000);
    EXPECT_EQ(second, first);
    ASSERT_EQ(Free(second), 0);
  });
}

TEST(BackendWorkspace, ReuseIsBestFit) {
  RunInFreshThread([] {
    void* small = Alloc(4096);
    void* large = Alloc(3 * 4096);
    void* medium = Alloc(2 * 4096);
    ASSERT_EQ(Free(small), 0);
    ASSERT_EQ(Free(large), 0);
    ASSERT_EQ(Free(medium), 0);
    size_t pool_bytes = WorkspacePoolBytes();
    EXPECT_EQ(pool_bytes, 6u * 4096);
    // 5000 bytes fit the medium and the large block: the medium one is the better fit.
    void* a = Alloc(5000);
    EXPECT_EQ(a, medium);
    void* b = Alloc(100);
    EXPECT_EQ(b, small);
    void* c = Alloc(9000);
    EXPECT_EQ(c, large);
    EXPECT_EQ(WorkspacePoolBytes(), pool_bytes);
    // No free block left: a new one comes from the system.
    void* d = Alloc(100);
    EXPECT_NE(d, a);
    EXPECT_NE(d, b);
    EXPECT_NE(d, c);
    EXPECT_EQ(WorkspacePoolBytes(), pool_bytes + 4096);
    for (void* p : {d, c, b, a}) EXPECT_EQ(Free(p), 0);
  });
}

TEST(BackendWorkspace, FreesInAnyOrder) {
  RunInFreshThread([] {
    // LIFO, as generated code frees.
    void* a = Alloc(100);
    void* b = Alloc(200);
    void* c = Alloc(300);
    EXPECT_EQ(Free(c), 0);
    EXPECT_EQ(Free(b), 0);
    EXPECT_EQ(Free(a), 0);
    // Not LIFO: the middle block first, then the first, then the last.
    a = Alloc(100);
    b = Alloc(200);
    c = Alloc(300);
    EXPECT_EQ(Free(b), 0) << TVMGetLastError();
    EXPECT_EQ(Free(a), 0) << TVMGetLastError();
    EXPECT_EQ(Free(c), 0) << TVMGetLastError();
    // All three blocks are free again: a fourth allocation needs no new memory.
    size_t pool_bytes = WorkspacePoolBytes();
    void* blocks[3] = {Alloc(1), Alloc(1), Alloc(1)};
    EXPECT_EQ(WorkspacePoolBytes(), pool_bytes);
    for (void* p : blocks) EXPECT_EQ(Free(p), 0);
  });
}

TEST(BackendWorkspace, FreeingAnUnknownPointerIsAnError) {
  RunInFreshThread([] {
    int not_a_workspace = 0;
    TVMAPISetLastError("");
    EXPECT_EQ(Free(&not_a_workspace), -1);
    EXPECT_THAT(TVMGetLastError(), HasSubstr("is not a workspace of this thread"));
    TVMAPISetLastError("");
    EXPECT_EQ(Free(nullptr), -1);
    EXPECT_THAT(TVMGetLastError(), HasSubstr("TVMBackendFreeWorkspace"));
  });
}

TEST(BackendWorkspace, DoubleFreeIsAnError) {
  RunInFreshThread([] {
    void* block = Alloc(128);
    ASSERT_EQ(Free(block), 0);
    TVMAPISetLastError("");
    EXPECT_EQ(Free(block), -1);
    EXPECT_THAT(TVMGetLastError(), HasSubstr("freed twice"));
    // The pool is still sound: the block is handed out once, not twice.
    void* again = Alloc(128);
    void* other = Alloc(128);
    EXPECT_EQ(again, block);
    EXPECT_NE(other, block);
    EXPECT_EQ(Free(other), 0);
    EXPECT_EQ(Free(again), 0);
  });
}

TEST(BackendWorkspace, NonCpuDeviceGivesNullWithAMessage) {
  TVMAPISetLastError("");
  EXPECT_EQ(TVMBackendAllocWorkspace(kDLCUDA, 0, 256, kDLFloat, 32), nullptr);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("device type 2"));
  EXPECT_THAT(TVMGetLastError(), HasSubstr("CPU only"));
  int dummy = 0;
  TVMAPISetLastError("");
  EXPECT_EQ(TVMBackendFreeWorkspace(kDLCUDA, 0, &dummy), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("device type 2"));
}

TEST(BackendWorkspace, ABlockCannotBeFreedByAnotherThread) {
  RunInFreshThread([] {
    void* block = Alloc(512);
    ASSERT_NE(block, nullptr);
    int status_elsewhere = 0;
    std::string message_elsewhere;
    std::thread([&] {
      status_elsewhere = Free(block);
      message_elsewhere = TVMGetLastError();
    }).join();
    EXPECT_EQ(status_elsewhere, -1);
    EXPECT_THAT(message_elsewhere, HasSubstr("not a workspace of this thread"));
    // The owning thread still can.
    EXPECT_EQ(Free(block), 0) << TVMGetLastError();
  });
}

TEST(BackendWorkspace, PoolsArePerThread) {
  RunInFreshThread([] {
    void* mine = Alloc(4096);
    ASSERT_EQ(Free(mine), 0);
    size_t my_pool = WorkspacePoolBytes();
    void* theirs = nullptr;
    size_t their_pool_before = 1;
    std::thread([&] {
      their_pool_before = WorkspacePoolBytes();
      theirs = Alloc(4096);  // this thread's free block is not visible there
      Free(theirs);
    }).join();
    EXPECT_EQ(their_pool_before, 0u);
    EXPECT_NE(theirs, mine);
    EXPECT_EQ(WorkspacePoolBytes(), my_pool);
  });
}

TEST(BackendWorkspace, PoolDoesNotGrowOverRepeatedCycles) {
  RunInFreshThread([] {
    // The pattern of a model run: nested allocations of several sizes, freed LIFO and not.
    auto cycle = [] {
      void* a = Alloc(3000);
      void* b = Alloc(70000);
      void* c = Alloc(100);
      EXPECT_EQ(Free(c), 0);
      void* d = Alloc(5000);
      EXPECT_EQ(Free(b), 0);
      EXPECT_EQ(Free(a), 0);
      void* e = Alloc(65536);
      EXPECT_EQ(Free(d), 0);
      EXPECT_EQ(Free(e), 0);
    };
    cycle();
    size_t after_first = WorkspacePoolBytes();
    EXPECT_GT(after_first, 0u);
    for (int i = 0; i < 1000; ++i) cycle();
    EXPECT_EQ(WorkspacePoolBytes(), after_first);
  });
}

// ---- BackendParallel -------------------------------------------------------------------------

class BackendParallel : public ::testing::Test {
 protected:
  void TearDown() override { SetNumThreads(0); }
};

// What the tasks of one launch saw.
struct TaskLog {
  explicit TaskLog(int max_tasks) : runs(max_tasks), threads(max_tasks), group_sizes(max_tasks) {}
  std::vector<std::atomic<int>> runs;
  std::vector<std::thread::id> threads;
  std::vector<int> group_sizes;
};

int LogTask(int task_id, TVMParallelGroupEnv* env, void* cdata) {
  auto* log = static_cast<TaskLog*>(cdata);
  if (task_id < 0 || task_id >= static_cast<int>(log->runs.size())) return -1;
  log->runs[task_id].fetch_add(1);
  log->threads[task_id] = std::this_thread::get_id();
  log->group_sizes[task_id] = env->num_task;
  return 0;
}

// Launches `num_task` logged tasks and checks that tasks 0..expected_tasks-1 each ran once.
void ExpectEveryTaskOnce(int num_task, int expected_tasks) {
  TaskLog log(expected_tasks + 8);
  ASSERT_EQ(TVMBackendParallelLaunch(LogTask, &log, num_task), 0) << TVMGetLastError();
  for (int task = 0; task < expected_tasks + 8; ++task) {
    EXPECT_EQ(log.runs[task].load(), task < expected_tasks ? 1 : 0) << "task " << task;
    if (task < expected_tasks) {
      EXPECT_EQ(log.group_sizes[task], expected_tasks) << "task " << task;
    }
  }
}

// Tasks are claimed by whichever thread of the launch runs: a small task 1 is often done by the
// caller right after task 0. To see a worker run task 1, the caller's task 0 waits (up to 10 s)
// until task 1 has started, which then only a worker can have claimed.
struct WorkerRendezvous {
  FTVMParallelLambda task;
  void* cdata;
  std::atomic<bool> second_started{false};
};

int AfterTaskOneStarted(int task_id, TVMParallelGroupEnv* env, void* cdata) {
  auto* r = static_cast<WorkerRendezvous*>(cdata);
  if (task_id == 1) r->second_started.store(true);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (task_id == 0 && !r->second_started.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  return r->task(task_id, env, r->cdata);
}

// Launches `task` with task 1 run by a worker.
int LaunchWithTaskOneOnAWorker(FTVMParallelLambda task, void* cdata, int num_task) {
  WorkerRendezvous r{task, cdata};
  return TVMBackendParallelLaunch(AfterTaskOneStarted, &r, num_task);
}

TEST_F(BackendParallel, ZeroTasksMeansOneTaskPerThread) {
  for (int threads : {2, 4}) {
    SetNumThreads(threads);
    ExpectEveryTaskOnce(0, threads);
  }
}

TEST_F(BackendParallel, FewerTasksThanThreadsEachRunOnce) {
  SetNumThreads(4);
  ExpectEveryTaskOnce(3, 3);
  ExpectEveryTaskOnce(2, 2);
  ExpectEveryTaskOnce(1, 1);
}

TEST_F(BackendParallel, MoreTasksThanThreadsEachRunOnce) {
  SetNumThreads(2);
  ExpectEveryTaskOnce(3, 3);
  ExpectEveryTaskOnce(37, 37);
  SetNumThreads(4);
  ExpectEveryTaskOnce(101, 101);
}

TEST_F(BackendParallel, OneThreadRunsEveryTaskInTheCaller) {
  SetNumThreads(1);
  TaskLog log(5);
  ASSERT_EQ(TVMBackendParallelLaunch(LogTask, &log, 5), 0);
  for (int task = 0; task < 5; ++task) {
    EXPECT_EQ(log.runs[task].load(), 1);
    EXPECT_EQ(log.threads[task], std::this_thread::get_id());
  }
}

TEST_F(BackendParallel, TheCallerRunsTaskZeroAndWorkersClaimTheRest) {
  SetNumThreads(2);
  for (int repeat = 0; repeat < 20; ++repeat) {
    TaskLog log(2);
    ASSERT_EQ(LaunchWithTaskOneOnAWorker(LogTask, &log, 2), 0);
    EXPECT_EQ(log.threads[0], std::this_thread::get_id());
    EXPECT_NE(log.threads[1], std::this_thread::get_id());
  }
}

// Holds a thread in a signal handler, as a preempted thread is held: it runs nothing meanwhile.
std::atomic<bool> hold_in_handler{false};
std::atomic<bool> held_in_handler{false};
void HoldInHandler(int) {
  held_in_handler.store(true);
  while (hold_in_handler.load()) {
  }
}

struct ThreadOfTask {
  std::atomic<pthread_t> thread{};
};
int RecordThread(int task_id, TVMParallelGroupEnv*, void* cdata) {
  if (task_id == 1) static_cast<ThreadOfTask*>(cdata)->thread.store(pthread_self());
  return 0;
}

// A worker that does not run (preempted by another process, here held in a signal handler) does
// not hold up a launch: the caller claims its task too. (With tasks fixed per thread, the launch
// waited for the worker's time slice.)
TEST_F(BackendParallel, ALaunchDoesNotWaitForAWorkerThatIsNotRunning) {
  SetNumThreads(2);
  ThreadOfTask worker;
  ASSERT_EQ(LaunchWithTaskOneOnAWorker(RecordThread, &worker, 2), 0);
  struct sigaction hold {}, previous {};
  hold.sa_handler = HoldInHandler;
  ASSERT_EQ(sigaction(SIGUSR1, &hold, &previous), 0);
  hold_in_handler.store(true);
  held_in_handler.store(false);
  ASSERT_EQ(pthread_kill(worker.thread.load(), SIGUSR1), 0);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!held_in_handler.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_TRUE(held_in_handler.load()) << "the worker did not take the signal";
  for (int repeat = 0; repeat < 5; ++repeat) {
    TaskLog log(2);
    ASSERT_EQ(TVMBackendParallelLaunch(LogTask, &log, 2), 0);
    EXPECT_EQ(log.runs[0].load() + log.runs[1].load(), 2);
    EXPECT_EQ(log.threads[0], std::this_thread::get_id());
    EXPECT_EQ(log.threads[1], std::this_thread::get_id());
  }
  hold_in_handler.store(false);
  sigaction(SIGUSR1, &previous, nullptr);
  // Released, the worker claims tasks again.
  TaskLog log(2);
  ASSERT_EQ(LaunchWithTaskOneOnAWorker(LogTask, &log, 2), 0);
  EXPECT_NE(log.threads[1], std::this_thread::get_id());
}

TEST_F(BackendParallel, NegativeTaskCountOrNullFunctionIsAnError) {
  TVMAPISetLastError("");
  EXPECT_NE(TVMBackendParallelLaunch(LogTask, nullptr, -1), 0);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("negative task count"));
  TVMAPISetLastError("");
  EXPECT_NE(TVMBackendParallelLaunch(nullptr, nullptr, 2), 0);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("null function"));
}

// Every round each task writes its slot, waits at the barrier, reads every other slot, and
// waits again so that no task overwrites a slot before all have read it.
struct BarrierJob {
  int rounds = 0;
  std::vector<int64_t> slots;  // plain memory: only the barrier orders the accesses
  std::atomic<int> wrong_reads{0};
  std::atomic<int> barrier_failures{0};
};

bool WaitAtBarrier(int task_id, TVMParallelGroupEnv* env, BarrierJob* job) {
  if (TVMBackendParallelBarrier(task_id, env) == 0) return true;
  job->barrier_failures.fetch_add(1);
  return false;
}

int BarrierTask(int task_id, TVMParallelGroupEnv* env, void* cdata) {
  auto* job = static_cast<BarrierJob*>(cdata);
  for (int round = 0; round < job->rounds; ++round) {
    job->slots[task_id] = int64_t{round} * 1000 + task_id;
    if (!WaitAtBarrier(task_id, env, job)) return -1;
    for (int other = 0; other < env->num_task; ++other) {
      if (job->slots[other] != int64_t{round} * 1000 + other) job->wrong_reads.fetch_add(1);
    }
    if (!WaitAtBarrier(task_id, env, job)) return -1;
  }
  return 0;
}

void ExpectBarrierWorks(int num_task, int rounds) {
  BarrierJob job;
  job.rounds = rounds;
  job.slots.assign(8, -1);
  ASSERT_EQ(TVMBackendParallelLaunch(BarrierTask, &job, num_task), 0) << TVMGetLastError();
  EXPECT_EQ(job.barrier_failures.load(), 0) << TVMGetLastError();
  EXPECT_EQ(job.wrong_reads.load(), 0);
}

TEST_F(BackendParallel, BarrierMakesEveryTasksWritesVisible) {
  SetNumThreads(2);
  ExpectBarrierWorks(0, 500);
  SetNumThreads(4);
  ExpectBarrierWorks(0, 200);
  ExpectBarrierWorks(3, 200);  // fewer tasks than threads: the barrier waits for 3, not 4
}

TEST_F(BackendParallel, BarrierWithASingleTaskReturnsAtOnce) {
  SetNumThreads(2);
  ExpectBarrierWorks(1, 10);
}

TEST_F(BackendParallel, BarrierWithMoreTasksThanThreadsIsAnError) {
  SetNumThreads(2);
  BarrierJob job;
  job.rounds = 1;
  job.slots.assign(8, -1);
  TVMAPISetLastError("");
  // Every task fails at the barrier instead of waiting forever, and so does the launch.
  EXPECT_NE(TVMBackendParallelLaunch(BarrierTask, &job, 5), 0);
  EXPECT_EQ(job.barrier_failures.load(), 5);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("more tasks than threads"));
}

int FailOnTask(int task_id, TVMParallelGroupEnv*, void* cdata) {
  auto* failing = static_cast<std::pair<int, std::thread::id>*>(cdata);
  if (task_id != failing->first) return 0;
  failing->second = std::this_thread::get_id();
  std::string message = "task " + std::to_string(task_id) + " failed on purpose";
  TVMAPISetLastError(message.c_str());
  return -1;
}

TEST_F(BackendParallel, AFailingWorkerTaskReportsItsMessageToTheCaller) {
  SetNumThreads(2);
  std::pair<int, std::thread::id> failing{1, {}};
  TVMAPISetLastError("");
  EXPECT_NE(LaunchWithTaskOneOnAWorker(FailOnTask, &failing, 2), 0);
  EXPECT_NE(failing.second, std::this_thread::get_id()) << "task 1 should run on a worker";
  EXPECT_THAT(TVMGetLastError(), HasSubstr("task 1 failed on purpose"));
  // The next launch succeeds again: the failure does not stick to the pool.
  TaskLog log(2);
  EXPECT_EQ(TVMBackendParallelLaunch(LogTask, &log, 2), 0);
}

TEST_F(BackendParallel, AFailingCallerTaskReportsItsMessage) {
  SetNumThreads(2);
  std::pair<int, std::thread::id> failing{0, {}};
  TVMAPISetLastError("");
  EXPECT_NE(TVMBackendParallelLaunch(FailOnTask, &failing, 2), 0);
  EXPECT_EQ(failing.second, std::this_thread::get_id());
  EXPECT_THAT(TVMGetLastError(), HasSubstr("task 0 failed on purpose"));
}

TEST_F(BackendParallel, AFailingTaskAmongManyIsReported) {
  SetNumThreads(2);
  std::pair<int, std::thread::id> failing{7, {}};
  TVMAPISetLastError("");
  EXPECT_NE(TVMBackendParallelLaunch(FailOnTask, &failing, 10), 0);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("task 7 failed on purpose"));
}

// The outer tasks each launch an inner group, which must run serially in the outer task's thread.
struct NestedJob {
  static constexpr int kInnerTasks = 5;
  struct Outer {
    std::thread::id thread;
    TaskLog inner{kInnerTasks};
    int inner_status = -2;
  };
  std::vector<Outer> outer = std::vector<Outer>(2);
};

int NestedOuterTask(int task_id, TVMParallelGroupEnv*, void* cdata) {
  auto& outer = static_cast<NestedJob*>(cdata)->outer[task_id];
  outer.thread = std::this_thread::get_id();
  outer.inner_status = TVMBackendParallelLaunch(LogTask, &outer.inner, NestedJob::kInnerTasks);
  return outer.inner_status;
}

TEST_F(BackendParallel, ANestedLaunchRunsSeriallyInTheTasksThread) {
  SetNumThreads(2);
  NestedJob job;
  ASSERT_EQ(LaunchWithTaskOneOnAWorker(NestedOuterTask, &job, 2), 0) << TVMGetLastError();
  for (const NestedJob::Outer& outer : job.outer) {
    EXPECT_EQ(outer.inner_status, 0);
    for (int task = 0; task < NestedJob::kInnerTasks; ++task) {
      EXPECT_EQ(outer.inner.runs[task].load(), 1) << "inner task " << task;
      EXPECT_EQ(outer.inner.threads[task], outer.thread) << "inner task " << task;
      EXPECT_EQ(outer.inner.group_sizes[task], NestedJob::kInnerTasks);
    }
  }
  EXPECT_NE(job.outer[0].thread, job.outer[1].thread);
}

// Each outer task gets its own nested job (slot 0 or 1 of the array).
int NestedBarrierTask(int task_id, TVMParallelGroupEnv*, void* cdata) {
  auto* jobs = static_cast<BarrierJob*>(cdata);
  return TVMBackendParallelLaunch(BarrierTask, &jobs[task_id], 2);
}

TEST_F(BackendParallel, ABarrierInANestedLaunchIsAnError) {
  SetNumThreads(2);
  BarrierJob jobs[2];
  for (BarrierJob& job : jobs) {
    job.rounds = 1;
    job.slots.assign(8, -1);
  }
  TVMAPISetLastError("");
  // Both outer tasks launch a nested group of two; its first task fails at the barrier.
  EXPECT_NE(TVMBackendParallelLaunch(NestedBarrierTask, jobs, 2), 0);
  EXPECT_EQ(jobs[0].barrier_failures.load(), 1);
  EXPECT_EQ(jobs[1].barrier_failures.load(), 1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("no barrier in this launch"));
}

TEST_F(BackendParallel, SetNumThreadsChangesTheThreadCount) {
  SetNumThreads(3);
  EXPECT_EQ(NumThreads(), 3);
  ExpectEveryTaskOnce(0, 3);
  SetNumThreads(2);
  EXPECT_EQ(NumThreads(), 2);
  ExpectEveryTaskOnce(0, 2);
  SetNumThreads(0);  // back to the default
  EXPECT_GE(NumThreads(), 1);
  ExpectEveryTaskOnce(0, NumThreads());
}

TEST_F(BackendParallel, ConfigThreadpoolGlobalChangesTheThreadCount) {
  PackedFunc config = GetGlobalFunction("runtime.config_threadpool");
  PackedFunc num_threads = GetGlobalFunction("runtime.NumThreads");
  ASSERT_TRUE(config.defined());
  ASSERT_TRUE(num_threads.defined());
  config(0, 3);
  EXPECT_EQ(num_threads().AsInt(), 3);
  ExpectEveryTaskOnce(0, 3);
  config(1, 2);  // the mode (big/little) does not matter
  EXPECT_EQ(num_threads().AsInt(), 2);
  ExpectEveryTaskOnce(0, 2);
}

TEST_F(BackendParallel, LaunchesFromSeveralThreadsRunConcurrently) {
  SetNumThreads(2);
  constexpr int kLaunchers = 4;
  constexpr int kLaunches = 50;
  std::vector<int> failures(kLaunchers, 0);
  std::vector<std::thread> launchers;
  for (int l = 0; l < kLaunchers; ++l) {
    launchers.emplace_back([l, &failures] {
      for (int i = 0; i < kLaunches; ++i) {
        BarrierJob job;
        job.rounds = 3;
        job.slots.assign(8, -1);
        TaskLog log(7);
        bool ok = TVMBackendParallelLaunch(BarrierTask, &job, 0) == 0 && job.wrong_reads == 0 &&
                  job.barrier_failures == 0 && TVMBackendParallelLaunch(LogTask, &log, 7) == 0;
        for (int task = 0; task < 7; ++task) ok = ok && log.runs[task].load() == 1;
        if (!ok) ++failures[l];
      }
    });
  }
  for (std::thread& t : launchers) t.join();
  for (int l = 0; l < kLaunchers; ++l) EXPECT_EQ(failures[l], 0) << "launcher " << l;
}

// ---- BackendEnv ------------------------------------------------------------------------------

// A module holding a fixed table of functions.
class TableModule : public ModuleNode {
 public:
  explicit TableModule(std::map<std::string, PackedFunc> functions) : functions_(std::move(functions)) {}
  const char* type_key() const override { return "test_table"; }
  PackedFunc GetFunction(const std::string& name) override {
    auto it = functions_.find(name);
    return it == functions_.end() ? PackedFunc() : it->second;
  }

 private:
  std::map<std::string, PackedFunc> functions_;
};

PackedFunc ReturnsInt(int64_t value) {
  return PackedFunc([value](const Args&, RetValue* result) { result->SetInt(value); });
}

// Calls a function handle from TVMBackendGetFuncFromEnv without arguments; returns its int result.
int64_t CallForInt(TVMFunctionHandle f) {
  TVMValue value{};
  int code = -1;
  EXPECT_EQ(TVMFuncCall(f, nullptr, nullptr, 0, &value, &code), 0) << TVMGetLastError();
  EXPECT_EQ(code, kTVMArgInt);
  return value.v_int64;
}

Module RootImporting(std::map<std::string, PackedFunc> import_functions) {
  Module root(std::make_shared<TableModule>(std::map<std::string, PackedFunc>{
      {"root.own", ReturnsInt(1)}}));
  root->Import(Module(std::make_shared<TableModule>(std::move(import_functions))));
  return root;
}

TEST(BackendEnv, FindsAFunctionOfAnImport) {
  Module root = RootImporting({{"backend_env.imported", ReturnsInt(7)}});
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMBackendGetFuncFromEnv(root.get(), "backend_env.imported", &f), 0) << TVMGetLastError();
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(CallForInt(f), 7);
}

TEST(BackendEnv, FallsBackToAGlobalFunction) {
  RegisterGlobalFunction("backend_env.global_only", ReturnsInt(11), true);
  RegisterGlobalFunction("backend_env.both", ReturnsInt(12), true);
  Module root = RootImporting({{"backend_env.both", ReturnsInt(13)}});
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMBackendGetFuncFromEnv(root.get(), "backend_env.global_only", &f), 0) << TVMGetLastError();
  EXPECT_EQ(CallForInt(f), 11);
  // An import's function comes before a global one of the same name.
  ASSERT_EQ(TVMBackendGetFuncFromEnv(root.get(), "backend_env.both", &f), 0);
  EXPECT_EQ(CallForInt(f), 13);
}

TEST(BackendEnv, AnAbsentFunctionIsAnErrorNamingIt) {
  Module root = RootImporting({});
  TVMFunctionHandle f = nullptr;
  TVMAPISetLastError("");
  EXPECT_EQ(TVMBackendGetFuncFromEnv(root.get(), "backend_env.nowhere", &f), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("'backend_env.nowhere'"));
  // The module's own functions are not part of its environment, only its imports are.
  TVMAPISetLastError("");
  EXPECT_EQ(TVMBackendGetFuncFromEnv(root.get(), "root.own", &f), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("'root.own'"));
}

TEST(BackendEnv, NullArgumentsAreAnError) {
  TVMFunctionHandle f = nullptr;
  TVMAPISetLastError("");
  EXPECT_EQ(TVMBackendGetFuncFromEnv(nullptr, "anything", &f), -1);
  EXPECT_THAT(TVMGetLastError(), HasSubstr("__tvm_module_ctx"));
  Module root = RootImporting({});
  EXPECT_EQ(TVMBackendGetFuncFromEnv(root.get(), nullptr, &f), -1);
  EXPECT_EQ(TVMBackendGetFuncFromEnv(root.get(), "anything", nullptr), -1);
}

TEST(BackendEnv, TheHandleIsStableAcrossCalls) {
  std::atomic<int> calls{0};
  Module root = RootImporting({{"backend_env.counted", PackedFunc([&calls](const Args&, RetValue* r) {
                                  r->SetInt(calls.fetch_add(1) + 1);
                                })}});
  TVMFunctionHandle first = nullptr, second = nullptr;
  ASSERT_EQ(TVMBackendGetFuncFromEnv(root.get(), "backend_env.counted", &first), 0);
  ASSERT_EQ(TVMBackendGetFuncFromEnv(root.get(), "backend_env.counted", &second), 0);
  EXPECT_EQ(first, second);
  EXPECT_EQ(CallForInt(first), 1);
  EXPECT_EQ(CallForInt(second), 2);
  // Other threads get the same handle.
  TVMFunctionHandle from_thread = nullptr;
  std::thread([&] { TVMBackendGetFuncFromEnv(root.get(), "backend_env.counted", &from_thread); }).join();
  EXPECT_EQ(from_thread, first);
}

TEST(BackendEnv, LookupsFromManyThreadsConcurrentlyAgree) {
  Module root = RootImporting({{"backend_env.shared", ReturnsInt(5)}});
  constexpr int kThreads = 8;
  std::vector<TVMFunctionHandle> handles(kThreads, nullptr);
  std::vector<int64_t> results(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        if (TVMBackendGetFuncFromEnv(root.get(), "backend_env.shared", &handles[t]) != 0) return;
      }
      results[t] = CallForInt(handles[t]);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(handles[t], handles[0]);
    EXPECT_EQ(results[t], 5);
  }
}

int CountCall(void* cdata) {
  static_cast<std::atomic<int>*>(cdata)->fetch_add(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // let the other threads pile up
  return 0;
}

TEST(BackendEnv, RunOnceRunsItsFunctionOnceFromManyThreadsConcurrently) {
  void* handle = nullptr;
  std::atomic<int> calls{0};
  constexpr int kThreads = 8;
  std::vector<int> statuses(kThreads, -1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] { statuses[t] = TVMBackendRunOnce(&handle, CountCall, &calls, 0); });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(calls.load(), 1);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(statuses[t], 0);
  EXPECT_NE(handle, nullptr);
  EXPECT_EQ(TVMBackendRunOnce(&handle, CountCall, &calls, 0), 0);
  EXPECT_EQ(calls.load(), 1);
}

int FailWithStatus(void*) { return 3; }

TEST(BackendEnv, RunOnceReturnsTheFunctionsFailure) {
  void* handle = nullptr;
  EXPECT_EQ(TVMBackendRunOnce(&handle, FailWithStatus, nullptr, 0), 3);
}

}  // namespace
}  // namespace kiln::runtime
