// The thread pool behind TVMBackendParallelLaunch: per launching thread, workers spin briefly for
// the next launch and then sleep on a condition variable; the tasks of a launch are claimed by
// whichever of its threads run.
#include "runtime/thread_pool.h"

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/last_error.h"

namespace kiln::runtime {
namespace {

constexpr int kSpinIterations = 20000;

int ThreadCountFromEnvironment() {
  for (const char* name : {"KILN_NUM_THREADS", "TVM_NUM_THREADS", "OMP_NUM_THREADS"}) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') continue;
    char* end = nullptr;
    long value = std::strtol(text, &end, 10);
    if (*end == '\0' && value > 0 && value <= 1024) return static_cast<int>(value);
    std::fprintf(stderr, "kiln: ignoring %s=%s (expected a thread count from 1 to 1024)\n", name, text);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

std::atomic<int> configured_threads{0};  // 0: from the environment
thread_local int scoped_threads = 0;     // 0: none (ScopedThreadCount)
thread_local bool inside_task = false;

// The process's thread count: SetNumThreads's, else the environment's.
int ProcessThreads() {
  int configured = configured_threads.load(std::memory_order_relaxed);
  if (configured > 0) return configured;
  static const int from_environment = ThreadCountFromEnvironment();
  return from_environment;
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

struct Barrier {
  std::atomic<int> arrived{0};
  std::atomic<int> phase{0};
  int num_threads = 1;
};

// Tasks are claimed, not assigned: the launching thread takes task 0 and then, like each worker,
// the next unclaimed task, until none is left. A worker that is not running (the machine is busy,
// or it sleeps) does not hold up a launch: the threads that run take its share, and the launch
// waits only for tasks that were claimed. (With tasks fixed per thread, one worker preempted by
// another process made each launch wait for its time slice: ShuffleNet at 2 threads beside a
// busy core took 117 ms instead of 11.)
//
// `state_` holds the launch's generation (high 32 bits) and its next unclaimed task (low 32
// bits; kClosed while the launch's fields are written). A claim is a compare-and-swap of the
// state the claimer read the fields under, so a claim never pairs one launch's task number with
// another launch's fields (the fields and the state are a seqlock).
class ThreadPool {
 public:
  explicit ThreadPool(int num_threads) : num_threads_(num_threads) {
    for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  }

  ~ThreadPool() {
    shutdown_.store(true);
    Publish(Generation(state_.load()) + 1, kClosed);
    for (std::thread& t : workers_) t.join();
  }

  int num_threads() const { return num_threads_; }

  int Launch(FTVMParallelLambda lambda, void* cdata, int num_task) {
    const uint64_t generation = Generation(state_.load(std::memory_order_relaxed));
    // Close claims on the previous launch (all of whose tasks are done) before its fields change.
    state_.store(generation << 32 | kClosed, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    lambda_.store(lambda, std::memory_order_relaxed);
    cdata_.store(cdata, std::memory_order_relaxed);
    num_task_.store(num_task, std::memory_order_relaxed);
    barrier_.num_threads = std::min(num_task, num_threads_);
    barrier_.arrived.store(0, std::memory_order_relaxed);
    env_.sync_handle = &barrier_;
    env_.num_task = num_task;
    finished_.store(0, std::memory_order_relaxed);
    failed_.store(false, std::memory_order_relaxed);
    first_error_.clear();
    Publish(generation + 1, 1);  // task 0 is the caller's

    RunTask(0);
    int done = 1 + ClaimAndRun();
    finished_.fetch_add(done, std::memory_order_acq_rel);
    // Wait for the tasks workers claimed: they are running.
    for (int spin = 0; finished_.load(std::memory_order_acquire) != num_task; ++spin) {
      if (spin < kSpinIterations) {
        CpuRelax();
      } else {
        std::this_thread::yield();
      }
    }
    if (!failed_.load(std::memory_order_acquire)) return 0;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!first_error_.empty()) SetLastError(first_error_);
    return -1;
  }

 private:
  static constexpr uint32_t kClosed = 0xffffffffu;
  static uint64_t Generation(uint64_t state) { return state >> 32; }

  // Makes launch `generation` visible with `next` as its next unclaimed task, and wakes sleepers.
  void Publish(uint64_t generation, uint32_t next) {
    state_.store(generation << 32 | next, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      wake_.notify_all();
    }
  }

  void RunTask(int task) {
    inside_task = true;
    if (lambda_.load(std::memory_order_relaxed)(task, &env_, cdata_.load(std::memory_order_relaxed)) != 0 &&
        !failed_.exchange(true)) {
      std::lock_guard<std::mutex> lock(mutex_);
      first_error_ = LastError();
      if (first_error_.empty()) first_error_ = "a parallel task failed without a message";
    }
    inside_task = false;
  }

  // Claims and runs the current launch's unclaimed tasks until none is left; returns how many ran.
  int ClaimAndRun() {
    int ran = 0;
    uint64_t state = state_.load(std::memory_order_acquire);
    while (static_cast<uint32_t>(state) != kClosed) {
      int num_task = num_task_.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);  // the read above, then the claim
      if (static_cast<int64_t>(static_cast<uint32_t>(state)) >= num_task) break;
      if (!state_.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
        continue;  // `state` now holds the current state
      }
      RunTask(static_cast<int>(static_cast<uint32_t>(state)));
      ++ran;
      state = state_.load(std::memory_order_acquire);
    }
    return ran;
  }

  void WorkerLoop() {
    uint64_t seen = 0;
    while (true) {
      uint64_t state = state_.load(std::memory_order_acquire);
      for (int spin = 0; Generation(state) == seen; ++spin) {
        if (spin < kSpinIterations) {
          CpuRelax();
        } else {
          std::unique_lock<std::mutex> lock(mutex_);
          sleepers_.fetch_add(1, std::memory_order_seq_cst);
          wake_.wait(lock, [&] { return Generation(state_.load(std::memory_order_seq_cst)) != seen; });
          sleepers_.fetch_sub(1, std::memory_order_relaxed);
        }
        state = state_.load(std::memory_order_acquire);
      }
      seen = Generation(state);
      if (shutdown_.load()) return;
      int ran = ClaimAndRun();
      if (ran > 0) finished_.fetch_add(ran, std::memory_order_acq_rel);
    }
  }

  const int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;  // first_error_, and the sleepers' condition variable
  std::condition_variable wake_;
  std::atomic<uint64_t> state_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<int> finished_{0};  // tasks of the current launch that have run
  std::atomic<bool> failed_{false};
  std::atomic<bool> shutdown_{false};
  std::string first_error_;
  // The current launch: written by the launching thread while claims are closed.
  std::atomic<FTVMParallelLambda> lambda_{nullptr};
  std::atomic<void*> cdata_{nullptr};
  std::atomic<int> num_task_{0};
  TVMParallelGroupEnv env_{};
  Barrier barrier_;
};

// Threads do not survive fork(): in the child, a pool made before the fork has workers that are
// not there (a launch would wait for them forever) and mutexes they may have held. Each fork
// counts here, and a pool from before the last fork is abandoned, neither used nor destroyed (its
// destructor would join threads that do not exist); a new one is made.
std::atomic<uint64_t> forks_seen{0};
[[maybe_unused]] const int fork_handler_registered = pthread_atfork(nullptr, nullptr, [] { forks_seen.fetch_add(1); });

ThreadPool& ThisThreadsPool() {
  thread_local std::unique_ptr<ThreadPool> pool;
  thread_local uint64_t pool_forks = 0;
  uint64_t forks = forks_seen.load(std::memory_order_relaxed);
  if (pool != nullptr && pool_forks != forks) (void)pool.release();  // its threads died with the fork
  // The pool has the process's thread count, or more while an executor of more threads runs here;
  // an executor of fewer launches fewer tasks on it (so executors of different counts that take
  // turns on one thread do not remake it each time).
  thread_local int pool_process_threads = 0;
  int process = ProcessThreads();
  if (pool == nullptr || pool->num_threads() < NumThreads() || pool_process_threads != process) {
    pool.reset();
    pool = std::make_unique<ThreadPool>(std::max(NumThreads(), process));
    pool_forks = forks;
    pool_process_threads = process;
  }
  return *pool;
}

}  // namespace

int NumThreads() { return scoped_threads > 0 ? scoped_threads : ProcessThreads(); }

void SetNumThreads(int num_threads) { configured_threads.store(std::max(0, num_threads)); }

ScopedThreadCount::ScopedThreadCount(int num_threads) : previous_(scoped_threads) {
  if (num_threads > 0) scoped_threads = num_threads;
}

ScopedThreadCount::~ScopedThreadCount() { scoped_threads = previous_; }

int ParallelLaunch(FTVMParallelLambda lambda, void* cdata, int num_task) {
  if (lambda == nullptr || num_task < 0) {
    SetLastError("TVMBackendParallelLaunch: null function or negative task count");
    return -1;
  }
  if (inside_task || NumThreads() == 1 || num_task == 1) {
    // Nested launch or a single thread: run the tasks here, without a barrier.
    TVMParallelGroupEnv env{nullptr, num_task == 0 ? 1 : num_task};
    bool nested = inside_task;
    inside_task = true;
    int status = 0;
    for (int task = 0; task < env.num_task && status == 0; ++task) status = lambda(task, &env, cdata);
    inside_task = nested;
    return status == 0 ? 0 : -1;
  }
  return ThisThreadsPool().Launch(lambda, cdata, num_task == 0 ? NumThreads() : num_task);
}

int ParallelBarrier(int task_id, TVMParallelGroupEnv* env) {
  if (env == nullptr || env->sync_handle == nullptr) {
    if (env != nullptr && env->num_task == 1) return 0;  // one task: nothing to wait for
    SetLastError("TVMBackendParallelBarrier: no barrier in this launch (nested or single-thread "
                 "launch with several tasks)");
    return -1;
  }
  auto* barrier = static_cast<Barrier*>(env->sync_handle);
  if (env->num_task > barrier->num_threads) {
    SetLastError("TVMBackendParallelBarrier: the launch has more tasks than threads, so its tasks "
                 "cannot all wait at a barrier (task " + std::to_string(task_id) + ")");
    return -1;
  }
  int phase = barrier->phase.load(std::memory_order_acquire);
  if (barrier->arrived.fetch_add(1, std::memory_order_acq_rel) == barrier->num_threads - 1) {
    barrier->arrived.store(0, std::memory_order_relaxed);
    barrier->phase.fetch_add(1, std::memory_order_acq_rel);
  } else {
    while (barrier->phase.load(std::memory_order_acquire) == phase) std::this_thread::yield();
  }
  return 0;
}

}  // namespace kiln::runtime
