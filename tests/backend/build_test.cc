// The compile flow end to end on small functions written in IR text: build, export one library
// (and the three-file form), load it with the runtime alone, run it and check the numbers
// against values worked out by hand.
#include "backend/build.h"
#include "backend/graph_codegen.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <tuple>
#include <cmath>

#include "ir/text.h"
#include "tests/backend/build_fixture.h"
#include "runtime/graph_executor_module.h"
#include "runtime/graph_json.h"
#include "runtime/module.h"
#include "tests/float_arrays.h"
#include "tests/shared_object_cache.h"

namespace kiln::backend {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// The tests of the object cache itself: a cache of their own, empty at the start.
class BuildCacheTest : public BuildTest {
 protected:
  void SetUp() override {
    BuildTest::SetUp();
    options_.compiler.cache_dir = (dir_ / "cache").string();
  }
};

const char* kAddRelu = R"(fn (%x: Tensor[(2, 3), float32]) {
  %0 = const(Tensor[(3), float32], [1, -2, 0.5]);
  %1 = add(%x, %0);
  %2 = nn.relu(%1);
  %3 = (%2, %1);
  %3
})";

TEST_F(BuildTest, ExportedLibraryRunsOnTheRuntimeAlone) {
  BuildReport report;
  auto exec = BuildAndLoad(kAddRelu, &report);
  EXPECT_EQ(report.primitive_functions, 2);  // add, relu
  EXPECT_EQ(exec->NumInputs(), 2);          // x and the constant p0
  ASSERT_EQ(exec->GetInputInfo().size(), 1u);
  EXPECT_EQ(exec->GetInputInfo()[0].name, "x");
  exec->SetInput(0, *test::FloatArray({2, 3}, {0, 1, 2, -3, 4, -5}).get());
  exec->Run();
  EXPECT_EQ(test::ToVector(exec->GetOutput(1)), (std::vector<float>{1, -1, 2.5, -2, 2, -4.5}));
  EXPECT_EQ(test::ToVector(exec->GetOutput(0)), (std::vector<float>{1, 0, 2.5, 0, 2, 0}));
}

TEST_F(BuildCacheTest, UnchangedFunctionsComeFromTheCache) {
  BuildReport first, second;
  BuildAndLoad(kAddRelu, &first);
  EXPECT_GT(first.compile.compiled, 0);
  BuildAndLoad(kAddRelu, &second);
  EXPECT_EQ(second.compile.compiled, 0);
  EXPECT_EQ(second.compile.cached, first.compile.compiled + first.compile.cached);
}

TEST_F(BuildCacheTest, BuildsInThreadsShareOneCache) {
  // Four builds at once in one process on an empty cache: each compiles in its own directory and
  // publishes the same objects; every library is whole and runs.
  std::vector<std::thread> threads;
  std::vector<std::string> errors(4);
  std::vector<std::vector<float>> outputs(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      try {
        ExecutorFactory factory = Build(ir::ParseFunction(kAddRelu), options_);
        std::string path = (dir_ / ("thread" + std::to_string(t) + ".so")).string();
        factory.ExportLibrary(path);
        runtime::Module lib = runtime::LoadModuleFromFile(path);
        auto exec = runtime::GetGraphExecutor(lib.GetFunction("default")(runtime::kCPU).AsModule());
        exec->SetInput(0, *test::FloatArray({2, 3}, {0, 1, 2, -3, 4, -5}).get());
        exec->Run();
        outputs[t] = test::ToVector(exec->GetOutput(0));
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(errors[t], "") << "build " << t;
    EXPECT_EQ(outputs[t], (std::vector<float>{1, 0, 2.5, 0, 2, 0})) << "build " << t;
  }
  auto ends_with = [](const std::string& name, const std::string& end) {
    return name.size() > end.size() && name.compare(name.size() - end.size(), end.size(), end) == 0;
  };
  for (const auto& entry : fs::directory_iterator(dir_ / "cache")) {  // no work left behind
    std::string name = entry.path().filename().string();  // objects and the precompiled prelude
    EXPECT_TRUE(ends_with(name, ".o") || ends_with(name, ".o.sum") || ends_with(name, ".h") ||
                ends_with(name, ".h.gch") || ends_with(name, ".h.gch.sum"))
        << name;
  }
}

// Objects: the operators, the softmax kernel's source and the two every library has.
const char* kAddSoftmax = R"(fn (%x: Tensor[(2, 3), float32]) {
  %0 = const(Tensor[(3), float32], [1, -2, 0.5]);
  %1 = add(%x, %0);
  %2 = nn.softmax(%1, axis=-1);
  %2
})";

