// Parallel launch for compiled operators (TVMBackendParallelLaunch / Barrier).
//
// Each thread that launches parallel work gets its own pool of worker threads, so executors
// running concurrently in different threads never wait for each other. The launching thread runs
// task 0. The thread count comes from KILN_NUM_THREADS, else TVM_NUM_THREADS, else
// OMP_NUM_THREADS, else the number of hardware threads. A launch from inside a task runs its
// tasks one after another in the calling thread (a barrier there is an error). After fork(), the
// child's first launch makes a new pool: the parent's workers did not come along.
#pragma once

#include "kiln/c_backend_api.h"

namespace kiln::runtime {

// Returns 0, or non-zero when a task failed (its message is then the caller's last error).
int ParallelLaunch(FTVMParallelLambda lambda, void* cdata, int num_task);
int ParallelBarrier(int task_id, TVMParallelGroupEnv* env);

int NumThreads();
// Sets the number of threads for launches from now on (0 = back to the default).
void SetNumThreads(int num_threads);

}  // namespace kiln::runtime
