// What kiln compiles for: the instruction set and its vector width, the cores and caches kernel
// choices depend on, and whether oneDNN is at hand. BuildOptions carries one, passes see it
// (PassEnvironment::target), and kernel choices (kernel_choice.h) read it.
#pragma once

#include <cstdint>
#include <string>

namespace kiln::target {

// The vector instruction sets kernels have paths for.
enum class Isa {
  kBaseline,  // x86-64 without AVX: 4-float SSE vectors, or plain arrays the compiler vectorizes
  kAvx2,      // AVX2 + FMA: 8-float vectors
  kAvx512,    // AVX-512F: 16-float vectors
};

struct Target {
  std::string march = "native";  // what the compiler gets as -march
  Isa isa = Isa::kBaseline;
  int vector_floats = 4;  // floats in one vector register
  int cores = 1;          // hardware threads of this machine (a named CPU is taken to have as many)
  int64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;  // per core (L3: per cache); 0 when unknown
  bool dnnl = false;      // this build has the oneDNN external codegen

  // "native: avx2, 8-float vectors, 2 cores, L1d 32 KiB, L2 512 KiB, L3 32 MiB, no oneDNN"
  std::string ToString() const;
};

// This machine as -march=native sees it: its instruction set (cpuid), its hardware threads and
// cache sizes (sysfs). `dnnl` is false: backend::ResolveTarget knows the build's codegens.
const Target& HostTarget();

// A target for `march` with the instruction set `isa` (vector width from it); cores and caches
// are this machine's.
Target TargetFor(const std::string& march, Isa isa);

const char* IsaName(Isa isa);

}  // namespace kiln::target
