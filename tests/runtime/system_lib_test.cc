// The system library: operators linked into this test binary (test_ops.c built with
// KILN_TEST_SYSTEM_LIB) register themselves under the prefix "sys_" and run through the
// runtime's exported backend API.
#include "runtime/system_lib.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/error.h"
#include "runtime/graph_executor.h"
#include "runtime/thread_pool.h"
#include "test_util.h"

namespace kiln::runtime {
namespace {

TEST(SystemLib, ServesRegisteredOperatorsUnderItsPrefix) {
  Module lib = GetGlobalFunction("runtime.SystemLib")("sys_").AsModule();
  EXPECT_STREQ(lib.type_key(), "system_lib");
  EXPECT_TRUE(lib.GetFunction("test_add").defined());
  EXPECT_FALSE(lib.GetFunction("test_two_outputs").defined());  // not registered
  EXPECT_FALSE(GetSystemLib("other_").GetFunction("test_add").defined());
  EXPECT_EQ(GetSystemLib("sys_").get(), lib.get());  // one module per prefix
}

TEST(SystemLib, RunsAGraph) {
  // add -> relu -> workspace -> parallel mirror, on operators of the system library.
  std::string json = R"({
    "nodes": [
      {"op": "null", "name": "x", "inputs": []},
      {"op": "null", "name": "p_w", "inputs": []},
      {"op": "tvm_op", "name": "add", "inputs": [[0, 0], [1, 0]],
       "attrs": {"func_name": "test_add", "num_inputs": "2", "num_outputs": "1", "flatten_data": "0"}},
      {"op": "tvm_op", "name": "relu", "inputs": [[2, 0]],
       "attrs": {"func_name": "test_relu", "num_inputs": "1", "num_outputs": "1", "flatten_data": "0"}},
      {"op": "tvm_op", "name": "scale", "inputs": [[3, 0]],
       "attrs": {"func_name": "test_workspace", "num_inputs": "1", "num_outputs": "1", "flatten_data": "0"}},
      {"op": "tvm_op", "name": "mirror", "inputs": [[4, 0]],
       "attrs": {"func_name": "test_parallel_mirror", "num_inputs": "1", "num_outputs": "1", "flatten_data": "0"}}
    ],
    "arg_nodes": [0, 1], "heads": [[5, 0]],
    "attrs": {"dltype": ["list_str", ["float32", "float32", "float32", "float32", "float32", "float32"]],
              "shape": ["list_shape", [[8], [8], [8], [8], [8], [8]]],
              "storage_id": ["list_int", [0, 1, 2, 3, 2, 3]]},
    "node_row_ptr": [0, 1, 2, 3, 4, 5, 6]})";
  SetNumThreads(2);
  GraphExecutor exec(ParseGraphJson(json), GetSystemLib("sys_"));
  std::vector<float> x = test::TestInput(1.0f), w(8);
  for (int i = 0; i < 8; ++i) w[i] = test::ParamValue(i);
  exec.SetInput(0, *test::FloatArray({8}, x).get());
  exec.SetInput(1, *test::FloatArray({8}, w).get());
  exec.Run();
  std::vector<float> got = test::ToVector(exec.GetOutput(0));
  for (int i = 0; i < 8; ++i) {
    float t = 3 * std::max(0.0f, x[7 - i] + w[7 - i]);
    EXPECT_EQ(got[i], t * t) << "element " << i;
  }
  SetNumThreads(0);
}

TEST(SystemLib, EnvironmentLookupThroughModuleContext) {
  // test_env_call finds "test.negate" through TVMBackendGetFuncFromEnv(__tvm_module_ctx, ...).
  RegisterGlobalFunction("test.negate", PackedFunc([](const Args& args, RetValue*) {
    NDArray in = NDArray::WrapExternal(*args[0].AsTensor());
    DLTensor* out = args[1].AsTensor();
    auto* src = static_cast<const float*>(in.data());
    auto* dst = static_cast<float*>(out->data);
    for (int64_t i = 0; i < NumElements(*out); ++i) dst[i] = -src[i];
  }), /*override_existing=*/true);
  Module lib = GetSystemLib("sys_");
  NDArray in = test::FloatArray({4}, {1, -2, 3, -4});
  NDArray out = NDArray::Empty({4}, kFloat32);
  lib.GetFunction("test_env_call")(in, out);
  EXPECT_EQ(test::ToVector(out), (std::vector<float>{-1, 2, -3, 4}));
}

TEST(SystemLib, ConflictingRegistrationIsAnError) {
  int a = 0, b = 0;
  RegisterSystemLibSymbol("conflict_test_symbol", &a);
  RegisterSystemLibSymbol("conflict_test_symbol", &a);  // the same address again is fine
  EXPECT_THROW(RegisterSystemLibSymbol("conflict_test_symbol", &b), Error);
  EXPECT_NE(TVMBackendRegisterSystemLibSymbol("conflict_test_symbol", &b), 0);
  EXPECT_THAT(TVMGetLastError(), ::testing::HasSubstr("registered twice"));
}

}  // namespace
}  // namespace kiln::runtime
