// Bring your own codegen end to end with the test JSON backend (tests/test_json_module.h):
// partitioning for it (PartitionForCodegen) claims its ops, the JSON codegen writes their subgraph, the constants go to the
// const-loader module, the exported library holds TVM's module tree and runs on its own; two
// executors of one library run concurrently; a model the backend claims nothing of stays on the
// host.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <cmath>
#include <nlohmann/json.hpp>
#include <thread>

#include "backend/build.h"
#include "backend/c_source_module.h"
#include "backend/json_codegen.h"
#include "backend/partition.h"
#include "ir/text.h"
#include "runtime/graph_executor_module.h"
#include "kiln/tvm_objects.h"
#include "tests/float_arrays.h"
#include "tests/shared_object_cache.h"
#include "tests/test_json_module.h"

namespace kiln::backend {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

const ir::OpRef kMultiply("multiply");
const ir::OpRef kAdd("add");

bool SupportsTest(const ir::CallNode& call) {
  return call.op != nullptr && (call.op->name == "add" || call.op->name == "multiply" || call.op->name == "nn.relu") &&
         call.type().tensor().dtype == runtime::kFloat32;
}

ExternalModule GenerateTest(const std::string& symbol, const ir::Expr& function) {
  JsonSubgraph subgraph = SerializeToJson(function, symbol);
  std::vector<std::string> names;
  for (const auto& [name, array] : subgraph.constants) names.push_back(name);
  auto module = std::make_shared<test::TestJsonModule>(symbol, runtime::WriteJsonGraph(subgraph.graph), names);
  return {symbol, runtime::Module(module), subgraph.constants};
}

std::vector<transform::CompositePattern> TestPatterns() {
  transform::Pattern a = transform::Wildcard(), b = transform::Wildcard(), c = transform::Wildcard();
  return {{"test.multiply_add", transform::IsOp(kAdd, {transform::IsOp(kMultiply, {a, b}), c}), nullptr}};
}

const std::vector<ExternalCodegen> kCodegens = {{"test", SupportsTest, GenerateTest, TestPatterns}};

ir::Expr PartitionForTest(const ir::Expr& main, int min_region_ops = 1) {
  transform::PartitionOptions options;
  options.min_region_ops = min_region_ops;
  return PartitionForCodegen(main, "test", {}, options, kCodegens);
}

// relu(x * c1 + c2) on the backend, exp on the host, then add on the backend again.
const char* kModel = R"(fn (%x: Tensor[(2, 3), float32]) {
  %c1 = const(Tensor[(2, 3), float32], [1, 2, 3, 4, 5, 6]);
  %c2 = const(Tensor[(2, 3), float32], [-1, -1, -1, 1, 1, 1]);
  %0 = multiply(%x, %c1);
  %1 = add(%0, %c2);
  %2 = nn.relu(%1);
  %3 = exp(%x);
  %4 = add(%2, %3);
  %4
})";

std::vector<float> Reference(const std::vector<float>& x) {
  const float c1[] = {1, 2, 3, 4, 5, 6}, c2[] = {-1, -1, -1, 1, 1, 1};
  std::vector<float> out;
  for (size_t i = 0; i < x.size(); ++i) out.push_back(std::max(x[i] * c1[i] + c2[i], 0.0f) + std::exp(x[i]));
  return out;
}

class ByocTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { test::TestJsonModule::RegisterLoader(); }
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("kiln_byoc_test_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    options_.compiler.cache_dir = test::SharedObjectCache();
    options_.external_codegens = &kCodegens;
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  BuildOptions options_;
};