TEST_F(BuildCacheTest, DamagedCacheEntriesAreCompiledAgain) {
  BuildReport first, second;
  BuildAndLoad(kAddSoftmax, &first);
  ASSERT_GE(first.compile.compiled, 4);
  std::vector<fs::path> objects;
  for (const auto& entry : fs::directory_iterator(dir_ / "cache")) {
    if (entry.path().extension() == ".o") objects.push_back(entry.path());
  }
  std::sort(objects.begin(), objects.end());
  ASSERT_GE(objects.size(), 4u);
  {  // one byte changed, one cut short, one emptied, one without its checksum
    std::fstream changed(objects[0], std::ios::in | std::ios::out | std::ios::binary);
    changed.seekp(100);
    changed.put('\x5a');
  }
  fs::resize_file(objects[1], fs::file_size(objects[1]) / 2);
  fs::resize_file(objects[2], 0);
  fs::remove(objects[3].string() + ".sum");
  auto exec = BuildAndLoad(kAddSoftmax, &second);
  EXPECT_EQ(second.compile.compiled, 4);
  EXPECT_EQ(second.compile.cached, first.compile.compiled + first.compile.cached - 4);
  exec->SetInput(0, *test::FloatArray({2, 3}, {0, 1, 2, -3, 4, -5}).get());
  exec->Run();
  // softmax of [1, -1, 2.5] and [-2, 2, -4.5] (NumPy, in double)
  std::vector<float> out = test::ToVector(exec->GetOutput(0));
  std::vector<double> expected = {0.1780302, 0.0240938, 0.7978760, 0.0179597, 0.9805661, 0.0014742};
  ASSERT_EQ(out.size(), expected.size());
  for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], expected[i], 1e-5) << i;

  // Objects damaged between build and export are not linked, and no library is written.
  ExecutorFactory factory = Build(ir::ParseFunction(kAddSoftmax), options_);
  for (const auto& entry : fs::directory_iterator(dir_ / "cache")) {
    if (entry.path().extension() == ".o") fs::resize_file(entry.path(), 10);
  }
  std::string path = (dir_ / "damaged.so").string();
  try {
    factory.ExportLibrary(path);
    FAIL() << "linked damaged objects";
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("was damaged or removed after it was compiled; build the model again"));
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(BuildCacheTest, DamagedPrecompiledPreludeIsBuiltAgain) {
  BuildAndLoad(kAddRelu);
  std::vector<fs::path> preludes;
  for (const auto& entry : fs::directory_iterator(dir_ / "cache")) {
    if (entry.path().extension() == ".gch") preludes.push_back(entry.path());
  }
  ASSERT_EQ(preludes.size(), 1u);
  uintmax_t size = fs::file_size(preludes[0]);
  fs::resize_file(preludes[0], size / 2);
  for (const auto& entry : fs::directory_iterator(dir_ / "cache")) {  // the operators compile again
    if (entry.path().extension() == ".o") fs::remove(entry.path());
  }
  auto exec = BuildAndLoad(kAddRelu);
  // Whole again, and its checksum file says so ("<size> <hash>"; GCC's output differs by a few bytes).
  EXPECT_GT(fs::file_size(preludes[0]), size / 2 + size / 4);
  std::ifstream sum(preludes[0].string() + ".sum");
  uintmax_t summed = 0;
  sum >> summed;
  EXPECT_EQ(summed, fs::file_size(preludes[0]));
  exec->SetInput(0, *test::FloatArray({2, 3}, {0, 1, 2, -3, 4, -5}).get());
  exec->Run();
  EXPECT_EQ(test::ToVector(exec->GetOutput(0)), (std::vector<float>{1, 0, 2.5, 0, 2, 0}));
}

