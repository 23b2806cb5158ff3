// Targets and kernel choice: this machine as cpuid and sysfs describe it, vector widths per
// instruction set, and the rules AlterOpLayout and lowering share (convolution blocks, packed
// dense weights, which kernel reads which layout, when an elementwise loop uses threads).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "target/kernel_choice.h"
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

TEST(KernelChoice, ConvolutionBlocks) {
  EXPECT_EQ(PreferredConvBlock(TargetFor("x86-64-v4", Isa::kAvx512)), 16);
  EXPECT_EQ(PreferredConvBlock(TargetFor("x86-64-v3", Isa::kAvx2)), 16);
  EXPECT_EQ(PreferredConvBlock(TargetFor("x86-64", Isa::kBaseline)), 8);
  EXPECT_EQ(ConvOutputBlock(16, 64), 16);
  EXPECT_EQ(ConvOutputBlock(16, 24), 8);   // half the preferred block
  EXPECT_EQ(ConvOutputBlock(16, 12), 0);
  EXPECT_EQ(ConvOutputBlock(8, 24), 8);
  EXPECT_EQ(ConvOutputBlock(8, 12), 0);    // 4 is no block
  EXPECT_EQ(ConvOutputBlock(0, 16), 0);    // off
  EXPECT_EQ(ConvKernelFor("NCHW", "OIHW", ""), ConvKernel::kDirect);
  EXPECT_EQ(ConvKernelFor("NCHW", "OIHW", "NCHW"), ConvKernel::kDirect);
  EXPECT_EQ(ConvKernelFor("NCHW", "OIHW1i8o", "NCHW8c"), ConvKernel::kBlocked);
  EXPECT_EQ(ConvKernelFor("NCHW16c", "OIHW", "NCHW16c"), ConvKernel::kBlocked);
}

TEST(KernelChoice, DenseWeights) {
  EXPECT_EQ(PackedDenseLayout(32), "NK16n");
  EXPECT_EQ(PackedDenseLayout(24), "");
  EXPECT_EQ(DenseKernelFor("NK"), DenseKernel::kGemm);
  EXPECT_EQ(DenseKernelFor(PackedDenseLayout(16)), DenseKernel::kGemmPacked);
  EXPECT_EQ(DenseKernelFor("NK8n"), DenseKernel::kNone);
}

TEST(KernelChoice, LargeElementwiseLoopsUseThreads) {
  EXPECT_TRUE(SplitElementwiseLoop(1 << 15));
  EXPECT_FALSE(SplitElementwiseLoop((1 << 15) - 1));
}

}  // namespace
}  // namespace kiln::target
