// Partitioning for external codegens: MergeComposite, AnnotateTarget, MergeCompilerRegions and
// PartitionGraph, each as IR text before and the expected IR text after, including the cases
// where nothing may be claimed or joined.
#include <gtest/gtest.h>

#include "ir/text.h"
#include "transform/annotate_target.h"
#include "transform/merge_compiler_regions.h"
#include "transform/merge_composite.h"
#include "transform/partition_graph.h"

namespace kiln::transform {
namespace {

const ir::OpRef kConv2D("nn.conv2d");
const ir::OpRef kBiasAdd("nn.bias_add");
const ir::OpRef kRelu("nn.relu");

void ExpectText(const ir::Expr& actual, const std::string& expected) {
  ir::Expr want = ir::ParseFunction(expected);
  EXPECT_TRUE(ir::StructurallyEqual(actual, want)) << "got:\n" << ir::PrintFunction(actual) << "expected:\n"
                                                   << ir::PrintFunction(want);
}

// conv2d + bias (+ relu), the way the oneDNN table lists them: the longer pattern first.
std::vector<CompositePattern> ConvPatterns() {
  Pattern conv = IsOp(kConv2D, {Wildcard(), Wildcard()});
  Pattern bias = IsOp(kBiasAdd, {conv, Wildcard()});
  return {{"test.conv2d_bias_relu", IsOp(kRelu, {bias}), nullptr}, {"test.conv2d_bias", bias, nullptr}};
}

// The test codegen runs nn.relu, add and composites named "test.<...>".
std::vector<CompilerTarget> TestTarget() {
  return {{"test", [](const ir::CallNode& call) {
             return call.op != nullptr && (call.op->name == "nn.relu" || call.op->name == "add");
           }}};
}

// The whole flow over one function, printing nothing: the passes in TVM's order.
ir::Expr Partition(const std::string& text, PartitionOptions options = {}) {
  ir::Expr f = MergeComposite(ir::ParseFunction(text), ConvPatterns());
  return PartitionGraph(MergeCompilerRegions(AnnotateTarget(f, TestTarget())), options);
}

const char* kConvChain = R"(fn (%x: Tensor[(1, 2, 4, 4), float32]) {
    %w = const(Tensor[(2, 2, 1, 1), float32], [1, 2, 3, 4]);
    %b = const(Tensor[(2), float32], [0.5, -0.5]);
    %0 = nn.conv2d(%x, %w);
    %1 = nn.bias_add(%0, %b);
    %2 = nn.relu(%1);
    %3 = exp(%2);
    %4 = add(%2, %3);
    %5 = nn.relu(%4);
    %5
  })";

// kConvChain's convolution region as PartitionGraph makes it, called from main, and exp after it.
const char* kConvRegion = R"(
    %f0 = fn [Compiler="test", global_symbol="tvmgen_default_test_main_0", Primitive=1, Inline=1] (%test_0_i0: Tensor[(1, 2, 4, 4), float32]) {
      %w = const(Tensor[(2, 2, 1, 1), float32], [1, 2, 3, 4]);
      %b = const(Tensor[(2), float32], [0.5, -0.5]);
      %c = fn [Composite="test.conv2d_bias_relu"] (%p0: Tensor[(1, 2, 4, 4), float32], %p1: Tensor[(2, 2, 1, 1), float32], %p2: Tensor[(2), float32]) {
        %0 = nn.conv2d(%p0, %p1);
        %1 = nn.bias_add(%0, %p2);
        %2 = nn.relu(%1);
        %2
      };
      %0 = %c(%test_0_i0, %w, %b);
      %0
    };
    %0 = %f0(%x);
    %1 = exp(%0);
)";

TEST(MergeComposite, TheLongerPatternWinsAndLeavesBecomeParameters) {
  ir::Expr f = ir::ParseFunction(R"(fn (%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 1, 1), float32], %b: Tensor[(2), float32]) {
    %0 = nn.conv2d(%x, %w);
    %1 = nn.bias_add(%0, %b);
    %2 = nn.relu(%1);
    %3 = nn.conv2d(%2, %w);
    %4 = nn.bias_add(%3, %b);
    %4
  })");
  ExpectText(MergeComposite(f, ConvPatterns()), R"(fn (%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 1, 1), float32], %b: Tensor[(2), float32]) {
    %f0 = fn [Composite="test.conv2d_bias_relu"] (%p0: Tensor[(1, 2, 4, 4), float32], %p1: Tensor[(2, 2, 1, 1), float32], %p2: Tensor[(2), float32]) {
      %0 = nn.conv2d(%p0, %p1);
      %1 = nn.bias_add(%0, %p2);
      %2 = nn.relu(%1);
      %2
    };
    %0 = %f0(%x, %w, %b);
    %f1 = fn [Composite="test.conv2d_bias"] (%p0: Tensor[(1, 2, 4, 4), float32], %p1: Tensor[(2, 2, 1, 1), float32], %p2: Tensor[(2), float32]) {
      %0 = nn.conv2d(%p0, %p1);
      %1 = nn.bias_add(%0, %p2);
      %1
    };
    %1 = %f1(%0, %w, %b);
    %1
  })");
}

TEST(MergeComposite, AnInteriorReadOutsideTheMatchIsNotMerged) {
  // The convolution is also read by exp: merging would compute it twice.
  const char* text = R"(fn (%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 1, 1), float32], %b: Tensor[(2), float32]) {
    %0 = nn.conv2d(%x, %w);
    %1 = nn.bias_add(%0, %b);
    %2 = exp(%0);
    %3 = add(%1, %2);
    %3
  })";
  ExpectText(MergeComposite(ir::ParseFunction(text), ConvPatterns()), text);
}

