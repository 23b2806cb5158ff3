// The oneDNN backend from C++: a dnnl_json module and a const loader laid out byte for byte as
// TVM v0.19 writes them (the JSON as TVM's DNNL serializer writes it, Relay's attributes
// included) load through libkiln_dnnl and run; a library whose convolutions run in oneDNN runs in
// two executors at once. In a build without oneDNN (KILN_USE_DNNL=OFF), asking for the codegen and
// loading such a module are clear errors instead.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <thread>

#include "backend/build.h"
#include "backend/contrib/dnnl/dnnl_codegen.h"
#include "backend/partition.h"
#include "ir/text.h"
#include "runtime/const_loader_module.h"
#include "runtime/json_runtime.h"
#include "runtime/graph_executor_module.h"
#include "runtime/params.h"
#include "transform/merge_composite.h"
#include "tests/float_arrays.h"
#include "tests/shared_object_cache.h"

namespace kiln::backend {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// relu(conv2d(x, w) + b) over a 1x2x3x3 input with two 2x2 filters, no padding: one composite
// node with the attributes Relay's conv2d has, as TVM's DNNL serializer writes it.
const char* kTvmGraph = R"({"nodes": [
  {"op": "input", "name": "dnnl_0_i0", "attrs": {"dtype": [["float32"]], "shape": [[[1, 2, 3, 3]]]}},
  {"op": "const", "name": "dnnl_tvmgen_default_dnnl_main_0_const_0", "attrs": {"dtype": [["float32"]], "shape": [[[2, 2, 2, 2]]]}},
  {"op": "const", "name": "dnnl_tvmgen_default_dnnl_main_0_const_1", "attrs": {"dtype": [["float32"]], "shape": [[[2]]]}},
  {"op": "kernel", "name": "dnnl.conv2d_bias_relu", "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]],
   "attrs": {"num_outputs": "1", "num_inputs": "3", "channels": [["2"]], "kernel_size": [["2", "2"]],
             "strides": [["1", "1"]], "padding": [["0", "0", "0", "0"]], "dilation": [["1", "1"]], "groups": [["1"]],
             "data_layout": [["NCHW"]], "kernel_layout": [["OIHW"]], "out_layout": [[""]], "out_dtype": [[""]],
             "shape": [[[1, 2, 2, 2]]], "dtype": [["float32"]]}}],
 "arg_nodes": [0, 1, 2], "heads": [[3, 0, 0]], "node_row_ptr": [0, 1, 2, 3, 4],
 "symbol": "dnnl_tvmgen_default_dnnl_main_0"})";

std::vector<float> ConvReference(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b) {
  std::vector<float> out;
  for (int o = 0; o < 2; ++o) {
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        float sum = b[o];
        for (int c = 0; c < 2; ++c) {
          for (int u = 0; u < 2; ++u) {
            for (int v = 0; v < 2; ++v) sum += x[c * 9 + (i + u) * 3 + (j + v)] * w[((o * 2 + c) * 2 + u) * 2 + v];
          }
        }
        out.push_back(std::max(sum, 0.0f));
      }
    }
  }
  return out;
}

// relu(conv2d_transpose(x, w) + b), stride 2 with output_padding, as TVM's DNNL serializer writes
// it: Relay's conv2d_transpose attributes, the weight IOHW.
const char* kTvmDeconvGraph = R"({"nodes": [
  {"op": "input", "name": "dnnl_0_i0", "attrs": {"dtype": [["float32"]], "shape": [[[1, 2, 3, 3]]]}},
  {"op": "const", "name": "dnnl_tvmgen_default_dnnl_main_0_const_0", "attrs": {"dtype": [["float32"]], "shape": [[[2, 1, 2, 2]]]}},
  {"op": "const", "name": "dnnl_tvmgen_default_dnnl_main_0_const_1", "attrs": {"dtype": [["float32"]], "shape": [[[1]]]}},
  {"op": "kernel", "name": "dnnl.deconv2d_bias_relu", "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]],
   "attrs": {"num_outputs": "1", "num_inputs": "3", "channels": [["1"]], "kernel_size": [["2", "2"]],
             "strides": [["2", "2"]], "padding": [["0", "0", "0", "0"]], "output_padding": [["1", "1"]],
             "dilation": [["1", "1"]], "groups": [["1"]], "data_layout": [["NCHW"]], "kernel_layout": [["IOHW"]],
             "out_layout": [[""]], "out_dtype": [[""]], "shape": [[[1, 1, 7, 7]]], "dtype": [["float32"]]}}],
 "arg_nodes": [0, 1, 2], "heads": [[3, 0, 0]], "node_row_ptr": [0, 1, 2, 3, 4],
 "symbol": "dnnl_tvmgen_default_dnnl_main_0"})";

