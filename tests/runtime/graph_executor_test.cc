// End-to-end tests of the graph executor over hand-written graph JSON and the test operator
// library: storage sharing, __nop, flatten_data, multi-output nodes, workspace, parallel launch,
// zero-copy I/O, parameters, and every wrong call.
#include "runtime/graph_executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include "runtime/error.h"
#include "runtime/thread_pool.h"
#include "test_util.h"

namespace kiln::runtime {
namespace {

using ::testing::HasSubstr;
using test::FloatArray;
using test::ToVector;

class GraphExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetNumThreads(2);
    json_ = ReadFile(test::DataPath("test_model.json"));
    ops_ = LoadModuleFromFile(test::LibPath("kiln_test_ops"));
  }
  void TearDown() override { SetNumThreads(0); }

  std::unique_ptr<GraphExecutor> Make(const std::string& json) {
    return std::make_unique<GraphExecutor>(ParseGraphJson(json), ops_);
  }
  std::unique_ptr<GraphExecutor> MakeLoaded() {
    auto exec = Make(json_);
    exec->LoadParams(test::TestModelParams());
    return exec;
  }
  // Runs with input x and checks both outputs against the reference.
  void RunAndCheck(GraphExecutor& exec, const std::vector<float>& x) {
    exec.SetInput(0, *FloatArray({1, 8}, x).get());
    exec.Run();
    std::vector<float> want0, want1;
    test::ReferenceTestModel(x, want0, want1);
    EXPECT_EQ(ToVector(exec.GetOutput(0)), want0);
    EXPECT_EQ(ToVector(exec.GetOutput(1)), want1);
  }
  std::string ErrorOf(const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  }

  std::string json_;
  Module ops_;
};

void* AlignedBuffer(size_t bytes, size_t offset = 0) {
  static thread_local std::vector<std::unique_ptr<char[]>> keep;
  keep.emplace_back(new char[bytes + 128]);
  auto address = reinterpret_cast<uintptr_t>(keep.back().get());
  return reinterpret_cast<void*>((address + 63) / 64 * 64 + offset);
}

DLTensor Tensor(void* data, std::vector<int64_t>& shape, DLDataType dtype = kFloat32) {
  DLTensor t{};
  t.data = data;
  t.device = kCPU;
  t.ndim = static_cast<int>(shape.size());
  t.dtype = dtype;
  t.shape = shape.data();
  return t;
}

TEST_F(GraphExecutorTest, RunsTheModelAndMatchesTheReference) {
  auto exec = MakeLoaded();
  EXPECT_EQ(exec->NumInputs(), 2);
  EXPECT_EQ(exec->NumOutputs(), 2);
  RunAndCheck(*exec, test::TestInput(1.0f));
  RunAndCheck(*exec, test::TestInput(-0.5f));  // runs again with new input
}

TEST_F(GraphExecutorTest, SharesStorageByStorageId) {
  auto exec = MakeLoaded();
  // test_model.json plans 6 storage ids of 32 bytes for 10 entries (all [1,8] or [2,4] float32).
  EXPECT_EQ(exec->OwnedStorageBytes(), 6u * 32u);
  // Entries 2 (add), 5 (two:0) and 8 (mirror) share storage id 2: the first output lives in the
  // memory of the add's result.
  RunAndCheck(*exec, test::TestInput(2.0f));
}

TEST_F(GraphExecutorTest, NopSharesMemoryAndSkipsTheCall) {
  auto exec = MakeLoaded();
  // 9 nodes, 2 inputs, one __nop with the same storage id: 6 prepared steps.
  EXPECT_EQ(exec->NumSteps(), 6u);
  for (size_t i = 0; i < exec->NumSteps(); ++i) EXPECT_NE(exec->graph().nodes[exec->StepNode(i)].name, "reshape");
}

TEST_F(GraphExecutorTest, NopBetweenDifferentStorageCopies) {
  auto graph = nlohmann::json::parse(json_);
  graph["attrs"]["storage_id"][1][4] = 6;  // reshape output gets storage of its own
  auto exec = Make(graph.dump());
  exec->LoadParams(test::TestModelParams());
  EXPECT_EQ(exec->NumSteps(), 7u);
  RunAndCheck(*exec, test::TestInput(1.5f));
}

