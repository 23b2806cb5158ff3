// FoldConstant and FoldScaleAxis: IR text before and expected after (constants computed by the
// code generator, checked against values worked out by hand), and where they must not fire.
#include "pass_test_util.h"
#include "transform/fold_constant.h"
#include "transform/fold_scale_axis.h"

namespace kiln::transform {
namespace {

// transpose(sqrt([[1, 4], [9, 16]]) + [1, 2]) = transpose([[2, 4], [4, 6]]) = [[2, 4], [4, 6]].
TEST(FoldConstant, EvaluatesLargestConstantSubgraphs) {
  ExpectPass(FoldConstant, R"(fn (%x: Tensor[(2, 2), float32]) {
    %a = const(Tensor[(2, 2), float32], [1, 4, 9, 16]);
    %b = const(Tensor[(2), float32], [1, 2]);
    %0 = sqrt(%a);
    %1 = add(%0, %b);
    %2 = transpose(%1);
    %3 = multiply(%x, %2);
    %4 = exp(%x);
    (%3, %4)
  })",
             R"(fn (%x: Tensor[(2, 2), float32]) {
    %c = const(Tensor[(2, 2), float32], [2, 4, 4, 6]);
    %0 = multiply(%x, %c);
    %1 = exp(%x);
    (%0, %1)
  })");
}

TEST(FoldConstant, AboveTheSizeLimitNothingChanges) {
  PassContext context;
  context.SetConfig("kiln.FoldConstant.max_elements", "1");
  ir::Expr f = ir::ParseFunction(R"(fn (%x: Tensor[(2), float32]) {
    %a = const(Tensor[(2), float32], [1, 4]); %0 = sqrt(%a); %1 = add(%x, %0); %1
  })");
  EXPECT_TRUE(ir::StructurallyEqual(FoldConstant(f, PassEnvironment{context}), f));
}

// Ops without reference semantics stay (here a convolution of constants), and so does what they
// feed; the constant arithmetic before them folds.
TEST(FoldConstant, CallsOfOpsWithoutReferenceSemanticsStay) {
  ExpectPass(FoldConstant, R"(fn (%x: Tensor[(1, 1, 2, 2), float32]) {
    %a = const(Tensor[(1, 1, 2, 2), float32], [1, 2, 3, 4]);
    %w = const(Tensor[(1, 1, 1, 1), float32], [2]);
    %0 = multiply(%w, %w);
    %1 = nn.conv2d(%a, %0);
    %2 = nn.relu(%1);
    %3 = add(%x, %2);
    %3
  })",
             R"(fn (%x: Tensor[(1, 1, 2, 2), float32]) {
    %a = const(Tensor[(1, 1, 2, 2), float32], [1, 2, 3, 4]);
    %w = const(Tensor[(1, 1, 1, 1), float32], [4]);
    %0 = nn.conv2d(%a, %w);
    %1 = nn.relu(%0);
    %2 = add(%x, %1);
    %2
  })");
}

// Values the op leaves undefined are not folded: they stay for run time, where they behave as the
// kernel does.
TEST(FoldConstant, UndefinedValuesStay) {
  const char* texts[] = {
      R"(fn () { %a = const(Tensor[(3), float32], [1, 2, 3]); %i = const(Tensor[(1), int64], [3]);
                 %0 = take(%a, %i); %0 })",
      R"(fn () { %a = const(Tensor[(2), int32], [7, -2147483648]); %b = const(Tensor[(2), int32], [0, -1]);
                 %0 = divide(%a, %b); %0 })",
      R"(fn () { %a = const(Tensor[(2), float32], [nan, 3e10]); %0 = cast(%a, dtype="int32"); %0 })",
  };
  PassContext context;
  for (const char* text : texts) {
    ir::Expr f = ir::ParseFunction(text);
    EXPECT_TRUE(ir::StructurallyEqual(FoldConstant(f, PassEnvironment{context}), f)) << text;
  }
}