TEST_F(BuildTest, ConvPoolDenseSoftmax) {
  // All-ones 1x1x4x4 input, 2x1x3x3 weights of ones and twos, padding 1: each output counts the
  // in-bounds neighbours (4 at corners, 6 at edges, 9 inside), times 1 or 2.
  auto exec = BuildAndLoad(R"(fn (%x: Tensor[(1, 1, 4, 4), float32]) {
    %w = const(Tensor[(2, 1, 3, 3), float32], [1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2]);
    %c = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
    %p = nn.max_pool2d(%c, pool_size=[2, 2], strides=[2, 2]);
    %r = reshape(%p, newshape=[1, 8]);
    %d = const(Tensor[(2, 8), float32], [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    %y = nn.dense(%r, %d);
    %s = nn.softmax(%y);
    (%c, %p, %y, %s)
  })");
  exec->SetInput(0, *test::FloatArray({1, 1, 4, 4}, std::vector<float>(16, 1.0f)).get());
  exec->Run();
  std::vector<float> counts = {4, 6, 6, 4, 6, 9, 9, 6, 6, 9, 9, 6, 4, 6, 6, 4};
  std::vector<float> conv = counts;
  for (float c : counts) conv.push_back(2 * c);
  EXPECT_EQ(test::ToVector(exec->GetOutput(0)), conv);
  EXPECT_EQ(test::ToVector(exec->GetOutput(1)), (std::vector<float>{9, 9, 9, 9, 18, 18, 18, 18}));
  EXPECT_EQ(test::ToVector(exec->GetOutput(2)), (std::vector<float>{9, 18}));
  std::vector<float> softmax = test::ToVector(exec->GetOutput(3));
  EXPECT_NEAR(softmax[0], 1.0 / (1.0 + std::exp(9.0)), 1e-7);
  EXPECT_NEAR(softmax[1], 1.0 / (1.0 + std::exp(-9.0)), 1e-6);
}

// A function that only reshapes a value of the graph is a __nop node (TVM's): its output has the
// argument's storage id and no code runs for it. Not where the argument is a graph input or
// output, or the result is a graph output (set_input and set_output_zero_copy may replace their
// memory, and TVM's executor then repoints only that entry).
TEST_F(BuildTest, ReshapeFunctionsAreNopsSharingTheirArgumentsMemory) {
  const char* text = R"(fn (%x: Tensor[(2, 4), float32]) {
    %w = const(Tensor[(6, 4), float32], [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0, 0]);
    %0 = nn.dense(%x, %w);
    %1 = reshape(%0, newshape=[3, 4]);
    %2 = nn.softmax(%1);
    %3 = reshape(%x, newshape=[8]);
    %4 = reshape(%0, newshape=[12]);
    %5 = reshape(%2, newshape=[12]);
    %6 = nn.relu(%5);
    (%2, %3, %4, %6)
  })";
  ExecutorFactory factory = Build(ir::ParseFunction(text), options_);
  runtime::Graph g = runtime::ParseGraphJson(factory.graph_json());
  int nops = 0;
  for (uint32_t n = 0; n < g.nodes.size(); ++n) {
    if (g.nodes[n].func_name != "__nop") continue;
    ++nops;
    EXPECT_EQ(g.storage_ids[g.EntryId(n, 0)], g.storage_ids[g.EntryId(g.nodes[n].inputs.at(0))]);
  }
  EXPECT_EQ(nops, 1);  // %1; not %3 (of an input), %4 (returned) nor %5 (of a returned value)
  auto exec = BuildAndLoad(text);
  std::vector<float> x = {0.5f, -1, 2, 0.25f, 3, 1, -2, 0};
  exec->SetInput(0, *test::FloatArray({2, 4}, x).get());
  exec->Run();
  // The dense layer's rows: x0, x1, x2, x3, 2 x0, 2 x1 per row of x; softmax over rows of 4.
  std::vector<float> dense;
  for (int r = 0; r < 2; ++r) {
    const float* row = x.data() + r * 4;
    for (float v : {row[0], row[1], row[2], row[3], 2 * row[0], 2 * row[1]}) dense.push_back(v);
  }
  std::vector<float> softmax = test::ToVector(exec->GetOutput(0));
  ASSERT_EQ(softmax.size(), 12u);
  for (int r = 0; r < 3; ++r) {
    double sum = 0;
    for (int j = 0; j < 4; ++j) sum += std::exp(double(dense[r * 4 + j]));
    for (int j = 0; j < 4; ++j) EXPECT_NEAR(softmax[r * 4 + j], std::exp(double(dense[r * 4 + j])) / sum, 1e-6) << r;
  }
  EXPECT_EQ(test::ToVector(exec->GetOutput(1)), x);
  EXPECT_EQ(test::ToVector(exec->GetOutput(2)), dense);
  EXPECT_EQ(test::ToVector(exec->GetOutput(3)), softmax);  // relu of probabilities
}