TEST_F(GraphExecutorTest, NopThatChangesTheSizeIsRejected) {
  auto graph = nlohmann::json::parse(json_);
  graph["attrs"]["shape"][1][4] = {2, 5};
  EXPECT_THAT(ErrorOf([&] { Make(graph.dump()); }), HasSubstr("changes the size"));
}

TEST_F(GraphExecutorTest, CopyNodeCopies) {
  auto graph = nlohmann::json::parse(json_);
  graph["nodes"][4]["attrs"]["func_name"] = "__copy";
  graph["attrs"]["storage_id"][1][4] = 6;
  auto exec = Make(graph.dump());
  exec->LoadParams(test::TestModelParams());
  RunAndCheck(*exec, test::TestInput(0.75f));
}

// A node with run conditions runs only when they hold: "then" copies x when c holds, "else" copies
// x plus one when it does not; each keeps its last result while it does not run.
TEST_F(GraphExecutorTest, NodesRunOnlyWhenTheirConditionsHold) {
  auto exec = Make(R"({
    "nodes": [
      {"op": "null", "name": "c", "inputs": []},
      {"op": "null", "name": "x", "inputs": []},
      {"op": "tvm_op", "name": "then", "inputs": [[1, 0, 0]],
       "attrs": {"func_name": "__copy", "num_inputs": "1", "num_outputs": "1", "flatten_data": "0",
                 "kiln_run_if": "[[0,0,1]]"}},
      {"op": "null", "name": "one", "inputs": []},
      {"op": "tvm_op", "name": "else", "inputs": [[1, 0, 0], [3, 0, 0]],
       "attrs": {"func_name": "test_add", "num_inputs": "2", "num_outputs": "1", "flatten_data": "0",
                 "kiln_run_if": "[[0,0,0]]"}}
    ],
    "arg_nodes": [0, 1, 3],
    "heads": [[2, 0, 0], [4, 0, 0]],
    "attrs": {
      "dltype": ["list_str", ["bool", "float32", "float32", "float32", "float32"]],
      "shape": ["list_shape", [[], [1, 8], [1, 8], [1, 8], [1, 8]]],
      "storage_id": ["list_int", [0, 1, 2, 3, 4]]
    },
    "node_row_ptr": [0, 1, 2, 3, 4, 5]
  })");
  runtime::NDArray condition = runtime::NDArray::Empty({}, DLDataType{kDLUInt, 1, 1});
  auto run = [&](bool c, float x) {
    *static_cast<uint8_t*>(condition.data()) = c ? 1 : 0;
    exec->SetInput(0, *condition.get());
    exec->SetInput(1, *FloatArray({1, 8}, std::vector<float>(8, x)).get());
    exec->Run();
    return std::make_pair(ToVector(exec->GetOutput(0))[0], ToVector(exec->GetOutput(1))[0]);
  };
  exec->SetInput(2, *FloatArray({1, 8}, std::vector<float>(8, 1.0f)).get());
  std::vector<int64_t> shape = {1, 8};
  auto* unwritten = static_cast<float*>(AlignedBuffer(8 * sizeof(float)));
  std::fill(unwritten, unwritten + 8, -1.0f);
  exec->SetOutputZeroCopy(1, Tensor(unwritten, shape));
  EXPECT_EQ(run(true, 2.0f), std::make_pair(2.0f, -1.0f));  // else has not run
  EXPECT_EQ(run(false, 5.0f), std::make_pair(2.0f, 6.0f));  // then keeps its last result
  EXPECT_EQ(run(true, 7.0f), std::make_pair(7.0f, 6.0f));
}

