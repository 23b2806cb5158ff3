// The build pipeline as a list, and its runner with instrumentation.
#include "transform/pipeline.h"

#include <chrono>
#include <new>
#include <unordered_set>

#include "ir/provenance.h"
#include "ir/text.h"
#include "runtime/error.h"
#include "transform/alter_op_layout.h"
#include "transform/combine_attention.h"
#include "transform/combine_gelu.h"
#include "transform/combine_layer_norm.h"
#include "transform/dead_code_elimination.h"
#include "transform/eliminate_common_subexpr.h"
#include "transform/fold_constant.h"
#include "transform/fold_scale_axis.h"
#include "transform/fuse_ops.h"
#include "transform/fuse_pointwise_depthwise.h"
#include "transform/legalize_narrow_floats.h"
#include "transform/simplify_expr.h"
#include "transform/simplify_inference.h"

namespace kiln::transform {

using namespace ir;

namespace {

Expr RunFuseOps(const Expr& main, const PassEnvironment& environment) {
  FuseOptions options;
  // As in TVM: FuseOps always runs, but at opt level 0 it fuses nothing.
  options.max_depth = environment.context.opt_level == 0
                          ? 1
                          : static_cast<int>(environment.context.GetInt("relay.FuseOps.max_depth"));
  return FuseOps(main, options);
}

}  // namespace

const std::vector<Pass>& BuildPipeline() {
  static const std::vector<Pass> pipeline = {
      {"LegalizeNarrowFloats", 0, LegalizeNarrowFloats},
      {"SimplifyInference", 0, SimplifyInference},
      {"SimplifyExpr", 0, SimplifyExpr},
      {"CombineLayerNorm", 1, CombineLayerNorm},
      {"CombineGelu", 1, CombineGelu},
      {"EliminateCommonSubexpr", 3, EliminateCommonSubexpr},
      {"FoldConstant", 2, FoldConstant},
      {"FoldScaleAxis", 3, FoldScaleAxis},
      {"FoldConstant", 2, FoldConstant},
      {"AlterOpLayout", 3, AlterOpLayout},
      {"SimplifyExpr", 0, SimplifyExpr},
      {"CombineAttention", 3, CombineAttention},
      {"FusePointwiseDepthwise", 3, FusePointwiseDepthwise},
      {"DeadCodeElimination", 1, DeadCodeElimination},
      {"FuseOps", 0, RunFuseOps},
  };
  return pipeline;
}

Expr RunPass(const Pass& pass, const Expr& main, const PassEnvironment& environment) {
  ClearFailedCall();
  auto at = [&pass] {
    Expr call = FailedCall();
    return "pass " + pass.name + (call != nullptr ? ", at the " + DescribeCall(call) : std::string());
  };
  try {
    return pass.run(main, environment);
  } catch (runtime::InternalError& e) {
    e.AddLocation({"", at(), ""});
    throw;
  } catch (runtime::Error& e) {
    Expr call = FailedCall();
    if (call != nullptr && !call->As<CallNode>()->source.empty()) e.AddLocation({"", call->As<CallNode>()->source, ""});
    throw;
  } catch (const std::bad_alloc&) {
    throw runtime::Error("out of memory", {"", at(), ""});
  } catch (const std::exception& e) {
    throw runtime::InternalError(runtime::StrCat(at(), ": ", e.what()));
  }
}

std::vector<std::string> PassNames() {
  std::vector<std::string> names;
  for (const Pass& p : BuildPipeline()) {
    bool seen = false;
    for (const std::string& n : names) seen = seen || n == p.name;
    if (!seen) names.push_back(p.name);
  }
  return names;
}

void VerifyFunction(const Expr& main, const std::string& after_pass) {
  auto fail = [&](const std::string& what) {
    throw runtime::InternalError("the IR after " + after_pass + " is malformed: " + what);
  };
  const auto* f = main->As<FunctionNode>();
  if (f == nullptr) fail("the result is not a function");
  std::unordered_set<const ExprNode*> params;
  for (const Expr& p : f->params) params.insert(p.get());
  for (const Expr& e : PostOrder(f->body)) {
    if (!e->type().defined()) fail("an expression has no type");
    if (e->kind() == ExprKind::kVar && params.count(e.get()) == 0) {
      fail("variable %" + e->As<VarNode>()->name + " is not a parameter of the main function");
    }
    if (const auto* fn = e->As<FunctionNode>()) {
      std::unordered_set<const ExprNode*> inner;
      for (const Expr& p : fn->params) inner.insert(p.get());
      for (const Expr& x : PostOrder(fn->body)) {
        if (x->kind() == ExprKind::kVar && inner.count(x.get()) == 0) fail("a primitive function reads a free variable");
      }
    }
  }
}

Expr RunPipeline(const Expr& main, const PassEnvironment& environment, std::ostream& log,
                 std::vector<PassTiming>* timings) {
  const PassContext& context = environment.context;
  context.CheckPassNames(PassNames());
  runtime::Check(context.disabled_passes.count("FuseOps") == 0,
                 "FuseOps cannot be disabled: code generation compiles primitive functions (use -O 0, or "
                 "relay.FuseOps.max_depth=1, for one op per function)");
  Expr current = main;
  bool print_all = context.print_ir_after.count("all") != 0;
  for (const Pass& pass : BuildPipeline()) {
    bool required = context.required_passes.count(pass.name) != 0;
    if (context.disabled_passes.count(pass.name) != 0) continue;
    if (!required && context.opt_level < pass.opt_level) continue;
    auto start = std::chrono::steady_clock::now();
    current = RunPass(pass, current, environment);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (timings != nullptr) timings->push_back({pass.name, ms});
    if (context.print_pass_times) log << "pass " << pass.name << ": " << ms << " ms\n";
    if (context.verify) VerifyFunction(current, pass.name);
    if (print_all || context.print_ir_after.count(pass.name) != 0) {
      PrintOptions options;
      options.max_constant_elements = 16;
      log << "// IR after " << pass.name << "\n" << PrintFunction(current, options);
    }
  }
  return current;
}

}  // namespace kiln::transform