// What kiln writes for the external function `external` reads as `tvm_graph`: the composite's
// node carries Relay's attributes, and the constants are named as TVM's DNNL serializer names them.
void ExpectJsonOfAsTvmWritesIt(const ir::Expr& external, const char* tvm_graph) {
  ExternalModule m = DnnlGenerate("tvmgen_default_dnnl_main_0", external);
  runtime::ByteWriter bytes;
  m.module->SaveToBinary(bytes);
  runtime::ByteReader reader(bytes.bytes(), "dnnl_json");
  runtime::JsonModuleFields fields = runtime::ReadJsonModuleFields(reader);
  EXPECT_EQ(fields.symbol, "tvmgen_default_dnnl_main_0");
  EXPECT_EQ(fields.const_names, (std::vector<std::string>{"dnnl_tvmgen_default_dnnl_main_0_const_0",
                                                          "dnnl_tvmgen_default_dnnl_main_0_const_1"}));
  runtime::JsonGraph ours = runtime::ParseJsonGraph(fields.graph_json);
  runtime::JsonGraph tvms = runtime::ParseJsonGraph(tvm_graph);
  ASSERT_EQ(ours.nodes.size(), tvms.nodes.size());
  for (size_t n = 0; n < tvms.nodes.size(); ++n) {
    EXPECT_EQ(ours.nodes[n].op, tvms.nodes[n].op) << n;
    EXPECT_EQ(ours.nodes[n].name, tvms.nodes[n].name) << n;
    EXPECT_EQ(ours.nodes[n].shapes, tvms.nodes[n].shapes) << n;
    for (const auto& [key, values] : tvms.nodes[n].attrs) {
      auto it = ours.nodes[n].attrs.find(key);
      ASSERT_NE(it, ours.nodes[n].attrs.end()) << "node " << n << " lacks " << key;
      EXPECT_EQ(it->second, values) << "node " << n << " attribute " << key;
    }
  }
}

void ExpectJsonAsTvmWritesIt(const char* model, const char* tvm_graph) {
  ir::Expr main = PartitionForCodegen(ir::ParseFunction(model), "dnnl", {}, {},
                                      {{"dnnl", DnnlSupports, DnnlGenerate, DnnlPatterns}});
  ExpectJsonOfAsTvmWritesIt(main->As<ir::FunctionNode>()->body->As<ir::CallNode>()->function, tvm_graph);
}

TEST(Dnnl, TheJsonKilnWritesHasRelaysNamesAndAttributes) {
  ExpectJsonAsTvmWritesIt(R"(fn (%x: Tensor[(1, 2, 3, 3), float32]) {
    %w = const(Tensor[(2, 2, 2, 2), float32], [1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8]);
    %b = const(Tensor[(2), float32], [0.5, -4]);
    %0 = nn.conv2d(%x, %w);
    %1 = nn.bias_add(%0, %b);
    %2 = nn.relu(%1);
    %2
  })", kTvmGraph);
  ExpectJsonAsTvmWritesIt(R"(fn (%x: Tensor[(1, 2, 3, 3), float32]) {
    %w = const(Tensor[(2, 1, 2, 2), float32], [1, 2, 3, 4, 5, 6, 7, 8]);
    %b = const(Tensor[(1), float32], [0.5]);
    %0 = nn.conv2d_transpose(%x, %w, strides=[2, 2], output_padding=[1, 1]);
    %1 = nn.bias_add(%0, %b);
    %2 = nn.relu(%1);
    %2
  })", kTvmDeconvGraph);
}

