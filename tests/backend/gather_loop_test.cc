// Gather loops (trees of data-movement ops computed as one loop, gather_emitter.cc) compute what
// the ops' evaluators compute, element for element: channel shuffles, slices joined and reshaped,
// attention heads, strided and reversed slices, integer tensors, odd extents, on one thread and
// split across threads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "tests/backend/build_fixture.h"

namespace kiln::backend {
namespace {

// The function's value on `inputs` by the ops' evaluators (constant folding's definitions).
runtime::NDArray Evaluate(const ir::Expr& e, const std::map<const ir::ExprNode*, runtime::NDArray>& inputs) {
  if (auto it = inputs.find(e.get()); it != inputs.end()) return it->second;
  const auto* call = e->As<ir::CallNode>();
  if (call == nullptr) throw std::logic_error("the test's functions hold calls and parameters only");
  std::vector<runtime::NDArray> args;
  for (const ir::Expr& arg : call->args) args.push_back(Evaluate(arg, inputs));
  std::optional<runtime::NDArray> value = call->op->evaluate(args, call->attrs, call->type().tensor());
  if (!value) throw std::logic_error(call->op->name + ": the evaluator left it undefined");
  return *value;
}

class GatherLoopTest : public BuildTest {
 protected:
  // Builds `text`, runs it on distinct values per element (their index, as the parameters' dtype)
  // and compares the bytes of its output with the evaluators'. The generated source must hold a
  // gather loop.
  void ExpectGatherMatches(const std::string& text, int threads);
};

void GatherLoopTest::ExpectGatherMatches(const std::string& text, int threads) {
  SCOPED_TRACE(text);
  ir::Expr function = ir::ParseFunction(text);
  const auto& f = *function->As<ir::FunctionNode>();
  std::map<const ir::ExprNode*, runtime::NDArray> inputs;
  std::vector<runtime::NDArray> arrays;
  int64_t base = 0;
  for (const auto& param : f.params) {
    const ir::TensorType& t = param->type().tensor();
    runtime::NDArray array = runtime::NDArray::Empty(t.shape, t.dtype);
    int64_t n = t.NumElements();
    for (int64_t i = 0; i < n; ++i) {
      if (t.dtype.code == kDLFloat) {
        static_cast<float*>(array->data)[i] = static_cast<float>(base + i) + 0.5f;
      } else {
        static_cast<int64_t*>(array->data)[i] = base + i;
      }
    }
    base += n;
    inputs.emplace(param.get(), array);
    arrays.push_back(array);
  }
  runtime::NDArray want = Evaluate(f.body, inputs);
  std::string source;
  auto exec = BuildAndLoad(text, nullptr, &source);
  EXPECT_THAT(source, ::testing::HasSubstr("const int64_t out_ = run_ *"));
  exec->SetNumThreads(threads);
  for (size_t i = 0; i < arrays.size(); ++i) exec->SetInput(static_cast<int>(i), *arrays[i].get());
  exec->Run();
  const runtime::NDArray& got = exec->GetOutput(0);
  ASSERT_EQ(got.shape(), want.shape());
  size_t bytes = want->dtype.bits / 8;
  for (int64_t extent : want.shape()) bytes *= static_cast<size_t>(extent);
  EXPECT_EQ(std::memcmp(got->data, want->data, bytes), 0);
}

const std::vector<std::string> kCases = {
    // ShuffleNet V2's unit: half of the input sliced, joined with the branch, shuffled.
    R"(fn (%a: Tensor[(1, 58, 28, 28), float32], %b: Tensor[(1, 116, 28, 28), float32]) {
      %0 = strided_slice(%b, begin=[58], end=[116], axes=[1]);
      %1 = concatenate(%0, %a, axis=1);
      %2 = reshape(%1, newshape=[1, 2, 58, 28, 28]);
      %3 = transpose(%2, axes=[0, 2, 1, 3, 4]);
      reshape(%3, newshape=[1, 116, 28, 28])
    })",
    // Three parts of odd sizes, a batch of 2, shuffled in groups of 3.
    R"(fn (%a: Tensor[(2, 3, 5, 7), float32], %b: Tensor[(2, 6, 5, 7), float32], %c: Tensor[(2, 3, 5, 7), float32]) {
      %0 = concatenate(%a, %b, %c, axis=1);
      %1 = reshape(%0, newshape=[2, 3, 4, 35]);
      %2 = transpose(%1, axes=[0, 2, 1, 3]);
      reshape(%2, newshape=[2, 12, 5, 7])
    })",
    // Attention heads of 8 features.
    R"(fn (%x: Tensor[(1, 7, 96), float32]) {
      %0 = reshape(%x, newshape=[1, 7, 12, 8]);
      transpose(%0, axes=[0, 2, 1, 3])
    })",
    // A slice with a step on an outer axis and an offset, reversed on another, then flattened.
    R"(fn (%x: Tensor[(6, 5, 4, 16), float32]) {
      %0 = strided_slice(%x, begin=[1, 4, 1], end=[6, -6, 3], strides=[2, -2, 1], axes=[0, 1, 2]);
      reshape(%0, newshape=[3, 3, 32])
    })",
    // Integers: the leaves' bytes, whatever their type.
    R"(fn (%a: Tensor[(4, 10, 9), int64], %b: Tensor[(4, 2, 9), int64]) {
      %0 = concatenate(%a, %b, axis=1);
      %1 = strided_slice(%0, begin=[1], end=[4], axes=[0]);
      reshape(%1, newshape=[36, 9])
    })",
};

TEST_F(GatherLoopTest, MatchesTheEvaluatorsOnOneThread) {
  for (const std::string& text : kCases) ExpectGatherMatches(text, 1);
}

TEST_F(GatherLoopTest, MatchesTheEvaluatorsSplitAcrossThreads) {
  for (const std::string& text : kCases) ExpectGatherMatches(text, 3);
}

}  // namespace
}  // namespace kiln::backend
