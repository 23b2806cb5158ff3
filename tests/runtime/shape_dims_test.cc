// Shape dimensions at run time: extent polynomials (runtime/shape_dims.h) and the executor
// deciding the dimensions from its inputs (graph_executor.h).
#include "runtime/shape_dims.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/error.h"
#include "runtime/graph_executor.h"
#include "test_util.h"

namespace kiln::runtime {
namespace {

using ::testing::HasSubstr;
using test::ErrorOf;

TEST(DimPolynomial, ReadsWritesAndEvaluates) {
  for (const char* text : {"768", "d0", "12*d0*d0", "(3*d0*d1)/32", "2*d0 - 1", "-d1 + 7", "(d0 + 31)/32"}) {
    DimPolynomial p = DimPolynomial::Parse(text, 2, "test");
    EXPECT_EQ(DimPolynomial::Parse(p.ToString(), 2, "test"), p) << text;
  }
  DimPolynomial p = DimPolynomial::Parse("(3*d0*d1)/32", 2, "test");
  EXPECT_EQ(p.Evaluate({64, 96}), 576);
  EXPECT_EQ(p.ToText({"H", "W"}), "(3*H*W)/32");
  EXPECT_EQ(p.ToString("kiln_d"), "(3*kiln_d0*kiln_d1)/32");
  EXPECT_EQ(DimPolynomial::Parse("d1", 2, "test").SingleDim(), 1);
  EXPECT_EQ(DimPolynomial::Parse("2*d1", 2, "test").SingleDim(), -1);
  EXPECT_TRUE(DimPolynomial::Parse("4 + 3", 2, "test").IsConstant());
  EXPECT_EQ(DimPolynomial::Parse("d0*d0 - d0*d0 + 5", 1, "test").ToString(), "5");  // like terms merged
  EXPECT_THAT(ErrorOf([&] { p.Evaluate({63, 95}); }), HasSubstr("is not a whole number at these dimensions"));
  EXPECT_THAT(ErrorOf([] { DimPolynomial::Parse("d0*d0*d0*d0*d0*d0*d0*d0*d0*d0*d0*d0*d0*d0*d0*d0", 1, "x").Evaluate({1 << 20}); }),
              HasSubstr("a degree above 8"));
  EXPECT_THAT(ErrorOf([] { DimPolynomial::Parse("99999999999*d0*d0*d0*d0*d0*d0", 1, "x").Evaluate({1 << 20}); }),
              HasSubstr("overflows"));
  EXPECT_THAT(ErrorOf([] { DimPolynomial::Parse("(d0)/0", 1, "attrs.x"); }),
              HasSubstr("attrs.x: the extent \"(d0)/0\" cannot be read: a denominator must be positive"));
  EXPECT_THAT(ErrorOf([] { DimPolynomial::Parse("d0 d0", 1, "x"); }), HasSubstr("unexpected 'd'"));
  EXPECT_THAT(ErrorOf([] { DimPolynomial::Parse("1234567890123456789", 1, "x"); }), HasSubstr("a number too large"));
  // What the reader accepts it writes back in a form it reads again (the fuzzer's round trip).
  DimPolynomial merged = DimPolynomial::Parse("1099511627776*d0 + 1099511627776*d0 - 1099511627776 - 1099511627775", 1, "x");
  EXPECT_EQ(DimPolynomial::Parse(merged.ToString(), 1, "x"), merged);
  EXPECT_THAT(ErrorOf([] { DimPolynomial::Parse("4611686018427387904*d0", 1, "x"); }), HasSubstr("a number too large"));
  EXPECT_THAT(ErrorOf([] { DimPolynomial::Parse("2147483648*2147483648", 1, "x"); }), HasSubstr("a coefficient too large"));
}

// x of [1, S] (S from 1 to 8 in steps of 1) copied to y, and y copied to z of [1, 16 - S]
// (larger below the max than at it: a malformed library).
const char* kCopyGraph = R"({
  "nodes": [
    {"op": "null", "name": "x", "inputs": []},
    {"op": "tvm_op", "name": "copy", "inputs": [[0, 0, 0]],
     "attrs": {"func_name": "__copy", "num_inputs": "1", "num_outputs": "1", "flatten_data": "0"}}
  ],
  "arg_nodes": [0],
  "heads": [[1, 0, 0]],
  "attrs": {
    "dltype": ["list_str", ["float32", "float32"]],
    "shape": ["list_shape", [[1, 8], [1, 8]]],
    "storage_id": ["list_int", [0, 1]],
    "kiln_dims": ["list_str", ["S", "1", "8", "1"]],
    "kiln_entry_extents": ["list_str", ["1,d0", "1,EXTENT"]]
  },
  "node_row_ptr": [0, 1, 2]
})";

