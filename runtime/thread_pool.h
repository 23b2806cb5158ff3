// Parallel launch for compiled operators (TVMBackendParallelLaunch / Barrier).
//
// Each thread that launches parallel work gets its own pool of worker threads, so executors
// running concurrently in different threads never wait for each other. The launching thread runs
// task 0. The thread count is the running executor's own (GraphExecutor::SetNumThreads), else the
// process's: SetNumThreads's, else KILN_NUM_THREADS, TVM_NUM_THREADS, OMP_NUM_THREADS, else the
// number of hardware threads. A launch from inside a task runs its
// tasks one after another in the calling thread (a barrier there is an error). After fork(), the
// child's first launch makes a new pool: the parent's workers did not come along.
#pragma once

#include "kiln/c_backend_api.h"

namespace kiln::runtime {

// Returns 0, or non-zero when a task failed (its message is then the caller's last error).
int ParallelLaunch(FTVMParallelLambda lambda, void* cdata, int num_task);
int ParallelBarrier(int task_id, TVMParallelGroupEnv* env);

// The thread count of launches from this thread: its ScopedThreadCount's, else the process's.
int NumThreads();
// Sets the process's number of threads for launches from now on (0 = back to the default).
void SetNumThreads(int num_threads);

// While it lives, launches from this thread use `num_threads` threads (0: the count stays as it
// is): an executor's own thread count during its run. Scopes nest.
class ScopedThreadCount {
 public:
  explicit ScopedThreadCount(int num_threads);
  ~ScopedThreadCount();
  ScopedThreadCount(const ScopedThreadCount&) = delete;
  ScopedThreadCount& operator=(const ScopedThreadCount&) = delete;

 private:
  int previous_;
};

}  // namespace kiln::runtime
