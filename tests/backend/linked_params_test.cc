// Weights in place: an exported library links its parameters into its data (TVM's
// link-params); every executor of it reads them there, none copies them, writing one gives that
// executor a copy of its own, and the library's memory is never written.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>

#include "backend/build.h"
#include "runtime/params.h"
#include "tests/backend/build_fixture.h"
#include "tests/float_arrays.h"

namespace kiln::backend {
namespace {

using runtime::GraphExecutor;
using runtime::Module;
using runtime::NDArray;

const char* kAddConstant = R"(fn (%x: Tensor[(2, 3), float32]) {
  %0 = const(Tensor[(3), float32], [1, -2, 0.5]);
  add(%x, %0)
})";

// The file of the loaded library whose memory holds `address`, or "" when none does.
std::string LibraryHolding(const void* address) {
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

// A line of /proc/self/status ("RssAnon"), in bytes.
int64_t StatusBytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  }
  return -1;
}

class LinkedParamsTest : public BuildTest {
 protected:
  // Exports `text` as a library and loads it.
  Module ExportAndLoad(const std::string& text, const std::string& name) {
    path_ = (dir_ / name).string();
    Build(ir::ParseFunction(text), options_).ExportLibrary(path_);
    return runtime::LoadModuleFromFile(path_);
  }
  static std::shared_ptr<GraphExecutor> Create(const Module& lib) {
    return runtime::GetGraphExecutor(lib.GetFunction("default")(runtime::kCPU).AsModule());
  }
  static std::vector<float> RunOn(GraphExecutor& exec, const std::vector<float>& x) {
    exec.SetInput(exec.InputIndex("x"), *test::FloatArray({2, 3}, x).get());
    exec.Run();
    return test::ToVector(exec.GetOutput(0));
  }

  std::string path_;
};

TEST_F(LinkedParamsTest, ExecutorsReadTheParametersInTheLibrary) {
  Module lib = ExportAndLoad(kAddConstant, "add.so");
  auto first = Create(lib), second = Create(lib);
  int p0 = first->InputIndex("p0");
  const void* weights = first->GetInput(p0).data();
  EXPECT_EQ(LibraryHolding(weights), path_);
  EXPECT_EQ(second->GetInput(p0).data(), weights);  // one copy, shared by every executor
  EXPECT_EQ(reinterpret_cast<uintptr_t>(weights) % runtime::kAllocAlignment, 0u);
  EXPECT_TRUE(first->IsLinkedParam(p0));
  EXPECT_FALSE(first->IsLinkedParam(first->InputIndex("x")));
  ASSERT_EQ(first->GetInputInfo().size(), 1u);  // p0 is a parameter though the factory holds none
  EXPECT_EQ(first->GetInputInfo()[0].name, "x");
  EXPECT_EQ(first->OwnedStorageBytes(), 2 * (6 * sizeof(float)));  // x and the output, not p0
  EXPECT_EQ(RunOn(*first, {0, 1, 2, -3, 4, -5}), (std::vector<float>{1, -1, 2.5, -2, 2, -4.5}));
  // The factory's own parameters are those the library does not link: none here.
  std::string params = lib.GetFunction("get_graph_params")().string_payload();
  EXPECT_TRUE(runtime::LoadParams(params).empty());
}

TEST_F(LinkedParamsTest, WritingALinkedParameterGivesThatExecutorACopy) {
  Module lib = ExportAndLoad(kAddConstant, "add.so");
  auto written = Create(lib), untouched = Create(lib), loaded = Create(lib);
  int p0 = written->InputIndex("p0");
  const void* in_library = untouched->GetInput(p0).data();
  written->SetInput(p0, *test::FloatArray({3}, {10, 20, 30}).get());
  EXPECT_NE(written->GetInput(p0).data(), in_library);
  EXPECT_FALSE(written->IsLinkedParam(p0));
  EXPECT_EQ(RunOn(*written, {0, 0, 0, 1, 1, 1}), (std::vector<float>{10, 20, 30, 11, 21, 31}));
  // The library's copy is as it was, for every other executor.
  EXPECT_EQ(test::ToVector(untouched->GetInput(p0)), (std::vector<float>{1, -2, 0.5}));
  EXPECT_EQ(RunOn(*untouched, {0, 0, 0, 1, 1, 1}), (std::vector<float>{1, -2, 0.5, 2, -1, 1.5}));
  // load_params copies the same way.
  loaded->LoadParams(runtime::NamedArrays{{"p0", test::FloatArray({3}, {-1, -1, -1})}});
  EXPECT_EQ(RunOn(*loaded, {0, 0, 0, 1, 1, 1}), (std::vector<float>{-1, -1, -1, 0, 0, 0}));
  EXPECT_EQ(untouched->GetInput(p0).data(), in_library);
}

