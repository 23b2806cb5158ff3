// The thread pool behind TVMBackendParallelLaunch: per launching thread, workers spin briefly for
// the next launch and then sleep on a condition variable.
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
thread_local bool inside_task = false;

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

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads) : num_threads_(num_threads) {
    for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
  }

  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      shutdown_ = true;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  int num_threads() const { return num_threads_; }

  int Launch(FTVMParallelLambda lambda, void* cdata, int num_task) {
    lambda_ = lambda;
    cdata_ = cdata;
    num_task_ = num_task;
    used_threads_ = std::min(num_task, num_threads_);
    barrier_.num_threads = used_threads_;
    barrier_.arrived.store(0, std::memory_order_relaxed);
    env_.sync_handle = &barrier_;
    env_.num_task = num_task;
    failed_.store(false, std::memory_order_relaxed);
    first_error_.clear();
    // Every worker acknowledges every launch, so none still reads this launch's fields when the
    // next one writes them.
    pending_.store(num_threads_ - 1, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();

    RunTasks(0);
    for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
      if (spin < kSpinIterations) {
        CpuRelax();
      } else {
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [this] { return pending_.load(std::memory_order_acquire) == 0; });
      }
    }
    if (!failed_.load(std::memory_order_acquire)) return 0;
    if (!first_error_.empty()) SetLastError(first_error_);
    return -1;
  }

 private:
  void RunTasks(int thread_index) {
    inside_task = true;
    for (int task = thread_index; task < num_task_; task += used_threads_) {
      if (lambda_(task, &env_, cdata_) != 0 && !failed_.exchange(true)) {
        std::lock_guard<std::mutex> lock(mutex_);
        first_error_ = LastError();
        if (first_error_.empty()) first_error_ = "a parallel task failed without a message";
      }
    }
    inside_task = false;
  }

  void WorkerLoop(int thread_index) {
    uint64_t seen = 0;
    while (true) {
      for (int spin = 0; generation_.load(std::memory_order_acquire) == seen; ++spin) {
        if (spin < kSpinIterations) {
          CpuRelax();
        } else {
          std::unique_lock<std::mutex> lock(mutex_);
          wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        }
      }
      seen = generation_.load(std::memory_order_acquire);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (shutdown_) return;
      }
      if (thread_index < used_threads_) RunTasks(thread_index);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mutex_);
        done_.notify_one();
      }
    }
  }

  const int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> failed_{false};
  bool shutdown_ = false;
  std::string first_error_;
  // The current launch; written by the launching thread before generation_ is bumped.
  FTVMParallelLambda lambda_ = nullptr;
  void* cdata_ = nullptr;
  int num_task_ = 0;
  int used_threads_ = 1;
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
  int wanted = NumThreads();
  if (pool == nullptr || pool->num_threads() != wanted) {
    pool.reset();
    pool = std::make_unique<ThreadPool>(wanted);
    pool_forks = forks;
  }
  return *pool;
}

}  // namespace

int NumThreads() {
  int configured = configured_threads.load(std::memory_order_relaxed);
  if (configured > 0) return configured;
  static const int from_environment = ThreadCountFromEnvironment();
  return from_environment;
}

void SetNumThreads(int num_threads) { configured_threads.store(std::max(0, num_threads)); }

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
  ThreadPool& pool = ThisThreadsPool();
  return pool.Launch(lambda, cdata, num_task == 0 ? pool.num_threads() : num_task);
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