// The composite names MergeComposite gives `model`'s calls when partitioning it for dnnl, in order.
std::vector<std::string> CompositesOf(const char* model) {
  ir::Expr main = PartitionForCodegen(ir::ParseFunction(model), "dnnl", {}, {},
                                      {{"dnnl", DnnlSupports, DnnlGenerate, DnnlPatterns}});
  std::vector<std::string> names;
  for (const ir::Expr& e : ir::PostOrder(main->As<ir::FunctionNode>()->body)) {
    const auto* call = e->As<ir::CallNode>();
    if (call == nullptr || call->function == nullptr) continue;
    for (const ir::Expr& inner : ir::PostOrder(call->function->As<ir::FunctionNode>()->body)) {
      const auto* c = inner->As<ir::CallNode>();
      if (c == nullptr) continue;
      names.push_back(c->op != nullptr ? c->op->name : transform::CompositeName(c->function));
    }
  }
  return names;
}

// A dense layer's residual add is a sum post-op (TVM's dnnl.dense_bias_sum); an add that
// broadcasts a smaller value is not (the sum adds a value of the result's shape), and stays a
// binary add after the layer.
TEST(Dnnl, ASumPostOpAddsOnlyAValueOfTheResultsShape) {
  EXPECT_EQ(CompositesOf(R"(fn (%x: Tensor[(4, 3), float32], %r: Tensor[(4, 2), float32]) {
    %w = const(Tensor[(2, 3), float32], [1, 2, 3, 4, 5, 6]);
    %b = const(Tensor[(2), float32], [0.5, -4]);
    %0 = nn.dense(%x, %w);
    %1 = add(%0, %b);
    %2 = add(%r, %1);
    %2
  })"), (std::vector<std::string>{"dnnl.dense_bias_sum"}));
  EXPECT_EQ(CompositesOf(R"(fn (%x: Tensor[(1, 2, 3, 3), float32], %r: Tensor[(1, 2, 1, 1), float32]) {
    %w = const(Tensor[(2, 2, 1, 1), float32], [1, 2, 3, 4]);
    %b = const(Tensor[(2), float32], [0.5, -4]);
    %0 = nn.conv2d(%x, %w);
    %1 = nn.bias_add(%0, %b);
    %2 = add(%1, %r);
    %2
  })"), (std::vector<std::string>{"dnnl.conv2d_bias", "add"}));
}

// A dense layer on 3-D data, its bias and a residual sum, as TVM's DNNL runtime takes it (it has
// no form for dense on data of rank 3 or more: "could not reshape a memory descriptor"): the data
// reshaped to [M, K] on the host, the layer and its post-ops on [M, N] in one dnnl.dense_bias_sum
// node, the result reshaped back on the host, as TVM's ONNX frontend and partition_for_dnnl
// write it.
const char* kDenseOn3D = R"(fn (%x: Tensor[(1, 4, 3), float32], %r: Tensor[(1, 4, 2), float32]) {
  %w = const(Tensor[(2, 3), float32], [1, 2, 3, -1, 0.5, 0.25]);
  %b = const(Tensor[(2), float32], [0.5, -4]);
  %0 = nn.dense(%x, %w);
  %1 = add(%0, %b);
  %2 = add(%1, %r);
  %2
})";

const char* kTvmDenseGraph = R"({"nodes": [
  {"op": "input", "name": "dnnl_0_i0", "attrs": {"dtype": [["float32"]], "shape": [[[4, 3]]]}},
  {"op": "input", "name": "dnnl_0_i1", "attrs": {"dtype": [["float32"]], "shape": [[[4, 2]]]}},
  {"op": "const", "name": "dnnl_tvmgen_default_dnnl_main_0_const_0", "attrs": {"dtype": [["float32"]], "shape": [[[2, 3]]]}},
  {"op": "const", "name": "dnnl_tvmgen_default_dnnl_main_0_const_1", "attrs": {"dtype": [["float32"]], "shape": [[[2]]]}},
  {"op": "kernel", "name": "dnnl.dense_bias_sum", "inputs": [[0, 0, 0], [2, 0, 0], [3, 0, 0], [1, 0, 0]],
   "attrs": {"num_outputs": "1", "num_inputs": "4", "shape": [[[4, 2]]], "dtype": [["float32"]]}}],
 "arg_nodes": [0, 1, 2, 3], "heads": [[4, 0, 0]], "node_row_ptr": [0, 1, 2, 3, 4, 5],
 "symbol": "dnnl_tvmgen_default_dnnl_main_0"})";