TEST(AnnotateTarget, ClaimedCallsAreMarkedAndConstantsStayAsTheyAre) {
  ir::Expr f = ir::ParseFunction(R"(fn (%x: Tensor[(4), float32]) {
    %c = const(Tensor[(4), float32], [1, 2, 3, 4]);
    %0 = nn.relu(%x);
    %1 = exp(%0);
    %2 = add(%1, %c);
    %2
  })");
  ExpectText(AnnotateTarget(f, TestTarget()), R"(fn (%x: Tensor[(4), float32]) {
    %c = const(Tensor[(4), float32], [1, 2, 3, 4]);
    %0 = annotation.compiler_begin(%x, compiler="test");
    %1 = nn.relu(%0);
    %2 = annotation.compiler_end(%1, compiler="test");
    %3 = exp(%2);
    %4 = annotation.compiler_begin(%3, compiler="test");
    %5 = add(%4, %c);
    %6 = annotation.compiler_end(%5, compiler="test");
    %6
  })");
}

TEST(AnnotateTarget, NothingSupportedLeavesTheFunctionAlone) {
  ir::Expr f = ir::ParseFunction("fn (%x: Tensor[(4), float32]) { %0 = exp(%x); %1 = tanh(%0); %1 }");
  EXPECT_EQ(AnnotateTarget(f, TestTarget()), f);
  EXPECT_EQ(PartitionGraph(MergeCompilerRegions(f)), f);
}

TEST(MergeCompilerRegions, AChainOfClaimedCallsBecomesOneRegion) {
  ir::Expr f = ir::ParseFunction(R"(fn (%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
    %0 = nn.relu(%x);
    %1 = add(%0, %y);
    %2 = nn.relu(%1);
    %2
  })");
  ExpectText(MergeCompilerRegions(AnnotateTarget(f, TestTarget())), R"(fn (%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
    %0 = annotation.compiler_begin(%x, compiler="test");
    %1 = nn.relu(%0);
    %2 = annotation.compiler_begin(%y, compiler="test");
    %3 = add(%1, %2);
    %4 = nn.relu(%3);
    %5 = annotation.compiler_end(%4, compiler="test");
    %5
  })");
}

TEST(MergeCompilerRegions, AJoinThroughAHostValueWouldMakeACycleAndIsNotMade) {
  // add reads relu directly and through exp, which the codegen does not run: one region holding
  // relu and add would feed exp and wait for it.
  ir::Expr f = ir::ParseFunction(R"(fn (%x: Tensor[(4), float32]) {
    %0 = nn.relu(%x);
    %1 = exp(%0);
    %2 = add(%0, %1);
    %2
  })");
  ExpectText(MergeCompilerRegions(AnnotateTarget(f, TestTarget())), R"(fn (%x: Tensor[(4), float32]) {
    %0 = annotation.compiler_begin(%x, compiler="test");
    %1 = nn.relu(%0);
    %2 = annotation.compiler_end(%1, compiler="test");
    %3 = annotation.compiler_begin(%2, compiler="test");
    %4 = exp(%2);
    %5 = annotation.compiler_begin(%4, compiler="test");
    %6 = add(%3, %5);
    %7 = annotation.compiler_end(%6, compiler="test");
    %7
  })");
}

TEST(PartitionGraph, RegionsBecomeExternalFunctionsWithTheirConstantsInside) {
  ExpectText(Partition(kConvChain), std::string(R"(fn (%x: Tensor[(1, 2, 4, 4), float32]) {
)") + kConvRegion + R"(
    %f1 = fn [Compiler="test", global_symbol="tvmgen_default_test_main_1", Primitive=1, Inline=1] (%test_1_i0: Tensor[(1, 2, 4, 4), float32], %test_1_i1: Tensor[(1, 2, 4, 4), float32]) {
      %0 = add(%test_1_i0, %test_1_i1);
      %1 = nn.relu(%0);
      %1
    };
    %2 = %f1(%0, %1);
    %2
  })");
}

TEST(PartitionGraph, RegionsSmallerThanTheMinimumStayOnTheHost) {
  PartitionOptions options;
  options.min_region_ops = 3;  // the convolution's region has 3 ops, add + relu 2
  ExpectText(Partition(kConvChain, options), std::string(R"(fn (%x: Tensor[(1, 2, 4, 4), float32]) {
)") + kConvRegion + R"(
    %2 = add(%0, %1);
    %3 = nn.relu(%2);
    %3
  })");
  options.min_region_ops = 4;  // nothing is claimed: the composite's ops are plain calls again
  ExpectText(Partition(kConvChain, options), kConvChain);
}

TEST(PartitionGraph, ARegionGivingSeveralValuesReturnsATuple) {
  ExpectText(Partition(R"(fn (%x: Tensor[(4), float32]) {
    %0 = nn.relu(%x);
    %1 = add(%0, %0);
    %2 = exp(%0);
    %3 = (%1, %2);
    %3
  })"), R"(fn (%x: Tensor[(4), float32]) {
    %f = fn [Compiler="test", global_symbol="tvmgen_default_test_main_0", Primitive=1, Inline=1] (%test_0_i0: Tensor[(4), float32]) {
      %0 = nn.relu(%test_0_i0);
      %1 = add(%0, %0);
      %2 = (%1, %0);
      %2
    };
    %0 = %f(%x);
    %1 = %0.0;
    %2 = %0.1;
    %3 = exp(%2);
    %4 = (%1, %3);
    %4
  })");
}

}  // namespace
}  // namespace kiln::transform
