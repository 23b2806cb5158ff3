// One definition per elementwise op (kernels/elementwise/scalar_ops.h): what constant folding
// computes (the op's evaluator) is what the generated loops compute, bit for bit where the
// definition is exact (selections, integer arithmetic, signs of zero, NaN handling) and within 2
// ulp where the system compiler may contract a * b + c into an FMA that the evaluator does not;
// and the blocked convolution's fused epilogue applies the same definitions on vectors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "backend/build.h"
#include "ir/text.h"
#include "tests/backend/build_fixture.h"
#include "runtime/graph_executor_module.h"
#include "runtime/module.h"
#include "tests/float_arrays.h"
#include "tests/shared_object_cache.h"

namespace kiln::backend {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr DLDataType kInt32{kDLInt, 32, 1};

using ScalarOpsTest = BuildTest;

template <typename T>
runtime::NDArray ArrayOf(const std::vector<T>& values, DLDataType dtype) {
  runtime::NDArray array = runtime::NDArray::Empty({static_cast<int64_t>(values.size())}, dtype);
  array.CopyFromBytes(values.data(), values.size() * sizeof(T));
  return array;
}

// Floats equal as bits (NaNs as NaNs), or within `ulps` units in the last place (or 1e-30, where
// one of them underflowed), or within `absolute` of max(1, |want|) where that is not 0.
void ExpectFloatsMatch(const std::vector<float>& got, const std::vector<float>& want, int ulps, const std::string& what,
                       double absolute = 0) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i << ": " << got[i];
      continue;
    }
    if (absolute > 0 && std::abs(double(got[i]) - want[i]) <= absolute * std::max(1.0, std::abs(double(want[i])))) {
      continue;
    }
    int32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    if (ulps > 0 && std::abs(got[i] - want[i]) <= 1e-30f) continue;  // underflow, in either
    if (ulps == 0 || std::isinf(want[i]) || want[i] == 0) {
      EXPECT_EQ(a, b) << what << " at " << i << ": generated " << got[i] << ", folded " << want[i];
    } else {
      EXPECT_LE(std::abs(static_cast<int64_t>(a) - b), ulps) << what << " at " << i << ": generated " << got[i]
                                                             << ", folded " << want[i];
    }
  }
}

// `op` on float32 inputs (one or two, of equal length), with `attrs`: generated loops against the
// evaluator.
struct FloatCase {
  std::string op, attrs;
  std::vector<float> a, b;
  int ulps;
  double absolute = 0;  // ExpectFloatsMatch
};

const std::vector<float> kValues = {kNaN, 0.0f, -0.0f, 1.0f, -1.0f, 2.5f, -3.75f, 0.1f, 1e30f, -1e-30f, kInf, -kInf,
                                    6.0f, -6.0f, 88.5f, -90.0f};
const std::vector<float> kOthers = {1.0f, kNaN, 0.0f, -0.0f, 2.0f, -2.0f, 0.5f, 3.0f, kInf, -1.0f, 1.0f, 2.0f,
                                    -6.0f, kNaN, 0.25f, -3.0f};