TEST(Dnnl, DenseOnThreeDimensionalDataIsTwoDimensionalAsTvmsRuntimeTakesIt) {
  const std::vector<ExternalCodegen> table = {{"dnnl", DnnlSupports, DnnlGenerate, DnnlPatterns, DnnlDenseOn2D}};
  ir::Expr main = PartitionForCodegen(ir::ParseFunction(kDenseOn3D), "dnnl", {}, {}, table);
  // reshape(external(reshape(x), reshape(r))) on the host: one external function, of 2-D data.
  const auto* back = main->As<ir::FunctionNode>()->body->As<ir::CallNode>();
  ASSERT_TRUE(back != nullptr && back->op != nullptr);
  EXPECT_EQ(back->op->name, "reshape");
  EXPECT_EQ(back->type().tensor().shape, (std::vector<int64_t>{1, 4, 2}));
  const auto* external = back->args[0]->As<ir::CallNode>();
  ASSERT_TRUE(external != nullptr && external->function != nullptr);
  for (const ir::Expr& arg : external->args) {
    EXPECT_EQ(arg->As<ir::CallNode>()->op->name, "reshape");
    EXPECT_EQ(arg->type().tensor().ndim(), 2);
  }
  ExpectJsonOfAsTvmWritesIt(external->function, kTvmDenseGraph);
#ifdef KILN_TEST_HAS_DNNL
  // And it computes dense + bias + residual: x w^T + b + r.
  fs::path dir = fs::path(::testing::TempDir()) / ("kiln_dnnl_dense_" + std::to_string(getpid()));
  fs::create_directories(dir);
  BuildOptions options;
  options.compiler.cache_dir = test::SharedObjectCache();
  Build(main, options).ExportLibrary((dir / "dense.so").string());
  auto exec = runtime::GetGraphExecutor(
      runtime::LoadModuleFromFile((dir / "dense.so").string()).GetFunction("default")(runtime::kCPU).AsModule());
  std::vector<float> x = {1, 0, -1, 2, 0.5f, 0, -3, 1, 1, 0, 0, 4}, r = {1, 2, 3, 4, 5, 6, 7, 8};
  exec->SetInput(0, *test::FloatArray({1, 4, 3}, x).get());
  exec->SetInput(1, *test::FloatArray({1, 4, 2}, r).get());
  exec->Run();
  std::vector<float> got = test::ToVector(exec->GetOutput(0));
  const float w[2][3] = {{1, 2, 3}, {-1, 0.5f, 0.25f}}, b[2] = {0.5f, -4};
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 2; ++j) {
      float want = b[j] + r[i * 2 + j];
      for (int k = 0; k < 3; ++k) want += x[i * 3 + k] * w[j][k];
      EXPECT_NEAR(got[i * 2 + j], want, 1e-5) << i << "," << j;
    }
  }
  fs::remove_all(dir);
#endif
}