TEST_F(GraphExecutorTest, InputsAndOutputsByName) {
  auto exec = MakeLoaded();
  EXPECT_EQ(exec->GetInputIndex("x"), 0);
  EXPECT_EQ(exec->GetInputIndex("p_w"), 1);
  EXPECT_EQ(exec->GetInputIndex("nope"), -1);
  EXPECT_EQ(exec->GetOutputIndex("mirror:0"), 0);
  EXPECT_EQ(exec->GetOutputIndex("mirror"), 0);
  EXPECT_EQ(exec->GetOutputIndex("flat:0"), 1);
  EXPECT_EQ(exec->GetOutputIndex("flat:1"), -1);
  EXPECT_THAT(ErrorOf([&] { exec->InputIndex("nope"); }), HasSubstr("no input named 'nope' (its inputs are: x, p_w)"));
  EXPECT_THAT(ErrorOf([&] { exec->OutputIndex("nope"); }), HasSubstr("mirror:0, flat:0"));
}

TEST_F(GraphExecutorTest, InputInfoExcludesParameters) {
  auto exec = Make(json_);
  EXPECT_EQ(exec->GetInputInfo().size(), 2u);  // nothing is known to be a parameter yet
  exec->LoadParams(test::TestModelParams());
  auto inputs = exec->GetInputInfo();
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0].name, "x");
  EXPECT_EQ(inputs[0].shape, (std::vector<int64_t>{1, 8}));
  EXPECT_EQ(inputs[0].dtype, kFloat32);
  auto outputs = exec->GetOutputInfo();
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[1].name, "flat:0");
  EXPECT_EQ(outputs[1].shape, (std::vector<int64_t>{2, 4}));
}

TEST_F(GraphExecutorTest, GetInputReturnsWhatWasSet) {
  auto exec = MakeLoaded();
  auto x = test::TestInput(3.0f);
  exec->SetInput(0, *FloatArray({1, 8}, x).get());
  EXPECT_EQ(ToVector(exec->GetInput(0)), x);
  EXPECT_EQ(ToVector(exec->GetInput(1)), ToVector(test::TestModelParams()[0].second));
}

TEST_F(GraphExecutorTest, CopyOutputIntoCallerArray) {
  auto exec = MakeLoaded();
  auto x = test::TestInput(1.0f);
  exec->SetInput(0, *FloatArray({1, 8}, x).get());
  exec->Run();
  NDArray out = NDArray::Empty({2, 4}, kFloat32);
  exec->CopyOutputTo(1, *out.get());
  std::vector<float> want0, want1;
  test::ReferenceTestModel(x, want0, want1);
  EXPECT_EQ(ToVector(out), want1);
  NDArray wrong = NDArray::Empty({8}, kFloat32);
  EXPECT_THAT(ErrorOf([&] { exec->CopyOutputTo(1, *wrong.get()); }), HasSubstr("expected float32 of shape [2, 4]"));
}

TEST_F(GraphExecutorTest, ZeroCopyInputAndOutput) {
  auto exec = MakeLoaded();
  std::vector<int64_t> in_shape = {1, 8}, out_shape = {2, 4};
  auto* in = static_cast<float*>(AlignedBuffer(32));
  auto* out0 = static_cast<float*>(AlignedBuffer(32));
  auto* out1 = static_cast<float*>(AlignedBuffer(32));
  exec->SetInputZeroCopy(0, Tensor(in, in_shape));
  exec->SetOutputZeroCopy(0, Tensor(out0, out_shape));
  exec->SetOutputZeroCopy(1, Tensor(out1, out_shape));
  for (float seed : {1.0f, -2.0f}) {
    auto x = test::TestInput(seed);
    std::copy(x.begin(), x.end(), in);  // the executor reads the caller's buffer directly
    exec->Run();
    std::vector<float> want0, want1;
    test::ReferenceTestModel(x, want0, want1);
    EXPECT_EQ(std::vector<float>(out0, out0 + 8), want0);
    EXPECT_EQ(std::vector<float>(out1, out1 + 8), want1);
    EXPECT_EQ(exec->GetOutput(0).data(), out0);  // the output view is the caller's memory
  }
  // set_input ends the binding: the caller's buffer is no longer read.
  auto x = test::TestInput(0.5f);
  exec->SetInput(0, *FloatArray({1, 8}, x).get());
  std::fill(in, in + 8, 100.0f);
  exec->Run();
  std::vector<float> want0, want1;
  test::ReferenceTestModel(x, want0, want1);
  EXPECT_EQ(std::vector<float>(out0, out0 + 8), want0);
}