TEST_F(LinkedParamsTest, ASharedLinkedParameterIsCopiedWhenWritten) {
  Module lib = ExportAndLoad(kAddConstant, "add.so");
  auto source = Create(lib), sharing = Create(lib);
  int p0 = source->InputIndex("p0");
  std::string names = runtime::SaveParams({{"p0", test::FloatArray({3}, {0, 0, 0})}});
  sharing->ShareParams(*source, names);
  EXPECT_EQ(sharing->GetInput(p0).data(), source->GetInput(p0).data());
  EXPECT_TRUE(sharing->IsLinkedParam(p0));
  sharing->SetInput(p0, *test::FloatArray({3}, {5, 5, 5}).get());
  EXPECT_EQ(RunOn(*sharing, {0, 0, 0, 1, 1, 1}), (std::vector<float>{5, 5, 5, 6, 6, 6}));
  EXPECT_EQ(RunOn(*source, {0, 0, 0, 1, 1, 1}), (std::vector<float>{1, -2, 0.5, 2, -1, 1.5}));
}

// The executor hands its outputs to the caller as writable memory: a parameter that is also an
// output stays with the factory and is copied into each executor.
TEST_F(LinkedParamsTest, AParameterThatIsAnOutputIsNotLinked) {
  Module lib = ExportAndLoad(R"(fn (%x: Tensor[(2, 3), float32]) {
  %0 = const(Tensor[(3), float32], [1, -2, 0.5]);
  %1 = add(%x, %0);
  (%1, %0)
})", "output.so");
  auto exec = Create(lib);
  EXPECT_FALSE(exec->IsLinkedParam(exec->InputIndex("p0")));
  EXPECT_NE(LibraryHolding(exec->GetOutput(1).data()), path_);
  EXPECT_EQ(RunOn(*exec, {0, 0, 0, 1, 1, 1}), (std::vector<float>{1, -2, 0.5, 2, -1, 1.5}));
  EXPECT_EQ(test::ToVector(exec->GetOutput(1)), (std::vector<float>{1, -2, 0.5}));
  runtime::NamedArrays kept = runtime::LoadParams(lib.GetFunction("get_graph_params")().string_payload());
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].first, "p0");
}

// The three-file form carries its parameters in mod.params; its mod.so links none.
TEST_F(LinkedParamsTest, TheThreeFileFormLinksNothing) {
  std::string directory = (dir_ / "three").string();
  Build(ir::ParseFunction(kAddConstant), options_).ExportThreeFiles(directory);
  Module lib = runtime::LoadModuleFromFile(directory + "/mod.so");
  runtime::PackedFunc lookup = lib.GetFunction("_lookup_linked_param");
  ASSERT_TRUE(lookup.defined());
  for (int64_t storage_id = 0; storage_id < 4; ++storage_id) EXPECT_TRUE(lookup(storage_id).IsNull());
  // A call that is not TVM's (storage id, an integer) is an error, not a guess.
  try {
    lookup(std::string("p0"));
    FAIL() << "a string storage id was accepted";
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("_lookup_linked_param: expected one argument, an integer storage id"));
  }
}

// Loading the library and creating an executor adds little anonymous memory beside weights of
// 32 MB: they stay file pages of the library, shared by every executor and process.
TEST_F(LinkedParamsTest, WeightsAddNoAnonymousMemory) {
  constexpr int64_t kOut = 2048, kIn = 4096;
  std::vector<float> weights(kOut * kIn);
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (float& w : weights) w = uniform(random);
  options_.params = {{"w", test::FloatArray({kOut, kIn}, weights)}};
  path_ = (dir_ / "dense.so").string();
  Build(ir::ParseFunction(R"(fn (%x: Tensor[(1, 4096), float32], %w: Tensor[(2048, 4096), float32]) {
  nn.dense(%x, %w)
})"), options_).ExportLibrary(path_);
  options_.params.clear();
  int64_t before = StatusBytes("RssAnon");
  Module lib = runtime::LoadModuleFromFile(path_);
  auto first = Create(lib), second = Create(lib);
  int64_t added = StatusBytes("RssAnon") - before;
  int64_t weight_bytes = kOut * kIn * static_cast<int64_t>(sizeof(float));
  EXPECT_LT(added, weight_bytes / 5) << "load + 2 executors added " << added << " bytes of anonymous memory";
  // And the weights the executors read are right: y = W x for x = e_5.
  std::vector<float> x(kIn, 0.0f);
  x[5] = 1.0f;
  first->SetInput(first->InputIndex("x"), *test::FloatArray({1, kIn}, x).get());
  first->Run();
  std::vector<float> y = test::ToVector(first->GetOutput(0));
  ASSERT_EQ(y.size(), static_cast<size_t>(kOut));
  for (int64_t o = 0; o < kOut; o += 97) EXPECT_FLOAT_EQ(y[o], weights[o * kIn + 5]) << "output " << o;
}

}  // namespace
}  // namespace kiln::backend