// Integer arithmetic wraps as the kernels do (two's complement), without undefined behaviour
// (UBSan runs this); integer division truncates toward zero; negative take indices count from
// the end; float to int casts truncate.
TEST(FoldConstant, IntegerSemantics) {
  ExpectPass(FoldConstant, R"(fn () {
    %a = const(Tensor[(3), int32], [2147483647, -7, 7]);
    %b = const(Tensor[(3), int32], [1, 2, -2]);
    %0 = add(%a, %b);
    %1 = divide(%a, %b);
    %2 = multiply(%a, %a);
    %i = const(Tensor[(2), int64], [-1, 0]);
    %3 = take(%a, %i);
    %f = const(Tensor[(3), float32], [-2.7, 2.7, -0.5]);
    %4 = cast(%f, dtype="int8");
    (%0, %1, %2, %3, %4)
  })",
             R"(fn () {
    %0 = const(Tensor[(3), int32], [-2147483648, -5, 5]);
    %1 = const(Tensor[(3), int32], [2147483647, -3, -3]);
    %2 = const(Tensor[(3), int32], [1, 49, 49]);
    %3 = const(Tensor[(2), int32], [7, 2147483647]);
    %4 = const(Tensor[(3), int8], [-2, 2, 0]);
    (%0, %1, %2, %3, %4)
  })");
}

// Transposes and strided slices gather with strides for elements of every width (1, 2, 4 and 8
// bytes), checked against values written by hand.
TEST(FoldConstant, StridedGathersOfEveryElementWidth) {
  ExpectPass(FoldConstant, R"(fn () {
    %a = const(Tensor[(2, 3), int8], [1, 2, 3, -4, -5, -6]);
    %b = const(Tensor[(2, 3), int16], [1000, 2000, 3000, -4000, -5000, -6000]);
    %c = const(Tensor[(2, 3), int32], [1, 2, 3, 4, 5, 6]);
    %d = const(Tensor[(2, 3), int64], [10000000000, 2, 3, 4, 5, -60000000000]);
    %e = const(Tensor[(2, 3), bool], [1, 0, 0, 1, 1, 0]);
    %0 = transpose(%a, axes=[1, 0]);
    %1 = transpose(%b, axes=[1, 0]);
    %2 = transpose(%c, axes=[1, 0]);
    %3 = transpose(%d, axes=[1, 0]);
    %4 = transpose(%e, axes=[1, 0]);
    %5 = strided_slice(%d, begin=[2], end=[-4], strides=[-2], axes=[1]);
    (%0, %1, %2, %3, %4, %5)
  })",
             R"(fn () {
    %0 = const(Tensor[(3, 2), int8], [1, -4, 2, -5, 3, -6]);
    %1 = const(Tensor[(3, 2), int16], [1000, -4000, 2000, -5000, 3000, -6000]);
    %2 = const(Tensor[(3, 2), int32], [1, 4, 2, 5, 3, 6]);
    %3 = const(Tensor[(3, 2), int64], [10000000000, 4, 2, 5, 3, -60000000000]);
    %4 = const(Tensor[(3, 2), bool], [1, 1, 0, 1, 0, 0]);
    %5 = const(Tensor[(2, 2), int64], [3, 10000000000, -60000000000, 4]);
    (%0, %1, %2, %3, %4, %5)
  })");
}

TEST(FoldScaleAxis, ChannelScaleMovesIntoConvWeightsAndBias) {
  ExpectPass(FoldScaleAxis, R"(fn (%x: Tensor[(1, 1, 3, 3), float32]) {
    %w = const(Tensor[(2, 1, 1, 1), float32], [1, 2]);
    %b = const(Tensor[(2), float32], [3, 4]);
    %s = const(Tensor[(2, 1, 1), float32], [10, 100]);
    %0 = nn.conv2d(%x, %w);
    %1 = nn.bias_add(%0, %b);
    %2 = multiply(%1, %s);
    %2
  })",
             R"(fn (%x: Tensor[(1, 1, 3, 3), float32]) {
    %w = const(Tensor[(2, 1, 1, 1), float32], [1, 2]);
    %b = const(Tensor[(2), float32], [3, 4]);
    %s = const(Tensor[(2, 1, 1), float32], [10, 100]);
    %0 = reshape(%s, newshape=[2, 1, 1, 1]);
    %1 = multiply(%w, %0);
    %2 = nn.conv2d(%x, %1);
    %3 = reshape(%s, newshape=[2]);
    %4 = multiply(%b, %3);
    %5 = nn.bias_add(%2, %4);
    %5
  })");
}