// The rewrite alone computes what the model does, on the host: operands of each kind (one value
// per column, a scalar, the result's shape; first or second: subtract and divide keep their
// order), an activation with attributes, and ops it must leave (a transpose) stay after the
// reshape back.
TEST(Dnnl, DenseOn2DComputesWhatTheModelDoes) {
  const char* model = R"(fn (%x: Tensor[(2, 3, 4), float32], %r: Tensor[(2, 3, 2), float32]) {
    %w = const(Tensor[(2, 4), float32], [1, 2, 3, 4, -1, 0.5, 0.25, -2]);
    %c = const(Tensor[(1, 1, 2), float32], [0.5, -1]);
    %s = const(Tensor[(), float32], [2]);
    %0 = nn.dense(%x, %w);
    %1 = subtract(%c, %0);
    %2 = divide(%1, %s);
    %3 = clip(%2, a_min=-3, a_max=2.5);
    %4 = subtract(%3, %r);
    %5 = transpose(%4, axes=[2, 0, 1]);
    %5
  })";
  ir::Expr original = ir::ParseFunction(model);
  ir::Expr rewritten = DnnlDenseOn2D(original);
  const auto* transpose = rewritten->As<ir::FunctionNode>()->body->As<ir::CallNode>();
  const auto* back = transpose->args[0]->As<ir::CallNode>();
  ASSERT_TRUE(back != nullptr && back->op != nullptr);
  EXPECT_EQ(back->op->name, "reshape");  // after every elementwise op, before the transpose
  EXPECT_EQ(back->args[0]->type().tensor().shape, (std::vector<int64_t>{6, 2}));
  fs::path dir = fs::path(::testing::TempDir()) / ("kiln_dnnl_dense_2d_" + std::to_string(getpid()));
  fs::create_directories(dir);
  BuildOptions options;
  options.compiler.cache_dir = test::SharedObjectCache();
  std::vector<float> x, r;
  for (int i = 0; i < 24; ++i) x.push_back(0.25f * static_cast<float>((i * 7) % 13) - 1.5f);
  for (int i = 0; i < 12; ++i) r.push_back(0.5f * static_cast<float>(i % 5) - 1.0f);
  std::vector<std::vector<float>> outputs;
  for (const ir::Expr& f : {original, rewritten}) {
    std::string path = (dir / ("m" + std::to_string(outputs.size()) + ".so")).string();
    Build(f, options).ExportLibrary(path);
    auto exec = runtime::GetGraphExecutor(runtime::LoadModuleFromFile(path).GetFunction("default")(runtime::kCPU).AsModule());
    exec->SetInput(0, *test::FloatArray({2, 3, 4}, x).get());
    exec->SetInput(1, *test::FloatArray({2, 3, 2}, r).get());
    exec->Run();
    outputs.push_back(test::ToVector(exec->GetOutput(0)));
  }
  ASSERT_EQ(outputs[0].size(), 12u);
  for (size_t i = 0; i < outputs[0].size(); ++i) EXPECT_NEAR(outputs[1][i], outputs[0][i], 1e-6) << i;
  fs::remove_all(dir);
}

// Loads a dnnl_json module of `graph` under a const loader holding `constants`, both laid out as
// TVM's JSONRuntimeBase and ConstLoaderModuleNode write them; returns the loader.
runtime::Module LoadAsTvmWritesIt(const char* graph, const std::vector<runtime::NDArray>& constants) {
  const std::string symbol = "tvmgen_default_dnnl_main_0";
  std::vector<std::string> names;
  for (size_t i = 0; i < constants.size(); ++i) names.push_back("dnnl_" + symbol + "_const_" + std::to_string(i));
  runtime::ByteWriter dnnl_bytes;  // JSONRuntimeBase::SaveToBinary: symbol, graph, const names
  dnnl_bytes.WriteString(symbol);
  dnnl_bytes.WriteString(graph);
  dnnl_bytes.WriteStringVector(names);
  runtime::ByteWriter loader_bytes;  // ConstLoaderModuleNode::SaveToBinary
  loader_bytes.WriteStringVector(names);
  loader_bytes.Write<uint64_t>(constants.size());
  for (const runtime::NDArray& c : constants) runtime::WriteNDArray(loader_bytes, c);
  loader_bytes.WriteStringVector({symbol});
  loader_bytes.Write<uint64_t>(1);
  loader_bytes.WriteStringVector(names);
  runtime::ByteReader dnnl_reader(dnnl_bytes.bytes(), "dnnl_json entry");
  runtime::Module dnnl = runtime::GetGlobalFunction("runtime.module.loadbinary_dnnl_json")(
      static_cast<void*>(&dnnl_reader)).AsModule();
  runtime::ByteReader loader_reader(loader_bytes.bytes(), "const_loader entry");
  runtime::Module loader = runtime::LoadConstLoaderModule(loader_reader);
  loader->Import(dnnl);
  return loader;
}