// The partitioned function as the JSON subgraph format, field by field as TVM's JSONSerializer
// writes it: inputs by parameter name, constants <prefix>_const_<i>, the composite as one kernel.
TEST_F(ByocTest, JsonCodegenWritesTvmsSubgraphLayout) {
  ir::Expr main = PartitionForTest(ir::ParseFunction(kModel));
  ir::Expr external;
  for (const ir::Expr& e : ir::PostOrder(main->As<ir::FunctionNode>()->body)) {
    const auto* call = e->As<ir::CallNode>();
    if (call != nullptr && call->op == nullptr && ir::IsExternal(call->function)) external = call->function;
  }
  ASSERT_NE(external, nullptr);
  JsonSubgraph subgraph = SerializeToJson(external, "tvmgen_default_test_main_0");
  auto written = nlohmann::json::parse(runtime::WriteJsonGraph(subgraph.graph));
  auto expected = nlohmann::json::parse(R"({
    "symbol": "tvmgen_default_test_main_0",
    "nodes": [
      {"op": "input", "name": "test_0_i0", "attrs": {"dtype": [["float32"]], "shape": [[[2, 3]]]}},
      {"op": "input", "name": "test_0_i1", "attrs": {"dtype": [["float32"]], "shape": [[[2, 3]]]}},
      {"op": "const", "name": "tvmgen_default_test_main_0_const_0", "attrs": {"dtype": [["float32"]], "shape": [[[2, 3]]]}},
      {"op": "const", "name": "tvmgen_default_test_main_0_const_1", "attrs": {"dtype": [["float32"]], "shape": [[[2, 3]]]}},
      {"op": "kernel", "name": "test.multiply_add", "inputs": [[0, 0, 0], [2, 0, 0], [3, 0, 0]],
       "attrs": {"PartitionedFromPattern": [["multiply_add_"]], "num_inputs": "3", "num_outputs": "1",
                 "dtype": [["float32"]], "shape": [[[2, 3]]]}},
      {"op": "kernel", "name": "nn.relu", "inputs": [[4, 0, 0]],
       "attrs": {"num_inputs": "1", "num_outputs": "1", "dtype": [["float32"]], "shape": [[[2, 3]]]}},
      {"op": "kernel", "name": "add", "inputs": [[5, 0, 0], [1, 0, 0]],
       "attrs": {"num_inputs": "2", "num_outputs": "1", "dtype": [["float32"]], "shape": [[[2, 3]]]}}
    ],
    "arg_nodes": [0, 1, 2, 3],
    "heads": [[6, 0, 0]],
    "node_row_ptr": [0, 1, 2, 3, 4, 5, 6, 7]
  })");
  EXPECT_EQ(written, expected) << written.dump(2);
  ASSERT_EQ(subgraph.constants.size(), 2u);
  EXPECT_EQ(test::ToVector(subgraph.constants[1].second), (std::vector<float>{-1, -1, -1, 1, 1, 1}));
}

TEST_F(ByocTest, TheExportedLibraryHoldsTvmsTreeAndRunsTheSubgraphInItsModule) {
  ExecutorFactory factory = Build(PartitionForTest(ir::ParseFunction(kModel)), options_);
  EXPECT_TRUE(factory.params().empty());  // the constants are the const loader's, not parameters
  std::string path = (dir_ / "model.so").string();
  factory.ExportLibrary(path);
  int inits = test::TestJsonModule::InitCalls();
  runtime::Module root = runtime::LoadModuleFromFile(path);
  // factory -> const_loader -> {compiled host code, kiln_test_json}
  ASSERT_EQ(root->imports().size(), 1u);
  const runtime::Module& loader = root->imports()[0];
  EXPECT_STREQ(loader.type_key(), "const_loader");
  ASSERT_EQ(loader->imports().size(), 2u);
  EXPECT_STREQ(loader->imports()[1].type_key(), test::TestJsonModule::kTypeKey);
  EXPECT_EQ(loader.GetFunction("get_const_var_ndarray")().AsInt(), 2);

  auto exec = runtime::GetGraphExecutor(root.GetFunction("default")(runtime::kCPU).AsModule());
  EXPECT_EQ(test::TestJsonModule::InitCalls(), inits + 1);  // on the executor's lookup of the symbol
  EXPECT_EQ(loader.GetFunction("get_const_var_ndarray")().AsInt(), 0);  // handed over, then dropped
  std::vector<float> x = {-1, 0.5f, 2, -0.25f, 0, 1};
  exec->SetInput(0, *test::FloatArray({2, 3}, x).get());
  exec->Run();
  std::vector<float> got = test::ToVector(exec->GetOutput(0)), want = Reference(x);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * std::abs(want[i])) << i;

  auto second = runtime::GetGraphExecutor(root.GetFunction("default")(runtime::kCPU).AsModule());
  EXPECT_EQ(test::TestJsonModule::InitCalls(), inits + 1);  // once per loaded library
}