TEST_F(ScalarOpsTest, FoldedAndGeneratedFloatOpsAgree) {
  const std::vector<FloatCase> cases = {
      {"maximum", "", kValues, kOthers, 0},    {"minimum", "", kValues, kOthers, 0},
      {"add", "", kValues, kOthers, 0},        {"subtract", "", kValues, kOthers, 0},
      {"multiply", "", kValues, kOthers, 0},   {"divide", "", kValues, kOthers, 0},
      {"floor_mod", "", kValues, kOthers, 0},  {"trunc_mod", "", kValues, kOthers, 0},
      {"less", "", kValues, kOthers, 0},       {"nn.relu", "", kValues, {}, 0},
      {"negative", "", kValues, {}, 0},        {"abs", "", kValues, {}, 0},
      {"clip", "a_min=-2, a_max=6", kValues, {}, 0},
      {"nn.leaky_relu", "alpha=0.125", kValues, {}, 0},
      {"nn.thresholded_relu", "alpha=1.5", kValues, {}, 0},
      {"round", "", kValues, {}, 0},           {"floor", "", kValues, {}, 0},
      {"sigmoid", "", kValues, {}, 2},         {"erf", "", kValues, {}, 2},
      {"exp", "", kValues, {}, 2},             {"tanh", "", kValues, {}, 2},
      {"nn.hard_swish", "", kValues, {}, 2},   {"nn.softplus", "", kValues, {}, 2},
      {"nn.elu", "alpha=0.5", kValues, {}, 2}, {"nn.celu", "alpha=2", kValues, {}, 2},
      {"rsqrt", "", kValues, {}, 2},
      // GELU's 1 + erf(x / sqrt 2) cancels for negative x: an ulp of erf is thousands of GELU's
      // there (in the form exporters write as much as in nn.gelu), so within erf's error times
      // |x| / 2 absolute (7e-7 at x = -3.75).
      {"nn.gelu", "", kValues, {}, 2, 7e-7},
  };
  for (const FloatCase& c : cases) {
    SCOPED_TRACE(c.op);
    std::string n = std::to_string(c.a.size());
    std::string attrs = c.attrs.empty() ? "" : ", " + c.attrs;
    bool binary = !c.b.empty();
    std::string text = "fn (%a: Tensor[(" + n + "), float32]" + (binary ? ", %b: Tensor[(" + n + "), float32]" : "") +
                       ") { %0 = " + c.op + "(%a" + (binary ? ", %b" : "") + attrs + "); %0 }";
    ir::Expr function = ir::ParseFunction(text);
    const auto* call = function->As<ir::FunctionNode>()->body->As<ir::CallNode>();
    std::vector<runtime::NDArray> args = {ArrayOf(c.a, runtime::kFloat32)};
    if (binary) args.push_back(ArrayOf(c.b, runtime::kFloat32));
    std::optional<runtime::NDArray> folded = call->op->evaluate(args, call->attrs, call->type().tensor());
    ASSERT_TRUE(folded.has_value()) << "the evaluator left it undefined";
    auto exec = BuildAndLoad(text);
    for (size_t i = 0; i < args.size(); ++i) exec->SetInput(static_cast<int>(i), *args[i].get());
    exec->Run();
    if (folded->dtype().bits == 1) {  // bool
      std::vector<uint8_t> got(c.a.size()), want(c.a.size());
      exec->GetOutput(0).CopyToBytes(got.data(), got.size());
      folded->CopyToBytes(want.data(), want.size());
      EXPECT_EQ(got, want);
      continue;
    }
    ExpectFloatsMatch(test::ToVector(exec->GetOutput(0)), test::ToVector(*folded), c.ulps, c.op, c.absolute);
  }
}

// Integer arithmetic wraps modulo 2^bits in both; remainders follow the sign of the dividend
// (trunc_mod) or the divisor (floor_mod); the minimum divided by -1 leaves remainder 0.
TEST_F(ScalarOpsTest, FoldedAndGeneratedIntegerOpsAgree) {
  const int32_t min = std::numeric_limits<int32_t>::min(), max = std::numeric_limits<int32_t>::max();
  const std::vector<int32_t> a = {max, min, -7, 7, -7, 0, 123456789, min};
  const std::vector<int32_t> b = {1, -1, 3, -3, -3, 5, 1000, 2};
  for (const char* op : {"add", "subtract", "multiply", "maximum", "minimum", "floor_mod", "trunc_mod", "divide"}) {
    SCOPED_TRACE(op);
    std::string text = std::string("fn (%a: Tensor[(8), int32], %b: Tensor[(8), int32]) { %0 = ") + op +
                       "(%a, %b); %0 }";
    std::vector<int32_t> lhs = a;
    if (std::string(op) == "divide") lhs[1] = 5;  // min / -1 is undefined
    ir::Expr function = ir::ParseFunction(text);
    const auto* call = function->As<ir::FunctionNode>()->body->As<ir::CallNode>();
    std::vector<runtime::NDArray> args = {ArrayOf(lhs, kInt32), ArrayOf(b, kInt32)};
    std::optional<runtime::NDArray> folded = call->op->evaluate(args, call->attrs, call->type().tensor());
    ASSERT_TRUE(folded.has_value());
    auto exec = BuildAndLoad(text);
    exec->SetInput(0, *args[0].get());
    exec->SetInput(1, *args[1].get());
    exec->Run();
    std::vector<int32_t> got(8), want(8);
    exec->GetOutput(0).CopyToBytes(got.data(), 32);
    folded->CopyToBytes(want.data(), 32);
    EXPECT_EQ(got, want);
  }
  for (const char* op : {"negative", "abs"}) {  // of the minimum: itself, wrapped
    std::string text = std::string("fn (%a: Tensor[(8), int32]) { %0 = ") + op + "(%a); %0 }";
    ir::Expr function = ir::ParseFunction(text);
    const auto* call = function->As<ir::FunctionNode>()->body->As<ir::CallNode>();
    std::vector<runtime::NDArray> args = {ArrayOf(a, kInt32)};
    std::optional<runtime::NDArray> folded = call->op->evaluate(args, call->attrs, call->type().tensor());
    ASSERT_TRUE(folded.has_value());
    auto exec = BuildAndLoad(text);
    exec->SetInput(0, *args[0].get());
    exec->Run();
    std::vector<int32_t> got(8), want(8);
    exec->GetOutput(0).CopyToBytes(got.data(), 32);
    folded->CopyToBytes(want.data(), 32);
    EXPECT_EQ(got, want) << op;
    EXPECT_EQ(want[1], min) << op;
  }
}

