// Gather loops (trees of data-movement ops computed as one loop, gather_emitter.cc) compute what
// the ops' evaluators compute, element for element: channel shuffles, slices joined and reshaped,
// attention heads, strided and reversed slices, a member also returned, a computed value read by
// two trees, joins on the last axis, integer tensors, odd extents, on one thread and split across
// threads. So do elementwise loops that read a concatenation where its parts lie (lower.cc's
// JoinedInPlace), and the loops of the joins that are written out.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "tests/backend/build_fixture.h"

namespace kiln::backend {
namespace {

// The value of `e` on `inputs` by the ops' evaluators (constant folding's definitions).
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

// The function's outputs (a tuple's fields, or its one value) by the evaluators.
std::vector<runtime::NDArray> EvaluateOutputs(const ir::FunctionNode& f,
                                              const std::map<const ir::ExprNode*, runtime::NDArray>& inputs) {
  if (const auto* tuple = f.body->As<ir::TupleNode>()) {
    std::vector<runtime::NDArray> outputs;
    for (const ir::Expr& field : tuple->fields) outputs.push_back(Evaluate(field, inputs));
    return outputs;
  }
  return {Evaluate(f.body, inputs)};
}

// Element i's value (its index plus `base`) as `dtype`: float32, float64 or an integer type.
void SetElement(runtime::NDArray& array, int64_t i, int64_t value) {
  DLDataType t = array->dtype;
  char* at = static_cast<char*>(array->data) + i * (t.bits / 8);
  if (t.code == kDLFloat && t.bits == 32) {
    float v = static_cast<float>(value) + 0.5f;
    std::memcpy(at, &v, sizeof(v));
  } else if (t.code == kDLFloat && t.bits == 64) {
    double v = static_cast<double>(value) + 0.5;
    std::memcpy(at, &v, sizeof(v));
  } else {
    std::memcpy(at, &value, t.bits / 8);  // the low bytes (little-endian)
  }
}

class GatherLoopTest : public BuildTest {
 protected:
  // Builds `text`, runs it on distinct values per element and compares the bytes of each output
  // with the evaluators'. The generated source must hold `marker` (a gather loop's by default);
  // it is put in `source` when given.
  void ExpectGatherMatches(const std::string& text, int threads,
                           const std::string& marker = "const int64_t out_ = run_ *", std::string* source = nullptr);
};

void GatherLoopTest::ExpectGatherMatches(const std::string& text, int threads, const std::string& marker,
                                         std::string* source_out) {
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
    for (int64_t i = 0; i < n; ++i) SetElement(array, i, base + i);
    base += n;
    inputs.emplace(param.get(), array);
    arrays.push_back(array);
  }
  std::vector<runtime::NDArray> want = EvaluateOutputs(f, inputs);
  std::string source;
  auto exec = BuildAndLoad(text, nullptr, &source);
  EXPECT_THAT(source, ::testing::HasSubstr(marker));
  if (source_out != nullptr) *source_out = source;
  exec->SetNumThreads(threads);
  for (size_t i = 0; i < arrays.size(); ++i) exec->SetInput(static_cast<int>(i), *arrays[i].get());
  exec->Run();
  ASSERT_EQ(exec->NumOutputs(), static_cast<int>(want.size()));
  for (size_t k = 0; k < want.size(); ++k) {
    const runtime::NDArray& got = exec->GetOutput(static_cast<int>(k));
    ASSERT_EQ(got.shape(), want[k].shape()) << "output " << k;
    size_t bytes = want[k]->dtype.bits / 8;
    for (int64_t extent : want[k].shape()) bytes *= static_cast<size_t>(extent);
    EXPECT_EQ(std::memcmp(got->data, want[k]->data, bytes), 0) << "output " << k;
  }
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
    // Attention heads: of 8 features, and BERT-base's (split across threads).
    R"(fn (%x: Tensor[(1, 7, 96), float32]) {
      %0 = reshape(%x, newshape=[1, 7, 12, 8]);
      transpose(%0, axes=[0, 2, 1, 3])
    })",
    R"(fn (%x: Tensor[(1, 384, 768), float32]) {
      %0 = reshape(%x, newshape=[1, 384, 12, 64]);
      transpose(%0, axes=[0, 2, 1, 3])
    })",
    // A member also returned is a root of its own, and the leaf of the tree above it.
    R"(fn (%a: Tensor[(2, 8, 6, 6), float32], %b: Tensor[(2, 8, 6, 6), float32]) {
      %0 = concatenate(%a, %b, axis=1);
      %1 = reshape(%0, newshape=[2, 2, 8, 36]);
      %2 = transpose(%1, axes=[0, 2, 1, 3]);
      %3 = reshape(%2, newshape=[2, 16, 6, 6]);
      (%3, %1)
    })",
    // A value computed in the function (an elementwise loop's) read by two trees; two transposes in
    // one tree; a lone transpose left to its own loops.
    R"(fn (%x: Tensor[(4, 6, 5, 32), float32], %y: Tensor[(4, 6, 5, 32), float32]) {
      %0 = add(%x, %y);
      %1 = transpose(%0, axes=[1, 0, 2, 3]);
      %2 = transpose(%1, axes=[0, 2, 1, 3]);
      %3 = transpose(%0, axes=[2, 1, 0, 3]);
      %4 = reshape(%3, newshape=[5, 24, 32]);
      (%2, %4)
    })",
    // Joined on the last axis (counted from the back), int32, split across threads.
    R"(fn (%a: Tensor[(64, 24, 16), int32], %b: Tensor[(64, 24, 32), int32]) {
      %0 = concatenate(%a, %b, axis=-1);
      reshape(%0, newshape=[64, 24, 3, 16])
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