// relu(conv2d_transpose(x, w) + b) of kTvmDeconvGraph by its definition: each input element
// scatters x * w over a 2x2 window at twice its position; output_padding adds a last row and
// column that only the bias reaches.
std::vector<float> DeconvReference(const std::vector<float>& x, const std::vector<float>& w, float b) {
  std::vector<float> out(49, b);
  for (int c = 0; c < 2; ++c) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) {
        for (int u = 0; u < 2; ++u) {
          for (int v = 0; v < 2; ++v) out[(2 * i + u) * 7 + 2 * j + v] += x[c * 9 + i * 3 + j] * w[c * 4 + u * 2 + v];
        }
      }
    }
  }
  for (float& o : out) o = std::max(o, 0.0f);
  return out;
}

TEST(Dnnl, ModulesLaidOutAsTvmWritesThemLoadAndRun) {
  std::vector<float> x, w, b = {0.5f, -4.0f};
  for (int i = 0; i < 18; ++i) x.push_back(0.25f * static_cast<float>(i % 7) - 0.5f);
  for (int i = 0; i < 16; ++i) w.push_back(0.1f * static_cast<float>(i) - 0.7f);
  std::string why;
  bool loaded = runtime::LoadRuntimeLibraryFor("dnnl_json", &why);
#ifdef KILN_TEST_HAS_DNNL
  ASSERT_TRUE(loaded) << why;
  if (getenv("OMP_WAIT_POLICY") == nullptr) {  // OpenMP's workers spin briefly, then sleep
    EXPECT_STREQ(getenv("GOMP_SPINCOUNT"), "10000");
  }
  runtime::Module conv = LoadAsTvmWritesIt(kTvmGraph, {test::FloatArray({2, 2, 2, 2}, w), test::FloatArray({2}, b)});
  runtime::NDArray out = runtime::NDArray::Empty({1, 2, 2, 2}, runtime::kFloat32);
  conv.GetFunction("tvmgen_default_dnnl_main_0")(test::FloatArray({1, 2, 3, 3}, x), out);
  std::vector<float> got = test::ToVector(out), want = ConvReference(x, w, b);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f) << i;
  EXPECT_GT(*std::max_element(want.begin(), want.end()), 0.0f);  // not all clipped by relu

  // The transposed convolution: an IOHW weight [2, 1, 2, 2], stride 2, output_padding 1.
  std::vector<float> dw(w.begin(), w.begin() + 8);
  runtime::Module deconv = LoadAsTvmWritesIt(kTvmDeconvGraph, {test::FloatArray({2, 1, 2, 2}, dw),
                                                                test::FloatArray({1}, {0.25f})});
  runtime::NDArray deconv_out = runtime::NDArray::Empty({1, 1, 7, 7}, runtime::kFloat32);
  deconv.GetFunction("tvmgen_default_dnnl_main_0")(test::FloatArray({1, 2, 3, 3}, x), deconv_out);
  got = test::ToVector(deconv_out);
  want = DeconvReference(x, dw, 0.25f);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f) << i;
  EXPECT_GT(*std::max_element(want.begin(), want.end()), 0.25f);

  // A weight layout the runtime does not read is a clear error, not a wrong result.
  std::string oihw = kTvmDeconvGraph;
  oihw.replace(oihw.find("[[\"IOHW\"]]"), 10, "[[\"OIHW\"]]");
  runtime::Module wrong = LoadAsTvmWritesIt(oihw.c_str(), {test::FloatArray({2, 1, 2, 2}, dw),
                                                           test::FloatArray({1}, {0.25f})});
  try {
    wrong.GetFunction("tvmgen_default_dnnl_main_0")(test::FloatArray({1, 2, 3, 3}, x), deconv_out);
    ADD_FAILURE() << "an OIHW transposed-convolution weight ran";
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("takes NCHW data and an IOHW weight, not NCHW and OIHW"));
  }

  // A composite name is read once, part by part: one it cannot run is a clear error.
  for (const auto& [name, message] :
       {std::pair{"dnnl.conv2d_bias_mish", "composite 'dnnl.conv2d_bias_mish': 'mish' is not a part it can have"},
        std::pair{"dnnl.conv2d_relu_bias", "composite 'dnnl.conv2d_relu_bias': 'bias' is not a part it can have"},
        std::pair{"dnnl.conv3d_bias", "unknown composite 'dnnl.conv3d_bias'"}}) {
    std::string graph = kTvmGraph;
    graph.replace(graph.find("dnnl.conv2d_bias_relu"), std::strlen("dnnl.conv2d_bias_relu"), name);
    runtime::Module bad = LoadAsTvmWritesIt(graph.c_str(), {test::FloatArray({2, 2, 2, 2}, w), test::FloatArray({2}, b)});
    try {
      bad.GetFunction("tvmgen_default_dnnl_main_0")(test::FloatArray({1, 2, 3, 3}, x), out);
      ADD_FAILURE() << name << " ran";
    } catch (const runtime::Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(message));
      EXPECT_THAT(e.what(), HasSubstr("dnnl_json: tvmgen_default_dnnl_main_0: node 3"));
    }
  }