TEST_F(GraphExecutorTest, ZeroCopyThroughNopRebindsBothSides) {
  // Make the output a reshape (__nop, same storage) of the relu result and bind it.
  auto graph = nlohmann::json::parse(json_);
  graph["heads"] = {{7, 0, 0}, {4, 0, 0}};
  auto exec = Make(graph.dump());
  exec->LoadParams(test::TestModelParams());
  std::vector<int64_t> shape = {2, 4};
  auto* out = static_cast<float*>(AlignedBuffer(32));
  exec->SetOutputZeroCopy(1, Tensor(out, shape));
  auto x = test::TestInput(1.0f);
  exec->SetInput(0, *FloatArray({1, 8}, x).get());
  exec->Run();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], std::max(0.0f, x[i] + test::ParamValue(i)));
  std::vector<float> want0, want1;
  test::ReferenceTestModel(x, want0, want1);
  EXPECT_EQ(ToVector(exec->GetOutput(0)), want0);  // consumers of the relu read the bound buffer
}

TEST_F(GraphExecutorTest, ZeroCopyRejectsBadBuffers) {
  auto exec = MakeLoaded();
  std::vector<int64_t> shape = {1, 8}, wrong_shape = {8};
  EXPECT_THAT(ErrorOf([&] { exec->SetInputZeroCopy(0, Tensor(AlignedBuffer(32, 4), shape)); }),
              HasSubstr("is not 64-byte aligned"));
  EXPECT_THAT(ErrorOf([&] { exec->SetInputZeroCopy(0, Tensor(AlignedBuffer(32), wrong_shape)); }),
              HasSubstr("expected float32 of shape [1, 8], got float32 of shape [8]"));
  EXPECT_THAT(ErrorOf([&] { exec->SetInputZeroCopy(0, Tensor(AlignedBuffer(32), shape, DLDataType{kDLInt, 32, 1})); }),
              HasSubstr("got int32"));
  EXPECT_THAT(ErrorOf([&] { exec->SetInputZeroCopy(0, Tensor(nullptr, shape)); }), HasSubstr("aligned"));
  DLTensor gpu = Tensor(AlignedBuffer(32), shape);
  gpu.device = DLDevice{kDLCUDA, 0};
  EXPECT_THAT(ErrorOf([&] { exec->SetInputZeroCopy(0, gpu); }), HasSubstr("not in CPU memory"));
  std::vector<int64_t> strides = {16, 2};
  DLTensor strided = Tensor(AlignedBuffer(32), shape);
  strided.strides = strides.data();
  EXPECT_THAT(ErrorOf([&] { exec->SetInputZeroCopy(0, strided); }), HasSubstr("not compact"));
  std::vector<int64_t> out_shape = {2, 4};
  EXPECT_THAT(ErrorOf([&] { exec->SetOutputZeroCopy(0, Tensor(AlignedBuffer(32, 8), out_shape)); }),
              HasSubstr("aligned"));
  EXPECT_THAT(ErrorOf([&] { exec->SetOutputZeroCopy(5, Tensor(AlignedBuffer(32), out_shape)); }),
              HasSubstr("output index 5 is out of range"));
  // None of the rejected calls changed anything.
  RunAndCheck(*exec, test::TestInput(1.0f));
}

TEST_F(GraphExecutorTest, OutputThatIsAnInputCannotBeBoundZeroCopy) {
  auto graph = nlohmann::json::parse(json_);
  graph["heads"] = {{0, 0, 0}};
  auto exec = Make(graph.dump());
  std::vector<int64_t> shape = {1, 8};
  EXPECT_THAT(ErrorOf([&] { exec->SetOutputZeroCopy(0, Tensor(AlignedBuffer(32), shape)); }),
              HasSubstr("is the graph input 'x'"));
}