// Graph codegen alone, on a main function already fused: a reshape of a field of a tuple that main
// returns whole is no __nop; of one it does not return, it is.
TEST(GraphCodegen, ReshapeOfAReturnedTuplesFieldIsNoNop) {
  auto nops = [](const std::string& returned) {
    ir::Expr main = ir::ParseFunction(R"(fn (%x: Tensor[(2, 4), float32]) {
      %s = fn [Primitive=1] (%a: Tensor[(2, 4), float32]) {
        %0 = split(%a, sections=[2, 2], axis=1);
        %0
      };
      %1 = %s(%x);
      %2 = %1.0;
      %r = fn [Primitive=1] (%b: Tensor[(2, 2), float32]) {
        %0 = reshape(%b, newshape=[4]);
        %0
      };
      %3 = %r(%2);
      %q = fn [Primitive=1] (%c: Tensor[(4), float32]) {
        %0 = nn.relu(%c);
        %0
      };
      %4 = %q(%3);
      )" + returned + R"(
    })");
    int count = 0;
    for (const runtime::GraphNode& node : GenerateGraph(main).graph.nodes) count += node.func_name == "__nop";
    return count;
  };
  EXPECT_EQ(nops("(%1, %4)"), 0);
  EXPECT_EQ(nops("%4"), 1);
}

TEST_F(BuildTest, ThreeFileForm) {
  ExecutorFactory factory = Build(ir::ParseFunction(kAddRelu), options_);
  std::string out = (dir_ / "tvmc").string();
  factory.ExportThreeFiles(out);
  runtime::Module ops = runtime::LoadModuleFromFile(out + "/mod.so");
  runtime::Module gmod = runtime::GetGlobalFunction("tvm.graph_executor.create")(
      runtime::ReadFile(out + "/mod.json"), ops, int{kDLCPU}, 0).AsModule();
  std::string params = runtime::ReadFile(out + "/mod.params");
  gmod.GetFunction("load_params")(TVMByteArray{params.data(), params.size()});
  gmod.GetFunction("set_input")("x", test::FloatArray({2, 3}, {0, 1, 2, -3, 4, -5}));
  gmod.GetFunction("run")();
  EXPECT_EQ(test::ToVector(gmod.GetFunction("get_output")(0).AsNDArray()), (std::vector<float>{1, 0, 2.5, 0, 2, 0}));
}

TEST_F(BuildTest, UnsupportedDtypeIsAClearError) {
  try {
    Build(ir::ParseFunction("fn (%x: Tensor[(2), float32x4]) { %0 = nn.relu(%x); %0 }"), options_);
    FAIL() << "float32x4 was accepted";
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("dtype float32x4 is not supported by the host code generator"));
  }
}

