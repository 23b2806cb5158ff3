// The runtime side of bring your own codegen, without compiling anything: the JSON subgraph
// format (read, written back, every malformed graph a clear error), the JSON runtime base (its
// functions, argument checks, one initialization under concurrent calls, binary form) over the
// test JSON module, and the const-loader module (its binary form byte for byte as TVM v0.19
// lays it out, initialization of each symbol with exactly its constants, forwarding, errors),
// and the Array<NDArray> object that carries the constants to __init_ in TVM's layout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "runtime/const_loader_module.h"
#include "runtime/error.h"
#include "runtime/json_graph.h"
#include "runtime/tvm_object_array.h"
#include "tests/float_arrays.h"
#include "tests/test_json_module.h"

namespace kiln::runtime {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

// y = relu(x * c + x), as TVM's serializer writes it (entries without a version, "attr" allowed).
json Subgraph(const std::string& const_name = "sym_const_0") {
  return json::parse(R"({
    "symbol": "sym",
    "nodes": [
      {"op": "input", "name": "x", "attrs": {"dtype": [["float32"]], "shape": [[[4]]]}},
      {"op": "const", "name": ")" + const_name + R"(", "attrs": {"dtype": [["float32"]], "shape": [[[4]]]}},
      {"op": "kernel", "name": "test.multiply_add", "inputs": [[0, 0], [1, 0], [0, 0]],
       "attr": {"num_inputs": "3", "num_outputs": "1", "dtype": [["float32"]], "shape": [[[4]]],
                "PartitionedFromPattern": [["multiply_add_"]]}},
      {"op": "kernel", "name": "nn.relu", "inputs": [[2, 0, 0]],
       "attrs": {"num_inputs": "1", "num_outputs": "1", "dtype": [["float32"]], "shape": [[[4]]]}}
    ],
    "arg_nodes": [0, 1],
    "heads": [[3, 0, 0]],
    "node_row_ptr": [0, 1, 2, 3, 4]
  })");
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::shared_ptr<test::TestJsonModule> TestModule(const std::string& symbol = "sym",
                                                 const std::string& const_name = "sym_const_0") {
  return std::make_shared<test::TestJsonModule>(symbol, Subgraph(const_name).dump(),
                                                std::vector<std::string>{const_name});
}

TEST(JsonGraph, ReadsTvmsLayoutAndWritesItBack) {
  JsonGraph g = ParseJsonGraph(Subgraph().dump());
  EXPECT_EQ(g.symbol, "sym");
  ASSERT_EQ(g.nodes.size(), 4u);
  EXPECT_EQ(g.nodes[2].name, "test.multiply_add");
  EXPECT_EQ(g.nodes[2].Attr("PartitionedFromPattern"), (std::vector<std::string>{"multiply_add_"}));
  EXPECT_EQ(g.nodes[2].attrs.count("num_inputs"), 0u);  // implied by the inputs
  EXPECT_EQ(g.nodes[3].shapes, (std::vector<std::vector<int64_t>>{{4}}));
  EXPECT_EQ(g.EntryId(g.heads[0]), 3u);
  JsonGraph again = ParseJsonGraph(WriteJsonGraph(g));
  EXPECT_EQ(WriteJsonGraph(again), WriteJsonGraph(g));
  EXPECT_EQ(json::parse(WriteJsonGraph(g))["nodes"][2]["attrs"]["num_inputs"], "3");
  EXPECT_THAT(ErrorOf([&] { g.nodes[3].Attr("strides"); }), HasSubstr("node 'nn.relu' has no attribute 'strides'"));
}

TEST(JsonGraph, RejectsMalformedGraphs) {
  struct Case {
    std::function<void(json&)> edit;
    const char* message;
  };
  const Case cases[] = {
      {[](json& g) { g["extra"] = 1; }, "top level: unknown field 'extra'"},
      {[](json& g) { g["nodes"][3]["op"] = "tvm_op"; }, "op is 'tvm_op', expected 'input', 'const' or 'kernel'"},
      {[](json& g) { g["nodes"][2]["inputs"][1] = {3, 0}; }, "refers to output 0 of node 3, which is not an output of an earlier node"},
      {[](json& g) { g["nodes"][2]["inputs"][1] = {1, 1}; }, "refers to output 1 of node 1"},
      {[](json& g) { g["nodes"][1]["attrs"].erase("shape"); }, "node 1 'sym_const_0': has no shape"},
      {[](json& g) { g["nodes"][1]["attrs"]["dtype"] = json::array({json::array({"float32", "int8"})}); },
       "1 shapes but 2 dtypes"},
      {[](json& g) { g["nodes"][3]["attrs"]["dtype"] = {{"float33"}}; }, "attribute 'dtype'"},
      {[](json& g) { g["nodes"][3]["attrs"]["shape"] = {{{-4}}}; }, "a dimension is not a non-negative integer"},
      {[](json& g) { g["nodes"][3]["attrs"]["strides"] = {"1", "1"}; }, "attribute 'strides': expected a list holding one list"},
      {[](json& g) { g["nodes"][3]["attrs"]["num_inputs"] = "2"; }, "num_inputs is 2 but the node has 1"},
      {[](json& g) { g["nodes"][0]["inputs"] = {{1, 0}}; }, "an input node cannot have inputs"},
      {[](json& g) { g["arg_nodes"] = {0, 3}; }, "arg_nodes[1]: node 3 is not an input or constant node listed once"},
      {[](json& g) { g["arg_nodes"] = {0}; }, "node 1 'sym_const_0': is an input or constant but not in arg_nodes"},
      {[](json& g) { g["heads"] = {{4, 0}}; }, "heads[0]: refers to output 0 of node 4, which does not exist"},
      {[](json& g) { g["heads"] = json::array(); }, "the graph has no outputs"},
      {[](json& g) { g["node_row_ptr"] = {0, 1, 2, 3, 5}; }, "node_row_ptr: does not match"},
  };
  for (const Case& c : cases) {
    json g = Subgraph();
    c.edit(g);
    EXPECT_THAT(ErrorOf([&] { ParseJsonGraph(g.dump()); }), HasSubstr(c.message)) << c.message;
  }
  EXPECT_THAT(ErrorOf([] { ParseJsonGraph("{\"nodes\": ["); }), HasSubstr("external graph JSON: not valid JSON"));
  std::string text = Subgraph().dump();
  for (size_t n = 0; n < text.size(); n += 7) {  // every truncation is an error, never a crash
    EXPECT_THROW(ParseJsonGraph(text.substr(0, n)), Error) << n;
  }
}

TEST(JsonRuntime, ItsFunctionsCheckTheirArgumentsAndRunOnceInitialized) {
  Module m(TestModule());
  EXPECT_EQ(m.GetFunction("get_symbol")().AsString(), "sym");
  EXPECT_EQ(m.GetFunction("get_const_vars")().AsString(), "sym_const_0");
  EXPECT_FALSE(m.GetFunction("other").defined());
  NDArray x = test::FloatArray({4}, {-2, -1, 1, 2}), c = test::FloatArray({4}, {1, 2, 3, 4});
  NDArray out = NDArray::Empty({4}, kFloat32);
  PackedFunc run = m.GetFunction("sym");
  EXPECT_THAT(ErrorOf([&] { run(x, out); }), HasSubstr("sym: not initialized: its 1 constants were not given"));
  PackedFunc init = m.GetFunction("__init_sym");
  EXPECT_THAT(ErrorOf([&] { init(); }), HasSubstr("__init_sym: expected 1 constants, got 0"));
  EXPECT_THAT(ErrorOf([&] { init(test::FloatArray({2}, {1, 2})); }),
              HasSubstr("constant 'sym_const_0' is float32[2], expected a compact float32[4]"));
  init(c);
  init(x);  // a second initialization changes nothing
  run(x, out);
  EXPECT_EQ(test::ToVector(out), (std::vector<float>{0, 0, 4, 10}));  // relu(x * c + x)
  EXPECT_THAT(ErrorOf([&] { run(x); }), HasSubstr("sym: expected 2 arguments, got 1"));
  EXPECT_THAT(ErrorOf([&] { run(test::FloatArray({2, 2}, {1, 2, 3, 4}), out); }),
              HasSubstr("input 0 is float32[2, 2], expected a compact float32[4]"));
}

TEST(JsonRuntime, ConcurrentFirstInitializationsInitializeOnce) {
  auto module = TestModule();
  Module m(module);
  int before = test::TestJsonModule::InitCalls();
  NDArray c = test::FloatArray({4}, {1, 2, 3, 4});
  std::vector<std::thread> threads;
  std::vector<std::vector<float>> results(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      m.GetFunction("__init_sym")(c);
      NDArray x = test::FloatArray({4}, {1, 1, 1, static_cast<float>(t)});
      NDArray out = NDArray::Empty({4}, kFloat32);
      m.GetFunction("sym")(x, out);
      results[t] = test::ToVector(out);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(test::TestJsonModule::InitCalls(), before + 1);
  for (int t = 0; t < 4; ++t) EXPECT_EQ(results[t], (std::vector<float>{2, 3, 4, 5.0f * t})) << t;
}

TEST(JsonRuntime, BinaryFormIsSymbolGraphAndConstantNames) {
  auto module = TestModule();
  ByteWriter writer;
  module->SaveToBinary(writer);
  ByteWriter expected;  // TVM v0.19 JSONRuntimeBase::SaveToBinary
  expected.WriteString("sym");
  expected.WriteString(Subgraph().dump());
  expected.WriteStringVector({"sym_const_0"});
  EXPECT_EQ(writer.bytes(), expected.bytes());
  ByteReader reader(writer.bytes(), "test");
  JsonModuleFields fields = ReadJsonModuleFields(reader);
  EXPECT_EQ(fields.symbol, "sym");
  EXPECT_EQ(fields.const_names, (std::vector<std::string>{"sym_const_0"}));
  EXPECT_THAT(ErrorOf([] { test::TestJsonModule("sym", Subgraph().dump(), {"other"}); }),
              HasSubstr("its graph's constants (1) are not the constant names it was given (1) in order"));
}

// Two external modules, a with one constant and b with one, under one const loader.
struct Tree {
  Module loader;
  int inits_before = 0;
};
Tree MakeTree() {
  Tree t;
  t.inits_before = test::TestJsonModule::InitCalls();
  t.loader = CreateConstLoaderModule({{"a_const_0", test::FloatArray({4}, {1, 2, 3, 4})},
                                      {"b_const_0", test::FloatArray({4}, {-1, -1, -1, -1})}},
                                     {{"a", {"a_const_0"}}, {"b", {"b_const_0"}}});
  t.loader->Import(Module(TestModule("a", "a_const_0")));
  t.loader->Import(Module(TestModule("b", "b_const_0")));
  return t;
}

TEST(ConstLoader, InitializesEachSymbolWithItsConstantsOnFirstLookupAndForwards) {
  Tree t = MakeTree();
  EXPECT_EQ(t.loader.GetFunction("get_const_var_ndarray")().AsInt(), 2);
  NDArray x = test::FloatArray({4}, {1, 1, 1, 1});
  NDArray out = NDArray::Empty({4}, kFloat32);
  t.loader.GetFunction("a")(x, out);
  EXPECT_EQ(test::ToVector(out), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(test::TestJsonModule::InitCalls(), t.inits_before + 1);  // b is not initialized yet
  EXPECT_EQ(t.loader.GetFunction("get_const_var_ndarray")().AsInt(), 2);
  t.loader.GetFunction("b")(x, out);
  EXPECT_EQ(test::ToVector(out), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(test::TestJsonModule::InitCalls(), t.inits_before + 2);
  EXPECT_EQ(t.loader.GetFunction("get_const_var_ndarray")().AsInt(), 0);  // all handed over
  EXPECT_FALSE(t.loader.GetFunction("nothing").defined());
}

TEST(ConstLoader, BinaryFormIsTvmsByteForByte) {
  Tree t = MakeTree();
  ByteWriter writer;
  t.loader->SaveToBinary(writer);
  // TVM v0.19 ConstLoaderModuleNode::SaveToBinary: names, count, arrays, symbols, count, lists.
  ByteWriter expected;
  expected.WriteStringVector({"a_const_0", "b_const_0"});
  expected.Write<uint64_t>(2);
  WriteNDArray(expected, test::FloatArray({4}, {1, 2, 3, 4}));
  WriteNDArray(expected, test::FloatArray({4}, {-1, -1, -1, -1}));
  expected.WriteStringVector({"a", "b"});
  expected.Write<uint64_t>(2);
  expected.WriteStringVector({"a_const_0"});
  expected.WriteStringVector({"b_const_0"});
  EXPECT_EQ(writer.bytes(), expected.bytes());

  ByteReader reader(expected.bytes(), "test");
  Module loaded = LoadConstLoaderModule(reader);
  loaded->Import(Module(TestModule("a", "a_const_0")));
  NDArray x = test::FloatArray({4}, {2, 2, 2, 2});
  NDArray out = NDArray::Empty({4}, kFloat32);
  loaded.GetFunction("a")(x, out);
  EXPECT_EQ(test::ToVector(out), (std::vector<float>{4, 6, 8, 10}));
  std::string bytes = expected.bytes();
  for (size_t n = 0; n < bytes.size(); n += 5) {  // every truncation is an error
    ByteReader truncated(std::string_view(bytes).substr(0, n), "test");
    EXPECT_THROW(LoadConstLoaderModule(truncated), Error) << n;
  }
}

TEST(ConstLoader, InconsistentContentsAreClearErrors) {
  EXPECT_THAT(ErrorOf([] { CreateConstLoaderModule({}, {{"a", {"a_const_0"}}}); }),
              HasSubstr("the function 'a' takes the constant 'a_const_0', which it does not hold"));
  EXPECT_THAT(ErrorOf([] {
                CreateConstLoaderModule({{"c", test::FloatArray({1}, {1})}, {"c", test::FloatArray({1}, {2})}}, {});
              }),
              HasSubstr("the constant 'c' is listed twice"));
  Module orphan = CreateConstLoaderModule({{"c", test::FloatArray({1}, {1})}}, {{"lonely", {"c"}}});
  orphan->Import(Module(TestModule("a", "a_const_0")));
  EXPECT_THAT(ErrorOf([&] { orphan.GetFunction("lonely"); }), HasSubstr("no module defines __init_lonely"));
  ByteWriter w;
  w.WriteStringVector({"a", "b"});
  w.Write<uint64_t>(1);
  ByteReader r(w.bytes(), "test");
  EXPECT_THAT(ErrorOf([&] { LoadConstLoaderModule(r); }), HasSubstr("2 constant names but 1 arrays"));
}

// ---- TVM's Array<NDArray> at __init_ ---------------------------------------------------------

template <typename T>
T At(const void* object, size_t offset) {
  T value;
  std::memcpy(&value, static_cast<const char*>(object) + offset, sizeof(T));
  return value;
}

TEST(TvmObjects, ConstantsArePassedInTvmsArrayLayout) {
  // TVM v0.19 (include/tvm/runtime/object.h, container/array.h, ndarray.h on 64-bit targets): an
  // object starts with its type index (u32), reference count (i32) and deleter; ArrayNode adds
  // size and capacity (i64), its element references follow at 32; an NDArray container's
  // DLTensor is at 16, manager_ctx at 64, its shape reference at 72. kRuntimeArray is 4,
  // kRuntimeNDArray 2.
  NDArray a = test::FloatArray({2, 2}, {1, 2, 3, 4}), b = test::FloatArray({3}, {5, 6, 7});
  TvmNDArrayArray array({a, b});
  const void* node = array.handle();
  EXPECT_EQ(At<uint32_t>(node, 0), 4u);
  EXPECT_EQ(At<int32_t>(node, 4), 1);
  EXPECT_EQ(At<int64_t>(node, 16), 2);
  EXPECT_EQ(At<int64_t>(node, 24), 2);
  for (int i = 0; i < 2; ++i) {
    const NDArray& wanted = i == 0 ? a : b;
    const void* container = At<const void*>(node, 32 + 8 * i);
    EXPECT_EQ(At<uint32_t>(container, 0), 2u) << i;
    EXPECT_EQ(At<int32_t>(container, 4), 1) << i;
    EXPECT_EQ(At<void*>(container, 16), wanted.data()) << i;                      // DLTensor::data
    EXPECT_EQ(At<int32_t>(container, 16 + 16), wanted->ndim) << i;               // DLTensor::ndim
    EXPECT_EQ(At<const int64_t*>(container, 16 + 24)[0], wanted.shape()[0]) << i;  // DLTensor::shape
    EXPECT_EQ(At<void*>(container, 72), nullptr) << i;                           // no ShapeTuple
  }
  // Read back, kiln's own containers are shared, not copied.
  std::vector<NDArray> read = NDArraysOfTvmArray(array.handle(), "the argument");
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].data(), a.data());
  EXPECT_EQ(test::ToVector(read[1]), (std::vector<float>{5, 6, 7}));
}

TEST(TvmObjects, ArraysMadeElsewhereAreCopiedAndOtherObjectsRefused) {
  // An array as another runtime made it: its own deleter, its memory its own.
  float data[3] = {1, 2, 3};
  int64_t shape[1] = {3};
  KilnTvmNDArray container{{2, 1, nullptr}, {data, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0}, nullptr, nullptr};
  struct {
    KilnTvmArray node;
    KilnTvmObject* elements[1];
  } foreign{{{4, 1, nullptr}, 1, 1}, {&container.object}};
  std::vector<NDArray> read = NDArraysOfTvmArray(&foreign, "the argument");
  ASSERT_EQ(read.size(), 1u);
  EXPECT_NE(read[0].data(), static_cast<void*>(data));
  EXPECT_EQ(test::ToVector(read[0]), (std::vector<float>{1, 2, 3}));
  container.object.type_index = 7;
  EXPECT_THAT(ErrorOf([&] { NDArraysOfTvmArray(&foreign, "the argument"); }),
              HasSubstr("the argument: element 0 is not an NDArray"));
  foreign.node.object.type_index = 5;  // a Map
  EXPECT_THAT(ErrorOf([&] { NDArraysOfTvmArray(&foreign, "the argument"); }),
              HasSubstr("the argument is an object of type index 5, expected TVM's Array (4)"));
}

TEST(TvmObjects, JsonRuntimeTakesItsConstantsAsAnArrayAndReturnsZero) {
  Module m(TestModule());
  TvmNDArrayArray constants({test::FloatArray({4}, {1, 2, 3, 4})});
  TVMValue value;
  value.v_handle = constants.handle();
  int code = kTVMObjectHandle;
  RetValue result;
  m.GetFunction("__init_sym").CallPacked(Args(&value, &code, 1), &result);
  EXPECT_EQ(result.AsInt(), 0);  // TVM's const loader reads `int ret = init(array)`
  NDArray out = NDArray::Empty({4}, kFloat32);
  m.GetFunction("sym")(test::FloatArray({4}, {-2, -1, 1, 2}), out);
  EXPECT_EQ(test::ToVector(out), (std::vector<float>{0, 0, 4, 10}));  // relu(x * c + x)
}

// A module whose __init_sym takes the constants only as earlier kiln versions passed them, one
// tensor each (the functions those versions' ccompiler wrote), or not at all (`refuses`).
class EarlierInitModule final : public ModuleNode {
 public:
  explicit EarlierInitModule(bool refuses) : refuses_(refuses) {}
  const char* type_key() const override { return "kiln_test_earlier_init"; }
  PackedFunc GetFunction(const std::string& name) override {
    if (name == "__init_sym") {
      return PackedFunc([this](const Args& args, RetValue*) {
        Check(!refuses_, "__init_sym: refuses every argument");
        Check(args.size() == 1 && args[0].code() != kTVMObjectHandle, "__init_sym: argument 0 is not a tensor");
        received = test::ToVector(args[0].AsNDArray());
      });
    }
    if (name == "sym") return PackedFunc([](const Args&, RetValue*) {});
    return PackedFunc();
  }
  std::vector<float> received;

 private:
  bool refuses_;
};

TEST(ConstLoader, InitFunctionsOfEarlierKilnLibrariesGetOneTensorPerConstant) {
  for (bool refuses : {false, true}) {
    Module loader = CreateConstLoaderModule({{"sym_const_0", test::FloatArray({2}, {7, 8})}}, {{"sym", {"sym_const_0"}}});
    auto earlier = std::make_shared<EarlierInitModule>(refuses);
    loader->Import(Module(earlier));
    if (!refuses) {
      EXPECT_TRUE(loader.GetFunction("sym").defined());
      EXPECT_EQ(earlier->received, (std::vector<float>{7, 8}));
    } else {  // the error of TVM's convention, the one tried first
      EXPECT_THAT(ErrorOf([&] { loader.GetFunction("sym"); }), HasSubstr("__init_sym: refuses every argument"));
    }
  }
}

}  // namespace
}  // namespace kiln::runtime