TEST_F(GraphExecutorTest, WrongSetInputCallsAreClearErrorsAndChangeNothing) {
  auto exec = MakeLoaded();
  auto x = test::TestInput(1.0f);
  exec->SetInput(0, *FloatArray({1, 8}, x).get());
  EXPECT_THAT(ErrorOf([&] { exec->SetInput(0, *FloatArray({8}, x).get()); }),
              HasSubstr("set_input 'x': expected float32 of shape [1, 8], got float32 of shape [8]"));
  NDArray ints = NDArray::Empty({1, 8}, DLDataType{kDLInt, 32, 1});
  EXPECT_THAT(ErrorOf([&] { exec->SetInput(0, *ints.get()); }), HasSubstr("got int32 of shape [1, 8]"));
  EXPECT_THAT(ErrorOf([&] { exec->SetInput(2, *FloatArray({1, 8}, x).get()); }),
              HasSubstr("input index 2 is out of range (the graph has 2 inputs)"));
  EXPECT_THAT(ErrorOf([&] { exec->SetInput(-1, *FloatArray({1, 8}, x).get()); }), HasSubstr("out of range"));
  EXPECT_THAT(ErrorOf([&] { exec->GetOutput(2); }), HasSubstr("output index 2 is out of range"));
  EXPECT_EQ(ToVector(exec->GetInput(0)), x);
  exec->Run();
  std::vector<float> want0, want1;
  test::ReferenceTestModel(x, want0, want1);
  EXPECT_EQ(ToVector(exec->GetOutput(0)), want0);
}

TEST_F(GraphExecutorTest, LoadParamsFromBytesAndErrors) {
  auto exec = Make(json_);
  exec->LoadParams(SaveParams(test::TestModelParams()));
  RunAndCheck(*exec, test::TestInput(1.0f));
  // A wrong shape is rejected before anything is copied, even when another array is fine.
  std::vector<float> zeros(8, 0.0f), nine(9, 0.0f);
  NamedArrays bad = {{"x", FloatArray({1, 8}, zeros)}, {"p_w", FloatArray({9}, nine)}};
  EXPECT_THAT(ErrorOf([&] { exec->LoadParams(bad); }),
              HasSubstr("parameter 'p_w': expected float32 of shape [1, 8], got float32 of shape [9]"));
  EXPECT_THAT(ErrorOf([&] { exec->LoadParams(std::string("not params")); }), HasSubstr("params"));
  // Names the graph lacks are ignored, as in TVM.
  exec->LoadParams(NamedArrays{{"unknown", FloatArray({1}, {1.0f})}});
  RunAndCheck(*exec, test::TestInput(1.0f));
}

TEST_F(GraphExecutorTest, ShareParamsAliasesAndFreesOwnCopy) {
  auto source = MakeLoaded();
  auto exec = Make(json_);
  size_t before = exec->OwnedStorageBytes();
  exec->ShareParams(*source, SaveParams(test::TestModelParams()));
  EXPECT_EQ(exec->OwnedStorageBytes(), before - 32);  // p_w's storage was released
  EXPECT_EQ(exec->GetInput(1).data(), source->GetInput(1).data());
  source.reset();  // the shared array outlives its first owner
  RunAndCheck(*exec, test::TestInput(-1.0f));
  ASSERT_EQ(exec->GetInputInfo().size(), 1u);  // p_w is now a parameter
}

TEST_F(GraphExecutorTest, ShareParamsErrors) {
  auto source = MakeLoaded();
  auto exec = Make(json_);
  NamedArrays unknown = {{"nope", FloatArray({1}, {1.0f})}};
  EXPECT_THAT(ErrorOf([&] { exec->ShareParams(*source, SaveParams(unknown)); }), HasSubstr("no input named 'nope'"));
  auto graph = nlohmann::json::parse(json_);
  graph["attrs"]["shape"][1][1] = {8};
  graph["attrs"]["shape"][1][0] = {8};
  graph["attrs"]["shape"][1][2] = {8};
  graph["attrs"]["shape"][1][3] = {8};
  auto other_shape = Make(graph.dump());
  EXPECT_THAT(ErrorOf([&] { exec->ShareParams(*other_shape, SaveParams(test::TestModelParams())); }),
              HasSubstr("share_params 'p_w'"));
}

TEST_F(GraphExecutorTest, MissingFunctionIsNamed) {
  auto graph = nlohmann::json::parse(json_);
  graph["nodes"][3]["attrs"]["func_name"] = "no_such_op";
  EXPECT_THAT(ErrorOf([&] { Make(graph.dump()); }),
              HasSubstr("graph node 3 'relu': function 'no_such_op' is not in the library"));
}