std::unique_ptr<GraphExecutor> CopyExecutor(const std::string& output_extent) {
  std::string json = kCopyGraph;
  json.replace(json.find("EXTENT"), 6, output_extent);
  return std::make_unique<GraphExecutor>(ParseGraphJson(json), LoadModuleFromFile(test::LibPath("kiln_test_ops")));
}

TEST(ShapeDimensions, TheExecutorTakesThemFromItsInputs) {
  auto exec = CopyExecutor("d0");
  std::vector<TensorInfo> inputs = exec->GetInputInfo();
  EXPECT_EQ(inputs[0].shape, (std::vector<int64_t>{1, 8}));
  EXPECT_EQ(inputs[0].axis_dims, (std::vector<std::string>{"", "S"}));
  for (int64_t s : {3, 8, 1, 5}) {
    std::vector<float> values(static_cast<size_t>(s));
    for (int64_t i = 0; i < s; ++i) values[static_cast<size_t>(i)] = static_cast<float>(10 * s + i);
    exec->SetInput(0, *test::FloatArray({1, s}, values).get());
    EXPECT_EQ(exec->GetInput(0).shape(), (std::vector<int64_t>{1, s}));
    exec->Run();
    EXPECT_EQ(exec->dim_values(), std::vector<int64_t>{s});
    EXPECT_EQ(exec->GetOutput(0).shape(), (std::vector<int64_t>{1, s}));
    EXPECT_EQ(test::ToVector(exec->GetOutput(0)), values);
  }
  // Out of range, of another rank or dtype: an error naming the range, and nothing changes.
  EXPECT_THAT(ErrorOf([&] { exec->SetInput(0, *test::FloatArray({1, 9}, std::vector<float>(9)).get()); }),
              HasSubstr("set_input 'x': dimension 1 is 9, but S in 1..8 (expected float32[1, S])"));
  EXPECT_THAT(ErrorOf([&] { exec->SetInput(0, *test::FloatArray({2, 4}, std::vector<float>(8)).get()); }),
              HasSubstr("expected float32[1, S] (at these dimensions [1, 4]), got [2, 4]"));
  EXPECT_THAT(ErrorOf([&] { exec->SetInput(0, *test::FloatArray({8}, std::vector<float>(8)).get()); }),
              HasSubstr("expected float32[1, S], got float32[8]"));
  exec->Run();
  EXPECT_EQ(exec->GetOutput(0).shape(), (std::vector<int64_t>{1, 5}));
}

TEST(ShapeDimensions, AnExtentLargerThanItsStorageIsAnErrorNotAnOverflow) {
  auto exec = CopyExecutor("16 - d0");  // 8 at the max, 13 at S = 3
  exec->SetInput(0, *test::FloatArray({1, 3}, std::vector<float>(3)).get());
  EXPECT_THAT(ErrorOf([&] { exec->Run(); }),
              HasSubstr("graph JSON: entry 1: its shape [1, 13] needs more memory than its storage holds"));
}

}  // namespace
}  // namespace kiln::runtime
