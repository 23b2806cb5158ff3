// Build options the Python package passes through: target strings, params bound to main's
// inputs (TVM's relay.build params), and a factory loaded without a file to keep.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "backend/build.h"
#include "ir/text.h"
#include "runtime/graph_executor_module.h"

namespace kiln::backend {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const runtime::Error& e) {
    return e.what();
  }
  return "no error";
}

runtime::NDArray Floats(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  runtime::NDArray a = runtime::NDArray::Empty(shape, runtime::kFloat32);
  a.CopyFromBytes(values.data(), values.size() * sizeof(float));
  return a;
}

// A named CPU's instruction set is what the compiler enables for it; "native" is this machine.
TEST(ResolveTargetTest, InstructionSetsOfNamedCpus) {
  EXPECT_EQ(ResolveTarget("x86-64").isa, target::Isa::kBaseline);
  EXPECT_EQ(ResolveTarget("x86-64").vector_floats, 4);
  EXPECT_EQ(ResolveTarget("x86-64-v3").isa, target::Isa::kAvx2);
  target::Target avx512 = ResolveTarget("cpu -mcpu=skylake-avx512");
  EXPECT_EQ(avx512.isa, target::Isa::kAvx512);
  EXPECT_EQ(avx512.vector_floats, 16);
  EXPECT_EQ(avx512.march, "skylake-avx512");
  EXPECT_EQ(ResolveTarget("llvm -mcpu=znver3").isa, target::Isa::kAvx2);
  EXPECT_EQ(ResolveTarget("native").isa, target::HostTarget().isa);
  EXPECT_EQ(ResolveTarget("cpu").march, "native");
  bool dnnl_enabled = false;
  for (const ExternalCodegen& codegen : ExternalCodegens()) dnnl_enabled |= codegen.name == "dnnl" && codegen.enabled();
  EXPECT_EQ(ResolveTarget("native").dnnl, dnnl_enabled);
  EXPECT_THAT(ErrorOf([] { ResolveTarget("no-such-cpu"); }), HasSubstr("target -march=no-such-cpu: the compiler"));
}

// The build's own flags count: AVX-512 turned off for an AVX-512 CPU leaves AVX2.
TEST(ResolveTargetTest, CompilerFlagsNarrowTheInstructionSet) {
  CompilerOptions no_avx512;
  no_avx512.flags = {"-mno-avx512f"};
  EXPECT_EQ(ResolveTarget("skylake-avx512", no_avx512).isa, target::Isa::kAvx2);
  EXPECT_EQ(ResolveTarget("skylake-avx512", no_avx512).vector_floats, 8);
  CompilerOptions no_avx;
  no_avx.flags = {"-mno-avx"};
  EXPECT_EQ(ResolveTarget("x86-64-v3", no_avx).isa, target::Isa::kBaseline);
}

TEST(MarchForTargetTest, TargetStrings) {
  EXPECT_EQ(MarchForTarget("cpu"), "native");
  EXPECT_EQ(MarchForTarget(""), "native");
  EXPECT_EQ(MarchForTarget("llvm"), "native");
  EXPECT_EQ(MarchForTarget("cpu -mcpu=skylake-avx512"), "skylake-avx512");
  EXPECT_EQ(MarchForTarget("llvm -mcpu=znver3 -opt-level=3"), "znver3");
  EXPECT_EQ(MarchForTarget("x86-64-v3"), "x86-64-v3");
  EXPECT_THAT(ErrorOf([] { MarchForTarget("cuda -mcpu=sm_80"); }), HasSubstr("only cpu and llvm take -mcpu"));
  EXPECT_THAT(ErrorOf([] { MarchForTarget("cpu -mcpu="); }), HasSubstr("-mcpu= needs a CPU name"));
  EXPECT_THAT(ErrorOf([] { MarchForTarget("cpu -foo"); }), HasSubstr("is not understood"));
}