TEST_F(BuildTest, AnIndexOutOfRangeIsAnErrorWhenRun) {
  // Indices are data: checked as the op reads them, and the run fails naming the op.
  const std::pair<const char*, const char*> functions[] = {
      {"gather", R"(fn (%x: Tensor[(2, 3), float32], %i: Tensor[(2, 1), int64]) { gather(%x, %i, axis=1) })"},
      {"gather_nd", R"(fn (%x: Tensor[(2, 3), float32], %i: Tensor[(2, 1), int64]) { gather_nd(%x, %i) })"},
      {"scatter_nd", R"(fn (%x: Tensor[(2, 3), float32], %i: Tensor[(1, 2), int64], %u: Tensor[(2, 3), float32]) {
         scatter_nd(%x, %i, %u, mode="add") })"},
  };
  for (const auto& [op, text] : functions) {
    auto exec = BuildAndLoad(text);
    exec->SetInput(0, *test::FloatArray({2, 3}, {1, 2, 3, 4, 5, 6}).get());
    bool scatter = exec->NumInputs() == 3;
    runtime::NDArray indices = runtime::NDArray::Empty({scatter ? 1 : 2, scatter ? 2 : 1}, DLDataType{kDLInt, 64, 1});
    auto set_indices = [&](int64_t second) {
      int64_t values[] = {1, second};
      std::memcpy(indices.data(), values, sizeof(values));
      exec->SetInput(1, *indices.get());
    };
    if (scatter) exec->SetInput(2, *test::FloatArray({2, 3}, {1, 1, 1, 1, 1, 1}).get());
    set_indices(-1);  // in range once counted from the end
    exec->Run();
    set_indices(3);
    try {
      exec->Run();
      ADD_FAILURE() << op << " read index 3 of an axis of length 2 or 3";
    } catch (const runtime::Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(std::string(op) + ": an index is out of range"));
    }
  }
}

// Sets a bool scalar input.
void SetCondition(runtime::GraphExecutor& exec, int index, bool value) {
  runtime::NDArray c = runtime::NDArray::Empty({}, DLDataType{kDLUInt, 1, 1});
  *static_cast<uint8_t*>(c.data()) = value ? 1 : 0;
  exec.SetInput(index, *c.get());
}

// The run conditions of the node calling the function of `ops`, as (condition input name, taken).
std::vector<std::pair<std::string, bool>> ConditionsOf(const runtime::GraphExecutor& exec, const std::string& ops) {
  const runtime::Graph& g = exec.graph();
  for (const runtime::GraphNode& node : g.nodes) {
    auto it = node.attrs.find("kiln_ops");
    if (it == node.attrs.end() || it->second != ops) continue;
    std::vector<std::pair<std::string, bool>> conditions;
    for (const runtime::RunCondition& c : node.run_if) {
      conditions.emplace_back(g.nodes[c.condition.node_id].name, c.taken);
    }
    return conditions;
  }
  ADD_FAILURE() << "no node calls " << ops;
  return {};
}

// Only the taken side of an if_then_else runs: the then side gathers from %x (3 columns), the
// else side from %y (5 columns), at the same indices, so index 4 is in range for the else side
// only; a run that computed both sides would fail.
TEST_F(BuildTest, OnlyTheTakenSideOfAnIfThenElseRuns) {
  auto exec = BuildAndLoad(R"(fn (%c: Tensor[(), bool], %x: Tensor[(2, 3), float32], %y: Tensor[(2, 5), float32],
                                  %i: Tensor[(2, 1), int64]) {
    %0 = gather(%x, %i, axis=1);
    %1 = gather(%y, %i, axis=1);
    %2 = if_then_else(%c, %0, %1);
    %2
  })");
  exec->SetInput(1, *test::FloatArray({2, 3}, {1, 2, 3, 4, 5, 6}).get());
  exec->SetInput(2, *test::FloatArray({2, 5}, {10, 20, 30, 40, 50, 60, 70, 80, 90, 100}).get());
  runtime::NDArray indices = runtime::NDArray::Empty({2, 1}, DLDataType{kDLInt, 64, 1});
  auto run = [&](bool c, int64_t index) {
    SetCondition(*exec, 0, c);
    int64_t values[] = {index, index};
    std::memcpy(indices.data(), values, sizeof(values));
    exec->SetInput(3, *indices.get());
    exec->Run();
    return test::ToVector(exec->GetOutput(0));
  };
  EXPECT_EQ(run(false, 4), (std::vector<float>{50, 100}));
  EXPECT_EQ(run(true, 2), (std::vector<float>{3, 6}));
  EXPECT_EQ(run(false, 1), (std::vector<float>{20, 70}));
  try {
    run(true, 4);
    ADD_FAILURE() << "the then side read index 4 of 3 columns";
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("gather: an index is out of range"));
  }
}

