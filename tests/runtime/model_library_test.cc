// Exported model libraries: a `.so` whose import blob holds the GraphExecutorFactory runs on its
// own through the packed API (TVM's `lib["default"](dev)` flow); the three-file form (operators
// .so + graph JSON + params); the layout before import trees; and damaged libraries.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/error.h"
#include "runtime/graph_executor_module.h"
#include "runtime/module.h"
#include "runtime/params.h"
#include "runtime/thread_pool.h"
#include "test_util.h"

namespace kiln::runtime {
namespace {

using ::testing::HasSubstr;

std::string LoadError(const std::string& path) {
  try {
    LoadModuleFromFile(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Runs an executor module through its packed functions and checks the outputs.
void RunAndCheckModule(const Module& gmod, float seed) {
  auto x = test::TestInput(seed);
  NDArray input = test::FloatArray({1, 8}, x);
  gmod.GetFunction("set_input")("x", input);
  gmod.GetFunction("run")();
  std::vector<float> want0, want1;
  test::ReferenceTestModel(x, want0, want1);
  EXPECT_EQ(test::ToVector(gmod.GetFunction("get_output")(0).AsNDArray()), want0);
  NDArray out1 = NDArray::Empty({2, 4}, kFloat32);
  gmod.GetFunction("get_output")("flat:0", out1);  // copy-into form, by name
  EXPECT_EQ(test::ToVector(out1), want1);
}

class ModelLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override { SetNumThreads(2); }
  void TearDown() override { SetNumThreads(0); }
};

TEST_F(ModelLibraryTest, FactoryLibraryRunsOnItsOwn) {
  Module lib = LoadModuleFromFile(test::LibPath("kiln_test_model_good"));
  EXPECT_STREQ(lib.type_key(), "GraphExecutorFactory");
  Module gmod = lib.GetFunction("default")(kCPU).AsModule();
  EXPECT_STREQ(gmod.type_key(), "GraphExecutor");
  EXPECT_EQ(gmod.GetFunction("get_num_inputs")().AsInt(), 2);
  EXPECT_EQ(gmod.GetFunction("get_num_outputs")().AsInt(), 2);
  EXPECT_EQ(gmod.GetFunction("get_input_index")("p_w").AsInt(), 1);
  EXPECT_EQ(gmod.GetFunction("get_input_index")("nope").AsInt(), -1);
  RunAndCheckModule(gmod, 1.0f);
  RunAndCheckModule(gmod, -3.0f);
  // A second executor from the same factory is independent.
  Module second = lib.GetFunction("default")(kCPU).AsModule();
  RunAndCheckModule(second, 0.25f);
}

TEST_F(ModelLibraryTest, FactoryAcceptsDeviceAsTypeAndId) {
  Module lib = LoadModuleFromFile(test::LibPath("kiln_test_model_good"));
  RunAndCheckModule(lib.GetFunction("default")(int{kDLCPU}, 0).AsModule(), 2.0f);
  try {
    lib.GetFunction("default")(int{kDLCUDA}, 0);
    FAIL() << "a CUDA device was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("CPU only"));
  }
}

TEST_F(ModelLibraryTest, FactoryServesGraphAndParams) {
  Module lib = LoadModuleFromFile(test::LibPath("kiln_test_model_good"));
  std::string json = lib.GetFunction("get_graph_json")().AsString();
  EXPECT_EQ(json, ReadFile(test::DataPath("test_model.json")));
  RetValue params_blob = lib.GetFunction("get_graph_params")();
  ASSERT_EQ(params_blob.code(), kTVMBytes);
  NamedArrays params = LoadParams(params_blob.string_payload());
  ASSERT_EQ(params.size(), 1u);
  EXPECT_EQ(params[0].first, "p_w");
  EXPECT_EQ(test::ToVector(params[0].second), test::ToVector(test::TestModelParams()[0].second));
  // Without params, the executor's p_w must be loaded by hand.
  Module bare = lib.GetFunction("remove_params")().AsModule();
  Module gmod = bare.GetFunction("default")(kCPU).AsModule();
  std::string info = gmod.GetFunction("get_input_info")().AsString();
  EXPECT_TRUE(nlohmann::json::parse(info)["shape"].contains("p_w"));
  std::string blob = params_blob.string_payload();
  gmod.GetFunction("load_params")(TVMByteArray{blob.data(), blob.size()});
  RunAndCheckModule(gmod, 1.0f);
}

TEST_F(ModelLibraryTest, InputAndOutputInfoAsJson) {
  Module lib = LoadModuleFromFile(test::LibPath("kiln_test_model_good"));
  Module gmod = lib.GetFunction("default")(kCPU).AsModule();
  auto inputs = nlohmann::json::parse(gmod.GetFunction("get_input_info")().AsString());
  EXPECT_EQ(inputs["shape"].size(), 1u);  // p_w is a parameter
  EXPECT_EQ(inputs["shape"]["x"], nlohmann::json({1, 8}));
  EXPECT_EQ(inputs["dtype"]["x"], "float32");
  auto outputs = nlohmann::json::parse(gmod.GetFunction("get_output_info")().AsString());
  EXPECT_EQ(outputs["shape"]["mirror:0"], nlohmann::json({2, 4}));
  EXPECT_EQ(outputs["shape"]["flat:0"], nlohmann::json({2, 4}));
}

TEST_F(ModelLibraryTest, PackedApiErrorsAreClear) {
  Module lib = LoadModuleFromFile(test::LibPath("kiln_test_model_good"));
  Module gmod = lib.GetFunction("default")(kCPU).AsModule();
  auto error_of = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  NDArray wrong = NDArray::Empty({3}, kFloat32);
  EXPECT_THAT(error_of([&] { gmod.GetFunction("set_input")("nope", wrong); }), HasSubstr("no input named 'nope'"));
  EXPECT_THAT(error_of([&] { gmod.GetFunction("set_input")("x", wrong); }), HasSubstr("expected float32 of shape [1, 8]"));
  EXPECT_THAT(error_of([&] { gmod.GetFunction("set_input")("x"); }), HasSubstr("set_input: expected 2 arguments, got 1"));
  EXPECT_THAT(error_of([&] { gmod.GetFunction("set_input")("x", 1.5); }), HasSubstr("argument 1: expected a tensor"));
  EXPECT_THAT(error_of([&] { gmod.GetFunction("get_output")(7); }), HasSubstr("output index 7 is out of range"));
  EXPECT_THAT(error_of([&] { gmod.GetFunction("load_params")(TVMByteArray{"abc", 3}); }), HasSubstr("truncated"));
  EXPECT_THAT(error_of([&] { lib.GetFunction("debug_create")("other", kCPU); }), HasSubstr("holds module 'default'"));
  EXPECT_FALSE(gmod.GetFunction("no_such_function").defined());
}

TEST_F(ModelLibraryTest, ShareParamsThroughPackedApi) {
  Module lib = LoadModuleFromFile(test::LibPath("kiln_test_model_good"));
  Module source = lib.GetFunction("default")(kCPU).AsModule();
  Module bare = lib.GetFunction("remove_params")().AsModule();
  Module gmod = bare.GetFunction("default")(kCPU).AsModule();
  std::string blob = SaveParams(test::TestModelParams());
  gmod.GetFunction("share_params")(source, TVMByteArray{blob.data(), blob.size()});
  EXPECT_EQ(gmod.GetFunction("get_input")("p_w").AsNDArray().data(),
            source.GetFunction("get_input")("p_w").AsNDArray().data());
  RunAndCheckModule(gmod, 1.0f);
  try {
    gmod.GetFunction("share_params")(lib, TVMByteArray{blob.data(), blob.size()});
    FAIL() << "sharing from a factory was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("expected a graph executor module"));
  }
}

TEST_F(ModelLibraryTest, ThreeFileForm) {
  Module ops = LoadModuleFromFile(test::LibPath("kiln_test_ops"));
  EXPECT_FALSE(ops.GetFunction("default").defined());  // no blob: operators only
  PackedFunc create = GetGlobalFunction("tvm.graph_executor.create");
  ASSERT_TRUE(create.defined());
  std::string json = ReadFile(test::DataPath("test_model.json"));
  Module gmod = create(json, ops, int{kDLCPU}, 0).AsModule();
  std::string params = ReadFile(std::string(KILN_TEST_BIN_DIR) + "/test_model.params");
  gmod.GetFunction("load_params")(TVMByteArray{params.data(), params.size()});
  RunAndCheckModule(gmod, 1.0f);
}

TEST_F(ModelLibraryTest, LibraryFromBeforeImportTrees) {
  // Without an import tree every blob module becomes an import of the library. Factories came
  // after import trees, so one found this way has no code module: a clear error, not a crash.
  Module lib = LoadModuleFromFile(test::LibPath("kiln_test_model_no_import_tree"));
  EXPECT_STREQ(lib.type_key(), "library");
  ASSERT_EQ(lib->imports().size(), 1u);
  EXPECT_STREQ(lib->imports()[0].type_key(), "GraphExecutorFactory");
  EXPECT_TRUE(lib.GetFunction("test_add").defined());
  try {
    lib.GetFunction("default", /*query_imports=*/true)(kCPU);
    FAIL() << "a factory without code module created an executor";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("has no code module imported"));
  }
}

TEST_F(ModelLibraryTest, DebugExecutorProfilesEveryNode) {
  Module lib = LoadModuleFromFile(test::LibPath("kiln_test_model_good"));
  Module debug = lib.GetFunction("debug_create")("default", kCPU).AsModule();
  EXPECT_STREQ(debug.type_key(), "GraphExecutorDebug");
  RunAndCheckModule(debug, 1.0f);  // run() profiles and still computes the right answer
  std::string table = debug.GetFunction("profile")().AsString();
  for (const char* node : {"add", "relu", "two", "scale", "mirror", "flat", "Total"}) {
    EXPECT_THAT(table, HasSubstr(node));
  }
  auto trace = nlohmann::json::parse(debug.GetFunction("profile_chrome_trace")().AsString());
  EXPECT_EQ(trace["traceEvents"].size(), 6u);
  auto times = nlohmann::json::parse(debug.GetFunction("run_individual")(2, 3, 0).AsString());
  ASSERT_EQ(times.size(), 6u);
  for (const auto& node : times) EXPECT_EQ(node.size(), 3u);
}

TEST_F(ModelLibraryTest, LoadingTwiceWhileAliveGivesTheSameModules) {
  Module a = LoadModuleFromFile(test::LibPath("kiln_test_model_good"));
  Module b = LoadModuleFromFile(test::LibPath("kiln_test_model_good"));
  EXPECT_EQ(a.get(), b.get());
  a = Module();
  b = Module();
  Module c = LoadModuleFromFile(test::LibPath("kiln_test_model_good"));  // loaded afresh
  RunAndCheckModule(c.GetFunction("default")(kCPU).AsModule(), 1.0f);
}

TEST_F(ModelLibraryTest, OperatorsReachTheEnvironmentThroughTheModuleContext) {
  // test_env_call calls __TVMBackendGetFuncFromEnv(__tvm_module_ctx, "test.negate"), both
  // filled in by the loader, then __TVMFuncCall.
  RegisterGlobalFunction("test.negate", PackedFunc([](const Args& args, RetValue*) {
    const DLTensor* in = args[0].AsTensor();
    DLTensor* out = args[1].AsTensor();
    for (int64_t i = 0; i < NumElements(*out); ++i) {
      static_cast<float*>(out->data)[i] = -static_cast<const float*>(in->data)[i];
    }
  }), /*override_existing=*/true);
  Module ops = LoadModuleFromFile(test::LibPath("kiln_test_ops"));
  NDArray in = test::FloatArray({3}, {1, -2, 3});
  NDArray out = NDArray::Empty({3}, kFloat32);
  ops.GetFunction("test_env_call")(in, out);
  EXPECT_EQ(test::ToVector(out), (std::vector<float>{-1, 2, -3}));
}

TEST_F(ModelLibraryTest, DamagedLibrariesGiveClearErrors) {
  EXPECT_THAT(LoadError(test::LibPath("kiln_test_model_truncated")),
              HasSubstr("__tvm_dev_mblob claims"));
  EXPECT_THAT(LoadError(test::LibPath("kiln_test_model_unknown_module")),
              HasSubstr("module type 'cuda' is not supported by this build"));
  EXPECT_THAT(LoadError(test::LibPath("kiln_test_model_old_factory_layout")),
              HasSubstr("parameter names come before their count, the layout of kiln before 0.2 that TVM cannot read"));
  std::string unresolved = LoadError(test::LibPath("kiln_test_unresolved"));
  EXPECT_THAT(unresolved, HasSubstr("cannot load library"));
  EXPECT_THAT(unresolved, HasSubstr("undefined symbol: kiln_test_function_nothing_defines"));
  std::string tvm_cpp = LoadError(test::LibPath("kiln_test_tvm_cpp_runtime"));  // as TVM's ccompiler builds
  EXPECT_THAT(tvm_cpp, HasSubstr("needs TVM's C++ runtime library (libtvm_runtime), which kiln does not provide: "
                                 "it calls tvm::runtime::Object::TypeIndex2Key[abi:cxx11](unsigned int)"));
  EXPECT_THAT(tvm_cpp, HasSubstr("run the library with TVM's runtime, or build the model with kiln"));
  std::string garbage = LoadError(test::LibPath("kiln_test_model_garbage"));
  EXPECT_THAT(garbage, HasSubstr("cannot load library"));
  EXPECT_THAT(garbage, HasSubstr("kiln_test_model_garbage"));
  EXPECT_THAT(LoadError("/nonexistent/model.so"), HasSubstr("cannot load library '/nonexistent/model.so'"));
  EXPECT_THAT(LoadError(test::DataPath("test_model.json")), HasSubstr("format 'json' is not a library"));
  // A file with a .so name that is not a shared object.
  std::string fake = ::testing::TempDir() + "/not_a_library.so";
  std::ofstream(fake) << "this is text";
  EXPECT_THAT(LoadError(fake), HasSubstr("cannot load library '" + fake + "'"));
}

}  // namespace
}  // namespace kiln::runtime
