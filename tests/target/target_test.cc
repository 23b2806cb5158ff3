// Targets: this machine as cpuid and sysfs describe it, and vector widths per instruction set.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "target/target.h"

namespace kiln::target {
namespace {

using ::testing::HasSubstr;

// The flags of the first processor in /proc/cpuinfo, with spaces around each.
std::string CpuFlags() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("flags", 0) == 0) return line.substr(line.find(':') + 1) + " ";
  }
  return "";
}

TEST(Target, HostIsWhatProcCpuinfoAndSysfsSay) {
  const Target& host = HostTarget();
  std::string flags = CpuFlags();
  ASSERT_FALSE(flags.empty()) << "no flags line in /proc/cpuinfo";
  auto has = [&](const char* flag) { return flags.find(std::string(" ") + flag + " ") != std::string::npos; };
  Isa want = has("avx512f") ? Isa::kAvx512 : has("avx2") && has("fma") ? Isa::kAvx2 : Isa::kBaseline;
  EXPECT_EQ(host.isa, want) << flags;
  EXPECT_EQ(host.march, "native");
  EXPECT_EQ(host.cores, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  if (std::filesystem::exists("/sys/devices/system/cpu/cpu0/cache/index0/size")) {
    EXPECT_GE(host.l1d_bytes, 4096);
    EXPECT_GT(host.l2_bytes, host.l1d_bytes);
  }
  EXPECT_FALSE(host.dnnl);
}

TEST(Target, VectorWidthFollowsTheInstructionSet) {
  EXPECT_EQ(TargetFor("x86-64", Isa::kBaseline).vector_floats, 4);
  EXPECT_EQ(TargetFor("x86-64-v3", Isa::kAvx2).vector_floats, 8);
  Target avx512 = TargetFor("skylake-avx512", Isa::kAvx512);
  EXPECT_EQ(avx512.vector_floats, 16);
  EXPECT_EQ(avx512.march, "skylake-avx512");
  EXPECT_EQ(avx512.cores, HostTarget().cores);  // a named CPU gets this machine's cores
  Target t = TargetFor("x86-64-v3", Isa::kAvx2);
  t.cores = 2;
  t.l1d_bytes = 32 << 10;
  t.l2_bytes = 512 << 10;
  t.l3_bytes = 32 << 20;
  EXPECT_EQ(t.ToString(), "x86-64-v3: avx2, 8-float vectors, 2 cores, L1d 32 KiB, L2 512 KiB, L3 32 MiB, no oneDNN");
}

}  // namespace
}  // namespace kiln::target