// A node gets the conditions on all its paths to the outputs, outermost first: sigmoid(%x) is
// read on both sides of %c and runs always; the inner if_then_else runs when %c does not hold.
TEST_F(BuildTest, NestedIfThenElseNodesRunUnderTheirPathsConditions) {
  auto exec = BuildAndLoad(R"(fn (%c: Tensor[(), bool], %d: Tensor[(), bool], %x: Tensor[(2), float32]) {
    %0 = sigmoid(%x);
    %1 = exp(%0);
    %2 = negative(%0);
    %3 = tanh(%0);
    %4 = if_then_else(%d, %2, %3);
    %5 = if_then_else(%c, %1, %4);
    %5
  })");
  using Conditions = std::vector<std::pair<std::string, bool>>;
  EXPECT_EQ(ConditionsOf(*exec, "sigmoid"), Conditions{});
  EXPECT_EQ(ConditionsOf(*exec, "exp"), (Conditions{{"c", true}}));
  EXPECT_EQ(ConditionsOf(*exec, "negative"), (Conditions{{"c", false}, {"d", true}}));
  EXPECT_EQ(ConditionsOf(*exec, "tanh"), (Conditions{{"c", false}, {"d", false}}));
  exec->SetInput(2, *test::FloatArray({2}, {0.5f, -1.0f}).get());
  for (bool c : {false, true}) {
    for (bool d : {false, true}) {
      SetCondition(*exec, 0, c);
      SetCondition(*exec, 1, d);
      exec->Run();
      std::vector<float> got = test::ToVector(exec->GetOutput(0));
      for (int k = 0; k < 2; ++k) {
        float s = 1.0f / (1.0f + std::exp(-(k == 0 ? 0.5f : -1.0f)));
        float want = c ? std::exp(s) : d ? -s : std::tanh(s);
        EXPECT_NEAR(got[k], want, 1e-6f) << c << d << k;
      }
    }
  }
}

