// PassContext and the pipeline: opt levels, required and disabled passes, config keys, IR
// printing and pass times, and their errors.
#include <gmock/gmock.h>

#include <sstream>
#include <stdexcept>

#include "pass_test_util.h"
#include "ir/provenance.h"
#include "transform/pipeline.h"
#include "runtime/error.h"

namespace kiln::transform {
namespace {

using ::testing::HasSubstr;

const char* kModel = R"(fn (%x: Tensor[(1, 2, 2, 2), float32]) {
  %g = const(Tensor[(2), float32], [1, 1]); %b = const(Tensor[(2), float32], [0, 0]);
  %m = const(Tensor[(2), float32], [0, 0]); %v = const(Tensor[(2), float32], [1, 1]);
  %w = const(Tensor[(2, 2, 1, 1), float32], [1, 0, 0, 1]);
  %0 = nn.conv2d(%x, %w);
  %1 = nn.batch_norm(%0, %g, %b, %m, %v);
  %2 = nn.relu(%1);
  %3 = nn.dropout(%2);
  %3
})";

int CountOps(const ir::Expr& main, const std::string& op) {
  int count = 0;
  for (const ir::Expr& e : ir::PostOrder(main->As<ir::FunctionNode>()->body)) {
    if (const auto* call = e->As<ir::CallNode>(); call != nullptr && call->function) {
      for (const ir::Expr& inner : ir::PostOrder(call->function->As<ir::FunctionNode>()->body)) {
        const auto* c = inner->As<ir::CallNode>();
        count += c != nullptr && c->op != nullptr && c->op->name == op;
      }
    }
  }
  return count;
}

int CountCalls(const ir::Expr& main) {
  int count = 0;
  for (const ir::Expr& e : ir::PostOrder(main->As<ir::FunctionNode>()->body)) count += e->kind() == ir::ExprKind::kCall;
  return count;
}

ir::Expr RunModel(PassContext context, std::string* log_text = nullptr) {
  std::ostringstream log;
  ir::Expr out = RunPipeline(ir::ParseFunction(kModel), PassEnvironment{context}, log);
  if (log_text != nullptr) *log_text = log.str();
  return out;
}

TEST(Pipeline, OptLevelsDecideWhatRuns) {
  PassContext o0;
  o0.opt_level = 0;
  ir::Expr at0 = RunModel(o0);
  // One primitive function per op and no folding: conv, the batch-norm arithmetic (add, sqrt,
  // divide, multiply, subtract, two reshapes, multiply, add) and relu.
  EXPECT_EQ(CountCalls(at0), 11);
  EXPECT_EQ(CountOps(at0, "nn.batch_norm"), 0);   // SimplifyInference runs at every level
  EXPECT_EQ(CountOps(at0, "nn.dropout"), 0);
  PassContext o3;
  ir::Expr at3 = RunModel(o3);
  EXPECT_EQ(CountCalls(at3), 1);                  // conv + shift + relu in one function
  EXPECT_EQ(CountOps(at3, "multiply"), 0);        // the scale went into the weights
  EXPECT_EQ(CountOps(at3, "nn.conv2d"), 1);
}

TEST(Pipeline, RequiredAndDisabledPasses) {
  PassContext no_scale_folding;
  no_scale_folding.disabled_passes = {"FoldScaleAxis"};
  EXPECT_EQ(CountOps(RunModel(no_scale_folding), "multiply"), 1);
  PassContext required;
  required.opt_level = 1;
  required.required_passes = {"FoldScaleAxis", "FoldConstant"};
  EXPECT_EQ(CountOps(RunModel(required), "multiply"), 0);
}

TEST(Pipeline, PrintsIrAndTimes) {
  PassContext context;
  context.print_ir_after = {"SimplifyInference"};
  context.print_pass_times = true;
  context.verify = true;
  std::string log;
  RunModel(context, &log);
  EXPECT_THAT(log, HasSubstr("// IR after SimplifyInference\nfn (%x: Tensor[(1, 2, 2, 2), float32])"));
  EXPECT_THAT(log, HasSubstr("pass FuseOps: "));
  EXPECT_EQ(log.find("// IR after FuseOps"), std::string::npos);
}

