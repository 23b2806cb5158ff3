// Provenance: calls keep the ONNX node they come from through rewrites, and an exception leaving
// a WorkingOn scope names the call.
#include "ir/provenance.h"

#include <gmock/gmock.h>

#include <stdexcept>

#include "ir/text.h"

namespace kiln::ir {
namespace {

using ::testing::HasSubstr;

const char* kReluOfExp = "fn (%x: Tensor[(4), float32]) { %0 = exp(%x); %1 = nn.relu(%0); %1 }";

const CallNode& Body(const Expr& function) { return *function->As<FunctionNode>()->body->As<CallNode>(); }

TEST(Provenance, CallsTakeTheSourceOfTheirScope) {
  Expr parsed;
  {
    WorkingOn importing("node 'r' (Relu)");
    parsed = ParseFunction(kReluOfExp);
  }
  EXPECT_EQ(Body(parsed).source, "node 'r' (Relu)");
  EXPECT_EQ(CurrentSource(), "");
  EXPECT_EQ(Body(ParseFunction(kReluOfExp)).source, "");  // made outside any scope
}

TEST(Provenance, RewrittenCallsKeepTheirSource) {
  Expr parsed;
  {
    WorkingOn importing("node 'r' (Relu)");
    parsed = ParseFunction(kReluOfExp);
  }
  // relu(exp(x)) -> sigmoid(negative(x)): new calls made while the pass works on an old one.
  Expr rewritten = Rewrite(parsed->As<FunctionNode>()->body, [](const Expr& original, const std::vector<Expr>& inputs) {
    const auto* call = original->As<CallNode>();
    if (call == nullptr) return WithInputs(original, inputs);
    return Call(call->op->name == "exp" ? "negative" : "sigmoid", inputs);
  });
  EXPECT_EQ(rewritten->As<CallNode>()->op->name, "sigmoid");
  EXPECT_EQ(rewritten->As<CallNode>()->source, "node 'r' (Relu)");
  EXPECT_EQ(rewritten->As<CallNode>()->args[0]->As<CallNode>()->source, "node 'r' (Relu)");
  EXPECT_EQ(DescribeSources(Function(parsed->As<FunctionNode>()->params, rewritten)), " (from ONNX node 'r' (Relu))");
}

TEST(Provenance, AnExceptionLeavingAScopeNamesItsCall) {
  Expr parsed;
  {
    WorkingOn importing("node 'r' (Relu)");
    parsed = ParseFunction(kReluOfExp);
  }
  ClearFailedCall();
  EXPECT_THROW(Rewrite(parsed->As<FunctionNode>()->body,
                       [](const Expr& original, const std::vector<Expr>& inputs) -> Expr {
                         const auto* call = original->As<CallNode>();
                         if (call != nullptr && call->op->name == "nn.relu") throw std::out_of_range("at");
                         return WithInputs(original, inputs);
                       }),
               std::out_of_range);
  ASSERT_NE(FailedCall(), nullptr);
  EXPECT_EQ(FailedCall()->As<CallNode>()->op->name, "nn.relu");
  EXPECT_EQ(DescribeCall(FailedCall()), "call of nn.relu -> Tensor[(4), float32] (from ONNX node 'r' (Relu))");
  ClearFailedCall();
  EXPECT_EQ(FailedCall(), nullptr);
}

}  // namespace
}  // namespace kiln::ir