// nonzero's result is padded to its largest shape with a count (the function's output_trim pairs
// them): the executor presents only the model's output, trimmed to what the last run counted;
// TVM's executor, which skips the attribute, sees the padded output and the count.
TEST_F(BuildTest, DataDependentOutputIsTrimmedToWhatTheRunCounted) {
  const char* text = R"(fn [output_trim=[0, 1, 1]] (%x: Tensor[(2, 3), float32]) {
    %0 = nonzero(%x);
    %1 = %0.0;
    %2 = %0.1;
    %3 = (%1, %2);
    %3
  })";
  auto exec = BuildAndLoad(text);
  EXPECT_EQ(exec->NumOutputs(), 1);
  EXPECT_EQ(exec->graph().heads.size(), 2u);
  EXPECT_EQ(exec->GetOutputInfo()[0].shape, (std::vector<int64_t>{2, 6}));  // the largest
  EXPECT_EQ(exec->GetOutput(0).shape(), (std::vector<int64_t>{2, 0}));      // before any run

  auto coordinates = [&](const std::vector<float>& x) {
    exec->SetInput(0, *test::FloatArray({2, 3}, x).get());
    exec->Run();
    runtime::NDArray out = exec->GetOutput(0);
    std::vector<int64_t> values(out.NumBytes() / sizeof(int64_t));
    out.CopyToBytes(values.data(), out.NumBytes());
    return std::make_pair(out.shape(), values);
  };
  // numpy.nonzero: rows (0, 1, 1) and columns (1, 0, 2); NaN is not zero, -0 is.
  auto [shape, values] = coordinates({0, 2, -0.0f, 1, 0, NAN});
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values, (std::vector<int64_t>{0, 1, 1, 1, 0, 2}));
  std::tie(shape, values) = coordinates({0, 0, 0, 0, 0, 0});
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 0}));
  std::tie(shape, values) = coordinates({1, 1, 1, 1, 1, 1});
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(values, (std::vector<int64_t>{0, 0, 0, 1, 1, 1, 0, 1, 2, 0, 1, 2}));

  // Copying out takes an array of the trimmed shape; binding a buffer beforehand is refused.
  coordinates({0, 5, 0, 0, 0, 0});
  runtime::NDArray target = runtime::NDArray::Empty({2, 1}, DLDataType{kDLInt, 64, 1});
  exec->CopyOutputTo(0, *target.get());
  EXPECT_EQ(static_cast<const int64_t*>(target.data())[1], 1);
  runtime::NDArray padded = runtime::NDArray::Empty({2, 6}, DLDataType{kDLInt, 64, 1});
  EXPECT_THROW(exec->CopyOutputTo(0, *padded.get()), runtime::Error);
  try {
    exec->SetOutputZeroCopy(0, *padded.get());
    ADD_FAILURE() << "a buffer was bound to an output whose shape depends on the data";
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("the output's shape is decided as the graph runs"));
  }
  EXPECT_THROW(exec->GetOutput(1), runtime::Error);  // the count is not one of the outputs
}

// An output whose every extent the run decides (dyn.reshape to a shape given as an input): the
// executor presents it at the shape its shape output holds, -1 per extent in its info; a shape the
// library gives that its storage cannot hold is an error, never a read past the storage.
TEST_F(BuildTest, OutputOfARunTimeShapeTakesTheShapeTheRunGave) {
  auto exec = BuildAndLoad(R"(fn [output_shapes=[0, 1]] (%x: Tensor[(2, 3), float32], %s: Tensor[(3), int64]) {
    %0 = dyn.reshape(%x, %s);
    %1 = %0.0;
    %2 = %0.1;
    %3 = (%1, %2);
    %3
  })");
  EXPECT_EQ(exec->NumOutputs(), 1);
  EXPECT_EQ(exec->GetOutputInfo()[0].shape, (std::vector<int64_t>{-1, -1, -1}));
  EXPECT_EQ(exec->GetOutput(0).shape(), (std::vector<int64_t>{0, 0, 0}));  // before any run
  exec->SetInput(0, *test::FloatArray({2, 3}, {1, 2, 3, 4, 5, 6}).get());
  runtime::NDArray shape = runtime::NDArray::Empty({3}, DLDataType{kDLInt, 64, 1});
  int64_t* extents = static_cast<int64_t*>(shape.data());
  extents[0] = 3, extents[1] = -1, extents[2] = 1;
  exec->SetInput(1, *shape.get());
  exec->Run();
  EXPECT_EQ(exec->GetOutput(0).shape(), (std::vector<int64_t>{3, 2, 1}));
  EXPECT_EQ(static_cast<const float*>(exec->GetOutput(0).data())[5], 6.0f);

  auto lying = BuildAndLoad(R"(fn [output_shapes=[0, 1]] (%x: Tensor[(6), float32]) {
    %0 = const(Tensor[(2), int64], [4, 5]);
    %1 = (%x, %0);
    %1
  })");
  lying->SetInput(0, *test::FloatArray({6}, {1, 2, 3, 4, 5, 6}).get());
  lying->Run();
  try {
    lying->GetOutput(0);
    ADD_FAILURE() << "a shape of 20 elements was presented over storage of 6";
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("output 0: its operator gave it the shape [4, 5], larger than its storage of 6"));
  }
}

}  // namespace
}  // namespace kiln::backend