TEST_F(GraphExecutorTest, OperatorFailureNamesTheNodeAndKeepsTheExecutorUsable) {
  auto graph = nlohmann::json::parse(json_);
  graph["nodes"][3]["attrs"]["func_name"] = "test_fail";
  auto exec = Make(graph.dump());
  EXPECT_THAT(ErrorOf([&] { exec->Run(); }),
              HasSubstr("graph node 3 'relu' (test_fail) failed: test_fail: deliberate failure"));
  EXPECT_THAT(ErrorOf([&] { exec->Run(); }), HasSubstr("deliberate failure"));
}

TEST_F(GraphExecutorTest, OperatorArgumentCheckReportsMismatch) {
  // test_add requires three float32 arguments; declare the graph's x as int32.
  auto graph = nlohmann::json::parse(json_);
  graph["attrs"]["dltype"][1][0] = "int32";
  auto exec = Make(graph.dump());
  EXPECT_THAT(ErrorOf([&] { exec->Run(); }), HasSubstr("test_add: argument 0 is not float32"));
}

TEST_F(GraphExecutorTest, FlattenDataPresentsOneDimensionalArguments) {
  // With flatten_data 0 the flat copy operator rejects its 2-D arguments.
  auto graph = nlohmann::json::parse(json_);
  graph["nodes"][8]["attrs"]["flatten_data"] = "0";
  auto exec = Make(graph.dump());
  EXPECT_THAT(ErrorOf([&] { exec->Run(); }), HasSubstr("expected 1-D arguments"));
}

TEST_F(GraphExecutorTest, NonCpuDevicesAreRejected) {
  EXPECT_THAT(ErrorOf([&] { GraphExecutor(ParseGraphJson(json_), ops_, {DLDevice{kDLCUDA, 0}}); }),
              HasSubstr("CPU only"));
  auto graph = nlohmann::json::parse(json_);
  graph["attrs"]["device_index"] = {"list_int", {1, 1, 1, 1, 1, 1, 1, 1, 1, 2}};
  EXPECT_THAT(ErrorOf([&] { Make(graph.dump()); }), HasSubstr("entry 9 is placed on device type 2"));
  graph["attrs"]["device_index"] = {"list_int", {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}};
  auto exec = Make(graph.dump());
  exec->LoadParams(test::TestModelParams());
  RunAndCheck(*exec, test::TestInput(1.0f));
}

TEST_F(GraphExecutorTest, HugeStorageIsAnErrorNotACrash) {
  auto graph = nlohmann::json::parse(json_);
  graph["attrs"]["shape"][1][6] = {int64_t{1} << 40, int64_t{1} << 30};
  EXPECT_THAT(ErrorOf([&] { Make(graph.dump()); }), HasSubstr("entry 6: shape [1099511627776, 1073741824] has too many elements"));
  graph["attrs"]["shape"][1][6] = {int64_t{1} << 22, int64_t{1} << 22};  // 64 TiB, more than this machine has
  EXPECT_THAT(ErrorOf([&] { Make(graph.dump()); }),
              HasSubstr("entry 6: a tensor of shape [4194304, 4194304] needs 70368744177664 bytes, more than the limit of"));
}