#else
  EXPECT_FALSE(loaded);
  EXPECT_THAT(why, HasSubstr("its 'dnnl_json' module runs on oneDNN"));
  EXPECT_THAT(why, HasSubstr("libkiln_dnnl.so could not be loaded"));
  try {
    PartitionForCodegen(ir::ParseFunction("fn (%x: Tensor[(2), float32]) { %0 = nn.relu(%x); %0 }"), "dnnl");
    ADD_FAILURE() << "a build without oneDNN partitioned for it";
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("the external codegen 'dnnl' is not enabled in this build"));
  }
#endif
}

#ifdef KILN_TEST_HAS_DNNL
// Two executors of one library whose convolutions run in oneDNN, in two threads at once.
TEST(Dnnl, TwoExecutorsOfOneLibraryRunConcurrently) {
  const char* text = R"(fn (%x: Tensor[(1, 4, 8, 8), float32]) {
    %w = const(Tensor[(8, 4, 3, 3), float32], )" "[" R"(%s]);
    %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
    %1 = nn.relu(%0);
    %2 = nn.max_pool2d(%1, pool_size=[2, 2], strides=[2, 2]);
    %2
  })";
  std::string weights;
  for (int i = 0; i < 8 * 4 * 9; ++i) weights += (i ? ", " : "") + std::to_string(0.01 * ((i * 37) % 23) - 0.1);
  std::string model = text;
  model.replace(model.find("%s"), 2, weights);
  fs::path dir = fs::path(::testing::TempDir()) / ("kiln_dnnl_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  BuildOptions options;
  options.compiler.cache_dir = test::SharedObjectCache();
  ir::Expr main = ir::ParseFunction(model);
  ExecutorFactory host = Build(main, options);
  ExecutorFactory dnnl = Build(PartitionForCodegen(main, "dnnl"), options);
  ASSERT_EQ(dnnl.external_modules().size(), 1u);
  host.ExportLibrary((dir / "host.so").string());
  dnnl.ExportLibrary((dir / "dnnl.so").string());
  runtime::Module host_lib = runtime::LoadModuleFromFile((dir / "host.so").string());
  runtime::Module dnnl_lib = runtime::LoadModuleFromFile((dir / "dnnl.so").string());
  std::vector<std::string> failures(2);
  auto work = [&](int t) {
    auto a = runtime::GetGraphExecutor(host_lib.GetFunction("default")(runtime::kCPU).AsModule());
    auto b = runtime::GetGraphExecutor(dnnl_lib.GetFunction("default")(runtime::kCPU).AsModule());
    for (int round = 0; round < 20; ++round) {
      std::vector<float> x;
      for (int i = 0; i < 256; ++i) x.push_back(0.01f * static_cast<float>((i * 7 + round * 13 + t) % 41) - 0.2f);
      runtime::NDArray in = test::FloatArray({1, 4, 8, 8}, x);
      a->SetInput(0, *in.get());
      b->SetInput(0, *in.get());
      a->Run();
      b->Run();
      std::vector<float> want = test::ToVector(a->GetOutput(0)), got = test::ToVector(b->GetOutput(0));
      for (size_t i = 0; i < want.size(); ++i) {
        if (std::abs(got[i] - want[i]) > 1e-4f) failures[t] = "thread " + std::to_string(t) + " element " + std::to_string(i);
      }
    }
  };
  std::thread first(work, 0), second(work, 1);
  first.join();
  second.join();
  EXPECT_EQ(failures[0], "");
  EXPECT_EQ(failures[1], "");
  fs::remove_all(dir);
}
#endif

}  // namespace
}  // namespace kiln::backend