TEST(FoldScaleAxis, DenseScaleAlongOutputs) {
  ExpectPass(FoldScaleAxis, R"(fn (%x: Tensor[(1, 2), float32]) {
    %w = const(Tensor[(3, 2), float32], [1, 2, 3, 4, 5, 6]);
    %s = const(Tensor[(3), float32], [1, 2, 3]);
    %0 = nn.dense(%x, %w);
    %1 = multiply(%s, %0);
    %1
  })",
             R"(fn (%x: Tensor[(1, 2), float32]) {
    %w = const(Tensor[(3, 2), float32], [1, 2, 3, 4, 5, 6]);
    %s = const(Tensor[(3), float32], [1, 2, 3]);
    %0 = reshape(%s, newshape=[3, 1]);
    %1 = multiply(%w, %0);
    %2 = nn.dense(%x, %1);
    %2
  })");
}

TEST(FoldScaleAxis, DoesNotFireWhenIllegal) {
  // The scale varies along the width, is not constant, or the conv has another use.
  const char* text = R"(fn (%x: Tensor[(1, 1, 3, 3), float32], %v: Tensor[(2, 1, 1), float32]) {
    %w = const(Tensor[(2, 1, 1, 1), float32], [1, 2]);
    %s = const(Tensor[(1, 1, 3), float32], [1, 2, 3]);
    %t = const(Tensor[(2, 1, 1), float32], [5, 6]);
    %0 = nn.conv2d(%x, %w);
    %1 = multiply(%0, %s);
    %2 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
    %3 = multiply(%2, %v);
    %4 = nn.conv2d(%x, %w, strides=[2, 2]);
    %5 = multiply(%4, %t);
    (%1, %3, %5, %4)
  })";
  ExpectPass(FoldScaleAxis, text, text);
}

// Squeeze-and-excitation's gate, computed at run time, multiplies the projection's weight
// (3 x 1 x 1 per input channel) instead of the 4x4 input.
TEST(FoldScaleAxis, RunTimeInputScaleMovesIntoTheNextConvWeight) {
  ExpectPass(FoldScaleAxis, R"(fn (%x: Tensor[(1, 2, 4, 4), float32], %v: Tensor[(1, 2, 1, 1), float32]) {
    %w = const(Tensor[(3, 2, 1, 1), float32], [1, 2, 3, 4, 5, 6]);
    %0 = sigmoid(%v);
    %1 = multiply(%x, %0);
    %2 = nn.conv2d(%1, %w);
    %2
  })",
             R"(fn (%x: Tensor[(1, 2, 4, 4), float32], %v: Tensor[(1, 2, 1, 1), float32]) {
    %w = const(Tensor[(3, 2, 1, 1), float32], [1, 2, 3, 4, 5, 6]);
    %0 = sigmoid(%v);
    %1 = reshape(%0, newshape=[1, 2, 1, 1]);
    %2 = multiply(%w, %1);
    %3 = nn.conv2d(%x, %2);
    %3
  })");
}

TEST(FoldScaleAxis, InputScaleStaysWhereFoldingIsIllegalOrCostsMore) {
  // A weight of more elements per input channel (5 x 1 x 1) than the input has positions (2x2);
  // a scaled input read by another op too; a grouped convolution; a scale along the width.
  const char* text = R"(fn (%x: Tensor[(1, 2, 2, 2), float32], %v: Tensor[(1, 2, 1, 1), float32],
                          %u: Tensor[(1, 1, 1, 2), float32]) {
    %w = const(Tensor[(5, 2, 1, 1), float32], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    %k = const(Tensor[(1, 2, 1, 1), float32], [1, 2]);
    %g = const(Tensor[(2, 1, 1, 1), float32], [3, 4]);
    %0 = multiply(%x, %v);
    %1 = nn.conv2d(%0, %w);
    %2 = multiply(%x, %v);
    %3 = nn.conv2d(%2, %k);
    %4 = exp(%2);
    %5 = multiply(%x, %v);
    %6 = nn.conv2d(%5, %g, groups=2);
    %7 = multiply(%x, %u);
    %8 = nn.conv2d(%7, %k);
    (%1, %3, %4, %6, %8)
  })";
  ExpectPass(FoldScaleAxis, text, text);
}

TEST(FoldScaleAxis, DoesNotFireOnPackedDenseWeights) {
  // AlterOpLayout's packed form NK16n: the weight's first axis is not the output column any more.
  const char* text = R"(fn (%x: Tensor[(1, 2), float32]) {
    %w = const(Tensor[(1, 2, 16), float32], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32]);
    %s = const(Tensor[(16), float32], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
    %0 = nn.dense(%x, %w, weight_layout="NK16n");
    %1 = multiply(%0, %s);
    %1
  })";
  ExpectPass(FoldScaleAxis, text, text);
}

}  // namespace
}  // namespace kiln::transform