// Two executors of one loaded library, created and run in two threads at once (ThreadSanitizer
// runs this too): the module's one-time initialization and its calls share no mutable data.
TEST_F(ByocTest, TwoExecutorsOfOneLibraryRunConcurrently) {
  std::string path = (dir_ / "model.so").string();
  Build(PartitionForTest(ir::ParseFunction(kModel)), options_).ExportLibrary(path);
  runtime::Module root = runtime::LoadModuleFromFile(path);
  int inits = test::TestJsonModule::InitCalls();
  std::vector<std::string> failures(2);
  auto work = [&](int t) {
    auto exec = runtime::GetGraphExecutor(root.GetFunction("default")(runtime::kCPU).AsModule());
    for (int round = 0; round < 50; ++round) {
      std::vector<float> x;
      for (int i = 0; i < 6; ++i) x.push_back(0.1f * static_cast<float>(t * 100 + round + i) - 2.0f);
      exec->SetInput(0, *test::FloatArray({2, 3}, x).get());
      exec->Run();
      std::vector<float> got = test::ToVector(exec->GetOutput(0)), want = Reference(x);
      for (size_t i = 0; i < x.size(); ++i) {
        if (std::abs(got[i] - want[i]) > 1e-5f * std::max(1.0f, std::abs(want[i]))) {
          failures[t] = "thread " + std::to_string(t) + " round " + std::to_string(round) + " element " + std::to_string(i);
        }
      }
    }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  EXPECT_EQ(failures[0], "");
  EXPECT_EQ(failures[1], "");
  EXPECT_EQ(test::TestJsonModule::InitCalls(), inits + 1);
}

TEST_F(ByocTest, AModelTheBackendClaimsNothingOfStaysOnTheHost) {
  const char* text = "fn (%x: Tensor[(2, 3), float32]) { %0 = exp(%x); %1 = tanh(%0); %1 }";
  ir::Expr partitioned = PartitionForTest(ir::ParseFunction(text));
  EXPECT_TRUE(ir::StructurallyEqual(partitioned, ir::ParseFunction(text)));
  ExecutorFactory factory = Build(partitioned, options_);
  EXPECT_TRUE(factory.external_modules().empty());
  EXPECT_STRNE(factory.code().type_key(), "const_loader");
  // A region smaller than the minimum stays too: the whole model runs on the host.
  ExecutorFactory small = Build(PartitionForTest(ir::ParseFunction(kModel), /*min_region_ops=*/5), options_);
  EXPECT_TRUE(small.external_modules().empty());
  EXPECT_EQ(small.params().size(), 2u);  // the constants are parameters again
}

// ccompiler: the C source module's code is compiled into the library; its __init_ takes the
// constants from the const loader. A small MLP with a broadcast scale: dense, bias, relu, multiply.
const char* kMlp = R"(fn (%x: Tensor[(2, 3), float32]) {
  %w = const(Tensor[(2, 3), float32], [1, 0, -1, 0.5, 0.5, 0.5]);
  %b = const(Tensor[(2), float32], [0.25, -1]);
  %s = const(Tensor[(1, 2), float32], [2, 3]);
  %0 = nn.dense(%x, %w);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  %3 = multiply(%2, %s);
  %4 = tanh(%3);
  %4
})";