TEST(Pipeline, Errors) {
  PassContext unknown;
  unknown.disabled_passes = {"FoldEverything"};
  EXPECT_THAT([&] { try { RunModel(unknown); } catch (const runtime::Error& e) { return std::string(e.what()); } return std::string(); }(),
              HasSubstr("unknown pass 'FoldEverything' (passes: LegalizeNarrowFloats, SimplifyInference, SimplifyExpr"));
  PassContext no_fusion;
  no_fusion.disabled_passes = {"FuseOps"};
  EXPECT_THROW(RunModel(no_fusion), runtime::Error);
  PassContext config;
  try {
    config.SetConfig("relay.FuseOps.max_dept", "3");
    FAIL();
  } catch (const runtime::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown pass config key 'relay.FuseOps.max_dept' (known keys: relay.FuseOps.max_depth"));
  }
  EXPECT_THROW(config.SetConfig("relay.FuseOps.max_depth", "three"), runtime::Error);
  EXPECT_THROW(config.SetConfig("tir.disable_vectorize", "maybe"), runtime::Error);
  config.SetConfig("relay.FuseOps.max_depth", "1");
  EXPECT_EQ(config.GetInt("relay.FuseOps.max_depth"), 1);
  // Unfused conv and relu: the scale went into the weights and the shift is 0 (beta and mean
  // are 0), which SimplifyExpr removes.
  EXPECT_EQ(CountCalls(RunModel(config)), 2);
}

TEST(Pipeline, VerifierCatchesFreeVariables) {
  ir::Expr x = ir::Var("x", ir::Type::Tensor({2}, runtime::kFloat32));
  ir::Expr stray = ir::Var("stray", ir::Type::Tensor({2}, runtime::kFloat32));
  ir::Expr f = ir::Function({x}, ir::Call("add", {x, stray}));
  EXPECT_THROW(VerifyFunction(f, "Test"), runtime::InternalError);
}

// A pass that fails at the relu: with a C++ library's exception (a bug), or with kiln's Error.
template <bool kBug>
ir::Expr FailAtRelu(const ir::Expr& main, const PassEnvironment&) {
  const auto* f = main->As<ir::FunctionNode>();
  return ir::Function(f->params, ir::Rewrite(f->body, [](const ir::Expr& e, const std::vector<ir::Expr>& inputs) {
                        const auto* call = e->As<ir::CallNode>();
                        if (call != nullptr && call->op->name == "nn.relu") {
                          if (kBug) throw std::out_of_range("unordered_map::at");
                          runtime::Fail("the relu is unsupported");
                        }
                        return ir::WithInputs(e, inputs);
                      }));
}

ir::Expr ImportedAs(const std::string& source, const char* text) {
  ir::WorkingOn importing(source);
  return ir::ParseFunction(text);
}

// What escapes a pass says where: a bug names the pass and the call (with its ONNX node), kiln's
// own error gains the ONNX node.
TEST(Pipeline, EscapingExceptionsNameThePassAndTheCall) {
  PassContext context;
  ir::Expr main = ImportedAs("node 'act1' (Relu)", "fn (%x: Tensor[(4), float32]) { %0 = exp(%x); %1 = nn.relu(%0); %1 }");
  try {
    RunPass({"Broken", 0, FailAtRelu<true>}, main, PassEnvironment{context});
    ADD_FAILURE() << "no exception";
  } catch (const runtime::InternalError& e) {
    EXPECT_EQ(std::string(e.what()),
              "internal error (a bug in kiln, please report it): pass Broken, at the call of nn.relu -> "
              "Tensor[(4), float32] (from ONNX node 'act1' (Relu)): unordered_map::at");
  }
  try {
    RunPass({"Refusing", 0, FailAtRelu<false>}, main, PassEnvironment{context});
    ADD_FAILURE() << "no exception";
  } catch (const runtime::InternalError& e) {
    ADD_FAILURE() << e.what();
  } catch (const runtime::Error& e) {
    EXPECT_EQ(std::string(e.what()), "node 'act1' (Relu): the relu is unsupported");
  }
}

}  // namespace
}  // namespace kiln::transform