// Concatenations that elementwise loops read where their parts lie (no copy: the source names the
// chosen part's pointer, "j0_0"): DenseNet's features joined, scaled, shifted and rectified (shift
// first: a multiply-add may be contracted into an FMA that the evaluators do not use), blocked
// and plain, of many parts of odd extents; a batch of 2 (the parts' outer strides differ); an int32
// join; a join read by two members of the loop.
const std::vector<std::string> kJoinedInPlace = {
    R"(fn (%a: Tensor[(1, 4, 5, 7, 16), float32], %b: Tensor[(1, 2, 5, 7, 16), float32], %s: Tensor[(1, 6, 1, 1, 16), float32], %t: Tensor[(1, 6, 1, 1, 16), float32]) {
      %0 = concatenate(%a, %b, axis=1);
      %1 = add(%0, %t);
      %2 = multiply(%1, %s);
      nn.relu(%2)
    })",
    R"(fn (%a: Tensor[(2, 3, 9, 11), float32], %b: Tensor[(2, 1, 9, 11), float32], %c: Tensor[(2, 5, 9, 11), float32], %d: Tensor[(2, 2, 9, 11), float32], %e: Tensor[(2, 1, 9, 11), float32], %s: Tensor[(12, 1, 1), float32]) {
      %0 = concatenate(%a, %b, %c, %d, %e, axis=1);
      %1 = multiply(%0, %s);
      nn.relu(%1)
    })",
    R"(fn (%a: Tensor[(3, 4, 40), int32], %b: Tensor[(5, 4, 40), int32]) {
      %0 = concatenate(%a, %b, axis=0);
      %1 = add(%0, %0);
      subtract(%1, %0)
    })",
    R"(fn (%a: Tensor[(1, 64, 28, 28), float32], %b: Tensor[(1, 32, 28, 28), float32], %c: Tensor[(1, 32, 28, 28), float32]) {
      %0 = concatenate(%a, %b, %c, axis=1);
      %1 = sigmoid(%0);
      multiply(%0, %1)
    })",
};

// The line that chooses the join's part (elementwise_emitter.cc).
std::string ChoosesPart(const std::string& text) {
  return text.find("int32") != std::string::npos ? "const int32_t* j0_0 = " : "const float* j0_0 = ";
}

TEST_F(GatherLoopTest, ElementwiseLoopsReadJoinsInPlaceOnOneThread) {
  for (const std::string& text : kJoinedInPlace) ExpectGatherMatches(text, 1, ChoosesPart(text));
}

TEST_F(GatherLoopTest, ElementwiseLoopsReadJoinsInPlaceSplitAcrossThreads) {
  for (const std::string& text : kJoinedInPlace) ExpectGatherMatches(text, 3, ChoosesPart(text));
}

// Joins that are written out: returned as well as read, joined on the last axis, or read by an op
// other than an elementwise one of their shape (here one that broadcasts it to a larger shape).
const std::vector<std::string> kJoinedWrittenOut = {
    R"(fn (%a: Tensor[(2, 3, 8), float32], %b: Tensor[(2, 5, 8), float32]) {
      %0 = concatenate(%a, %b, axis=1);
      %1 = nn.relu(%0);
      (%0, %1)
    })",
    R"(fn (%a: Tensor[(4, 6, 8), float32], %b: Tensor[(4, 6, 24), float32]) {
      %0 = concatenate(%a, %b, axis=-1);
      nn.relu(%0)
    })",
    R"(fn (%a: Tensor[(2, 3, 8), float32], %b: Tensor[(2, 5, 8), float32], %c: Tensor[(3, 2, 8, 8), float32]) {
      %0 = concatenate(%a, %b, axis=1);
      add(%0, %c)
    })",
};

TEST_F(GatherLoopTest, JoinsThatCannotBeReadInPlaceAreWrittenOut) {
  for (const std::string& text : kJoinedWrittenOut) {
    std::string source;
    ExpectGatherMatches(text, 1, "std::memcpy(", &source);
    EXPECT_THAT(source, ::testing::Not(::testing::HasSubstr(" j0_0 = "))) << text;
  }
}

}  // namespace
}  // namespace kiln::backend