// KILN_MAX_TENSOR_BYTES bounds every tensor: an entry above it fails the load before any storage
// is allocated, and so does an array; at the bound both work.
TEST_F(GraphExecutorTest, TensorSizeLimitIsConfigurable) {
  auto graph = nlohmann::json::parse(json_);
  graph["attrs"]["shape"][1][6] = {1024, 1024};  // 4 MiB of float32
  const char* outer = std::getenv("KILN_MAX_TENSOR_BYTES");
  std::string saved = outer != nullptr ? outer : "";
  setenv("KILN_MAX_TENSOR_BYTES", "4194303", 1);
  std::string error = ErrorOf([&] { Make(graph.dump()); });
  std::string array_error = ErrorOf([] { NDArray::Empty({1024, 1024}, kFloat32); });
  setenv("KILN_MAX_TENSOR_BYTES", "4194304", 1);
  std::string at_bound = ErrorOf([] { NDArray::Empty({1024, 1024}, kFloat32); });
  std::string executor_at_bound = ErrorOf([&] { Make(graph.dump()); });
  setenv("KILN_MAX_TENSOR_BYTES", "lots", 1);
  std::string bad_setting = ErrorOf([] { NDArray::Empty({1}, kFloat32); });
  if (outer != nullptr) {
    setenv("KILN_MAX_TENSOR_BYTES", saved.c_str(), 1);
  } else {
    unsetenv("KILN_MAX_TENSOR_BYTES");
  }
  EXPECT_THAT(error, HasSubstr("entry 6: a tensor of shape [1024, 1024] needs 4194304 bytes, more than the limit of "
                               "4194303 bytes (KILN_MAX_TENSOR_BYTES)"));
  EXPECT_THAT(array_error, HasSubstr("an array of shape [1024, 1024] and dtype float32 needs 4194304 bytes"));
  EXPECT_EQ(at_bound, "(no error)");
  EXPECT_EQ(executor_at_bound, "(no error)");
  EXPECT_THAT(bad_setting, HasSubstr("KILN_MAX_TENSOR_BYTES must be a positive number of bytes, got 'lots'"));
}

// One node that writes the task count of a default launch: the thread count its run had.
const char* kThreadCountGraph = R"({
  "nodes": [
    {"op": "null", "name": "x", "inputs": []},
    {"op": "tvm_op", "name": "count", "inputs": [[0, 0, 0]],
     "attrs": {"func_name": "test_thread_count", "num_inputs": "1", "num_outputs": "1", "flatten_data": "0"}}],
  "arg_nodes": [0], "heads": [[1, 0, 0]], "node_row_ptr": [0, 1, 2],
  "attrs": {"dltype": ["list_str", ["float32", "float32"]], "shape": ["list_shape", [[1], [1]]],
            "storage_id": ["list_int", [0, 1]]}})";

float ThreadsOfRun(GraphExecutor& exec) {
  exec.Run();
  return ToVector(exec.GetOutput(0))[0];
}

TEST_F(GraphExecutorTest, ExecutorsRunConcurrentlyWithTheirOwnThreadCounts) {
  auto process = Make(kThreadCountGraph), three = Make(kThreadCountGraph), one = Make(kThreadCountGraph);
  three->SetNumThreads(3);
  one->SetNumThreads(1);
  EXPECT_EQ(process->num_threads(), 0);
  // Taking turns on one thread.
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(ThreadsOfRun(*process), 2.0f);  // SetNumThreads(2) in SetUp
    EXPECT_EQ(ThreadsOfRun(*three), 3.0f);
    EXPECT_EQ(ThreadsOfRun(*one), 1.0f);
  }
  EXPECT_EQ(NumThreads(), 2);  // the process's count is as it was
  // At once, in two threads.
  std::vector<float> seen_three, seen_process;
  std::thread a([&] { for (int i = 0; i < 200; ++i) seen_three.push_back(ThreadsOfRun(*three)); });
  std::thread b([&] { for (int i = 0; i < 200; ++i) seen_process.push_back(ThreadsOfRun(*process)); });
  a.join();
  b.join();
  EXPECT_EQ(std::count(seen_three.begin(), seen_three.end(), 3.0f), 200);
  EXPECT_EQ(std::count(seen_process.begin(), seen_process.end(), 2.0f), 200);
  // Back to the process's count, which follows SetNumThreads.
  three->SetNumThreads(0);
  SetNumThreads(4);
  EXPECT_EQ(ThreadsOfRun(*three), 4.0f);
  EXPECT_THAT(ErrorOf([&] { one->SetNumThreads(-1); }), HasSubstr("expected a thread count from 0"));
  EXPECT_EQ(ThreadsOfRun(*one), 1.0f);
}

TEST_F(GraphExecutorTest, SingleThreadRunGivesTheSameResult) {
  SetNumThreads(1);
  auto exec = MakeLoaded();
  RunAndCheck(*exec, test::TestInput(1.0f));
}

}  // namespace
}  // namespace kiln::runtime