std::vector<float> MlpReference(const std::vector<float>& x) {
  const float w[2][3] = {{1, 0, -1}, {0.5f, 0.5f, 0.5f}}, b[2] = {0.25f, -1}, s[2] = {2, 3};
  std::vector<float> out;
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 2; ++c) {
      float sum = b[c];
      for (int k = 0; k < 3; ++k) sum += x[r * 3 + k] * w[c][k];
      out.push_back(std::tanh(std::max(sum, 0.0f) * s[c]));
    }
  }
  return out;
}

TEST_F(ByocTest, CCompilerCodeIsCompiledIntoTheLibraryAndTakesItsConstantsOnce) {
  options_.external_codegens = nullptr;  // this build's table
  ir::Expr main = PartitionForCodegen(ir::ParseFunction(kMlp), "ccompiler");
  ExecutorFactory factory = Build(main, options_);
  ASSERT_EQ(factory.external_modules().size(), 1u);
  EXPECT_STREQ(factory.external_modules()[0].type_key(), "c");
  EXPECT_TRUE(factory.params().empty());
  EXPECT_THAT(factory.GetSource(), HasSubstr("int __init_tvmgen_default_ccompiler_main_0("));
  std::string path = (dir_ / "mlp.so").string();
  factory.ExportLibrary(path);
  runtime::Module root = runtime::LoadModuleFromFile(path);
  const runtime::Module& loader = root->imports()[0];
  EXPECT_STREQ(loader.type_key(), "const_loader");
  EXPECT_EQ(loader->imports().size(), 1u);  // the library itself: the C code is in it
  std::vector<std::string> failures(2);
  auto work = [&](int t) {
    auto exec = runtime::GetGraphExecutor(root.GetFunction("default")(runtime::kCPU).AsModule());
    for (int round = 0; round < 20; ++round) {
      std::vector<float> x;
      for (int i = 0; i < 6; ++i) x.push_back(0.3f * static_cast<float>((t * 7 + round + i) % 11) - 1.5f);
      exec->SetInput(0, *test::FloatArray({2, 3}, x).get());
      exec->Run();
      std::vector<float> got = test::ToVector(exec->GetOutput(0)), want = MlpReference(x);
      for (size_t i = 0; i < want.size(); ++i) {
        if (std::abs(got[i] - want[i]) > 1e-5f) failures[t] = "thread " + std::to_string(t) + " element " + std::to_string(i);
      }
    }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  EXPECT_EQ(failures[0], "");
  EXPECT_EQ(failures[1], "");
}

TEST_F(ByocTest, CCompilerInitTakesTvmsArrayOfConstantsAndReturnsZero) {
  options_.external_codegens = nullptr;
  ExecutorFactory factory = Build(PartitionForCodegen(ir::ParseFunction(kMlp), "ccompiler"), options_);
  std::string path = (dir_ / "mlp_init.so").string();
  factory.ExportLibrary(path);
  runtime::Module root = runtime::LoadModuleFromFile(path);
  const runtime::Module& library = root->imports()[0]->imports()[0];  // under the const loader
  const std::string symbol = "tvmgen_default_ccompiler_main_0";
  runtime::PackedFunc init = library.GetFunction("__init_" + symbol);
  ASSERT_TRUE(init.defined());
  // The Array<NDArray> as TVM's const loader passes it (kiln/tvm_objects.h: TVM v0.19's layout),
  // built by hand: w, b and s of kMlp, w negated.
  std::vector<float> w = {-1, 0, 1, -0.5f, -0.5f, -0.5f}, b = {0.25f, -1}, s = {2, 3};
  int64_t w_shape[] = {2, 3}, b_shape[] = {2}, s_shape[] = {1, 2};
  auto tensor = [](std::vector<float>& data, int64_t* shape, int ndim) {
    return KilnTvmNDArray{{kKilnTvmNDArrayTypeIndex, 1, nullptr},
                          {data.data(), {kDLCPU, 0}, ndim, {kDLFloat, 32, 1}, shape, nullptr, 0}, nullptr, nullptr};
  };
  KilnTvmNDArray containers[] = {tensor(w, w_shape, 2), tensor(b, b_shape, 1), tensor(s, s_shape, 2)};
  struct {
    KilnTvmArray node;
    KilnTvmObject* elements[3];
  } array{{{kKilnTvmArrayTypeIndex, 1, nullptr}, 3, 3},
          {&containers[0].object, &containers[1].object, &containers[2].object}};
  TVMValue value;
  value.v_handle = &array;
  int code = kTVMObjectHandle;
  runtime::RetValue result;
  init.CallPacked(runtime::Args(&value, &code, 1), &result);
  EXPECT_EQ(result.AsInt(), 0);  // what TVM's const loader reads back (`int ret = init(array)`)
  std::vector<float> x = {1, -2, 0.5f, -1, -1, 2};
  runtime::NDArray out = runtime::NDArray::Empty({2, 2}, runtime::kFloat32);
  library.GetFunction(symbol)(test::FloatArray({2, 3}, x), out);
  std::vector<float> got = test::ToVector(out);
  for (int r = 0; r < 2; ++r) {  // tanh(relu(x w^T + b) * s), with the negated w
    for (int c = 0; c < 2; ++c) {
      float sum = b[c];
      for (int k = 0; k < 3; ++k) sum += x[r * 3 + k] * w[c * 3 + k];
      EXPECT_NEAR(got[r * 2 + c], std::tanh(std::max(sum, 0.0f) * s[c]), 1e-6) << r << "," << c;
    }
  }
  EXPECT_GT(got[2], 0.5f);  // a row the original w gives 0: the constants passed are the ones used
  // One tensor per constant, as kiln's const loader passed them before: refused, saying what it takes.
  runtime::NDArray wa = test::FloatArray({2, 3}, w), ba = test::FloatArray({2}, b), sa = test::FloatArray({1, 2}, s);
  try {
    init(wa, ba, sa);
    FAIL() << "took tensors";
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("expected one argument, TVM's Array<NDArray> of its 3 constants (type code 8), "
                                    "got 3 arguments, the first of type code 13"));
  }
  containers[1].dl_tensor.ndim = 2;  // b as [2, 3]
  containers[1].dl_tensor.shape = w_shape;
  try {
    init.CallPacked(runtime::Args(&value, &code, 1), &result);
    FAIL() << "took a constant of another shape";
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("constant 1 does not have the dtype, shape, layout or device"));
  }
}

TEST_F(ByocTest, CSourceModuleBinaryFormIsTvms) {
  CSourceModule module("int f() { return 0; }", "cc", {"f"}, {"f_const_0"});
  runtime::ByteWriter writer;
  module.SaveToBinary(writer);
  runtime::ByteWriter expected;  // TVM v0.19 CSourceModuleNode::SaveToBinary
  expected.WriteString("int f() { return 0; }");
  expected.WriteString("cc");
  expected.WriteStringVector({"f"});
  expected.WriteStringVector({"f_const_0"});
  EXPECT_EQ(writer.bytes(), expected.bytes());
  runtime::ByteReader reader(writer.bytes(), "test");
  runtime::Module loaded = CSourceModule::LoadFromBinary(reader);
  EXPECT_EQ(loaded.GetFunction("get_const_vars")().AsString(), "f_const_0");
  EXPECT_EQ(loaded.GetFunction("get_func_names")().AsString(), "f");
  EXPECT_EQ(static_cast<CSourceModule*>(loaded.get())->code(), "int f() { return 0; }");
}

}  // namespace
}  // namespace kiln::backend
