// A kernel test binary compiled for an instruction set this CPU lacks skips every test, and says
// why in the summary, instead of stopping at an illegal instruction. (The binaries are compiled
// for AVX-512, AVX2 and baseline x86-64 on every x86-64 machine: tests/CMakeLists.txt.)
#include <gtest/gtest.h>

namespace {

class RequireCompiledIsa : public ::testing::Environment {
 public:
  void SetUp() override {
#if defined(__x86_64__)
#if defined(__AVX512F__)
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512dq") || !__builtin_cpu_supports("avx512vl")) {
      GTEST_SKIP() << "compiled for AVX-512 (x86-64-v4), which this CPU does not have: its path is untested here";
    }
#elif defined(__AVX2__)
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
      GTEST_SKIP() << "compiled for AVX2 and FMA (x86-64-v3), which this CPU does not have: its path is untested here";
    }
#endif
#endif
  }
};

::testing::Environment* const kRequireCompiledIsa = ::testing::AddGlobalTestEnvironment(new RequireCompiledIsa);

}  // namespace
