// Shared by the kernel tests: connects the kernels to kiln's runtime (workspace pool, thread
// pool, error text) as the loader of a model library does, and makes random data.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/backend_api.h"
#include "kiln/c_runtime_api.h"

namespace kiln::kernels {

class KernelEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    __TVMAPISetLastError = TVMAPISetLastError;
    __TVMBackendAllocWorkspace = TVMBackendAllocWorkspace;
    __TVMBackendFreeWorkspace = TVMBackendFreeWorkspace;
  }
};
inline const auto* const kKernelEnvironment = ::testing::AddGlobalTestEnvironment(new KernelEnvironment);

// Work split across the runtime's thread pool (true) or run on the calling thread (false).
inline void UseThreads(bool parallel) {
  __TVMBackendParallelLaunch = parallel ? TVMBackendParallelLaunch : nullptr;
  __TVMBackendParallelBarrier = parallel ? TVMBackendParallelBarrier : nullptr;
}

// Workspace the first `workspace_grants` requests get; those after it fail (install it as
// __TVMBackendAllocWorkspace).
inline int workspace_grants = 0;
inline void* RationedWorkspace(int device_type, int device_id, uint64_t bytes, int dtype_code, int dtype_bits) {
  if (workspace_grants-- <= 0) return nullptr;
  return TVMBackendAllocWorkspace(device_type, device_id, bytes, dtype_code, dtype_bits);
}

// Uniform in [-1, 1].
inline std::vector<float> Random(size_t size, std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> v(size);
  for (float& x : v) x = uniform(rng);
  return v;
}

}  // namespace kiln::kernels