// A 1x1 convolution with identity weights passes x through; the ops after it run as the blocked
// kernel's epilogue at opt level 3 (on vectors) and as loops at opt level 0, and both equal the
// evaluator's: maximum and minimum against NaN and signed zeros, relu, clip, x * sigmoid(x),
// sigmoid, hard swish, GELU.
TEST_F(ScalarOpsTest, ConvolutionEpilogueAppliesTheSameDefinitions) {
  const int64_t positions = 16;
  std::string identity;
  for (int o = 0; o < 16; ++o) {
    for (int i = 0; i < 16; ++i) identity += std::string(o + i == 0 ? "" : ", ") + (o == i ? "1" : "0");
  }
  std::vector<float> x(16 * positions), y(16 * positions);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = kValues[(i * 7) % kValues.size()];
    // Finite and not -0: the convolution's sums pass exactly those through (0 * NaN would spread, -0 + 0 is 0).
    if (!std::isfinite(x[i]) || std::abs(x[i]) > 1e20f || (x[i] == 0 && std::signbit(x[i]))) x[i] = 0.5f;
    y[i] = kOthers[(i * 5) % kOthers.size()];
  }
  // The evaluator, on x itself (the convolution's exact result).
  auto evaluate = [](const char* op, const std::vector<runtime::NDArray>& args, const std::string& attrs = "") {
    std::string text = std::string("fn (%a: Tensor[(1, 16, 4, 4), float32]") +
                       (args.size() == 2 ? ", %b: Tensor[(1, 16, 4, 4), float32]" : "") + ") { %0 = " + op + "(%a" +
                       (args.size() == 2 ? ", %b" : "") + (attrs.empty() ? "" : ", " + attrs) + "); %0 }";
    ir::Expr function = ir::ParseFunction(text);
    const auto* call = function->As<ir::FunctionNode>()->body->As<ir::CallNode>();
    return *call->op->evaluate(args, call->attrs, call->type().tensor());
  };
  runtime::NDArray xs = test::FloatArray({1, 16, 4, 4}, x), ys = test::FloatArray({1, 16, 4, 4}, y);
  // y as a constant, so that the epilogue reads it (transformed at build time) as a parameter.
  std::string y_text;
  for (float v : y) {
    char number[32];
    std::snprintf(number, sizeof(number), "%.9g", v);
    y_text += std::string(y_text.empty() ? "" : ", ") + (std::isnan(v) ? "nan" : number);
  }
  struct Chain {
    const char* ops;  // after %0, the convolution's result
    std::vector<float> want;
    int ulps;
    double absolute = 0;
  };
  const std::vector<Chain> chains = {
      {"%1 = maximum(%0, %y); %2 = minimum(%1, %y);",
       test::ToVector(evaluate("minimum", {evaluate("maximum", {xs, ys}), ys})), 0},
      {"%1 = nn.relu(%0); %2 = copy(%1);", test::ToVector(evaluate("nn.relu", {xs})), 0},
      {"%1 = clip(%0, a_min=-1, a_max=2); %2 = copy(%1);",
       test::ToVector(evaluate("clip", {xs}, "a_min=-1, a_max=2")), 0},
      // Swish's vector exp (about 2e-7 relative) is not libm's.
      {"%1 = sigmoid(%0); %2 = multiply(%0, %1);",
       test::ToVector(evaluate("multiply", {xs, evaluate("sigmoid", {xs})})), 8},
      {"%1 = sigmoid(%0); %2 = copy(%1);", test::ToVector(evaluate("sigmoid", {xs})), 8},
      {"%1 = nn.hard_swish(%0); %2 = copy(%1);", test::ToVector(evaluate("nn.hard_swish", {xs})), 0},
      // GELU on vectors rounds its products and sums apart (no contraction); its cancellation as below.
      {"%1 = nn.gelu(%0); %2 = copy(%1);", test::ToVector(evaluate("nn.gelu", {xs})), 8, 7e-7},
  };
  for (const Chain& chain : chains) {
    std::string text = "fn (%x: Tensor[(1, 16, 4, 4), float32]) { %y = const(Tensor[(1, 16, 4, 4), float32], [" +
                       y_text + "]); %w = const(Tensor[(16, 16, 1, 1), float32], [" + identity +
                       "]); %0 = nn.conv2d(%x, %w); " + chain.ops + " %2 }";
    for (int level : {3, 0}) {
      SCOPED_TRACE(std::string(chain.ops) + " at opt level " + std::to_string(level));
      options_.pass_context.opt_level = level;
      std::string source;
      auto exec = BuildAndLoad(text, nullptr, &source);
      if (level == 3) {
        EXPECT_THAT(source, ::testing::HasSubstr("const kiln::kernels::EpilogueStep epilogue[]"));
      }
      exec->SetInput(0, *xs.get());
      exec->Run();
      ExpectFloatsMatch(test::ToVector(exec->GetOutput(0)), chain.want, chain.ulps, chain.ops, chain.absolute);
    }
  }
}

}  // namespace
}  // namespace kiln::backend