const char* kScaleAdd = R"(fn (%x: Tensor[(2), float32], %w: Tensor[(2), float32]) {
  %0 = multiply(%x, %w);
  %1 = add(%0, %w);
  %1
})";

TEST(BindParamsTest, NamedParametersBecomeConstants) {
  ir::Expr bound = BindParams(ir::ParseFunction(kScaleAdd), {{"w", Floats({2}, {0.5f, 2.0f})}});
  ir::Expr want = ir::ParseFunction(R"(fn (%x: Tensor[(2), float32]) {
  %0 = const(Tensor[(2), float32], [0.5, 2]);
  %1 = multiply(%x, %0);
  %2 = add(%1, %0);
  %2
})");
  EXPECT_TRUE(ir::StructurallyEqual(bound, want)) << ir::PrintFunction(bound);
  ir::Expr unchanged = ir::ParseFunction(kScaleAdd);
  EXPECT_EQ(BindParams(unchanged, {}), unchanged);
}

TEST(BindParamsTest, UnknownNamesMismatchesAndDuplicatesAreErrors) {
  ir::Expr main = ir::ParseFunction(kScaleAdd);
  EXPECT_THAT(ErrorOf([&] { BindParams(main, {{"v", Floats({2}, {1, 2})}}); }),
              HasSubstr("main has no parameter 'v' (parameters: x, w)"));
  EXPECT_THAT(ErrorOf([&] { BindParams(main, {{"w", Floats({3}, {1, 2, 3})}}); }),
              HasSubstr("param 'w' is Tensor[(3), float32] but main's parameter of that name is Tensor[(2), float32]"));
  EXPECT_THAT(ErrorOf([&] { BindParams(main, {{"w", Floats({2}, {1, 2})}, {"w", Floats({2}, {1, 2})}}); }),
              HasSubstr("param 'w' is given twice"));
}

TEST(BuildOptionsTest, BoundParamsAreCompiledInAndLoadRunsWithoutAFile) {
  BuildOptions options;  // objects come from the shared cache (~/.cache/kiln/objects)
  runtime::NDArray w = Floats({2}, {0.5f, 2.0f});
  options.params = {{"w", w}};
  ExecutorFactory factory = Build(ir::ParseFunction(kScaleAdd), options);
  w.CopyFromBytes(std::vector<float>{9, 9}.data(), 2 * sizeof(float));  // the build took a copy
  runtime::Module lib = factory.Load();
  auto exec = runtime::GetGraphExecutor(lib.GetFunction("default")(runtime::kCPU).AsModule());
  EXPECT_EQ(exec->GetInputInfo().size(), 1u);  // only x is left
  exec->SetInput(0, *Floats({2}, {1.0f, 3.0f}).get());
  exec->Run();
  std::vector<float> y(2);
  exec->GetOutput(0).CopyToBytes(y.data(), sizeof(float) * 2);
  EXPECT_EQ(y, (std::vector<float>{1.0f, 8.0f}));  // x * w + w
  runtime::Module again = factory.Load();           // a second load is a separate library
  EXPECT_NE(again.get(), lib.get());
}

// The target says what -march the compiler gets; a different compiler.march is a mistake, not
// silently overridden.
TEST(BuildOptionsTest, CompilerMarchThatContradictsTheTargetIsAnError) {
  BuildOptions options;
  options.compiler.march = "x86-64";
  EXPECT_THAT(ErrorOf([&] { Build(ir::ParseFunction(kScaleAdd), options); }),
              HasSubstr("compiler.march is x86-64 but the target's is native; set BuildOptions::target"));
}

TEST(BuildOptionsTest, MissingSourceDirIsAnErrorNamingThePath) {
  BuildOptions options;
  options.compiler.source_dir = "/nonexistent/kiln-share";
  EXPECT_THAT(ErrorOf([&] { Build(ir::ParseFunction(kScaleAdd), options); }), HasSubstr("/nonexistent/kiln-share"));
}

}  // namespace
}  // namespace kiln::backend
