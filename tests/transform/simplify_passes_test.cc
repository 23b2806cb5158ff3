// LegalizeNarrowFloats, SimplifyInference, SimplifyExpr, EliminateCommonSubexpr and DeadCodeElimination: IR text
// before and expected after, including where they must not fire.
#include "pass_test_util.h"
#include "transform/dead_code_elimination.h"
#include "transform/eliminate_common_subexpr.h"
#include "transform/legalize_narrow_floats.h"
#include "transform/simplify_expr.h"
#include "transform/simplify_inference.h"

namespace kiln::transform {
namespace {

// Arithmetic on float16 runs on float32 between casts; data movement and float32 ops stay.
TEST(LegalizeNarrowFloats, ComputesInFloat32BetweenCasts) {
  ExpectPass(LegalizeNarrowFloats, R"(fn (%x: Tensor[(2, 3), float16], %y: Tensor[(2, 3), float32]) {
    %0 = transpose(%x, axes=[1, 0]);
    %1 = exp(%0);
    %2 = cast(%y, dtype="float16");
    %3 = reshape(%2, newshape=[3, 2]);
    %4 = add(%1, %3);
    %5 = nn.relu(%y);
    (%4, %5)
  })",
             R"(fn (%x: Tensor[(2, 3), float16], %y: Tensor[(2, 3), float32]) {
    %0 = transpose(%x, axes=[1, 0]);
    %1 = cast(%0, dtype="float32");
    %2 = exp(%1);
    %3 = cast(%2, dtype="float16");
    %4 = cast(%3, dtype="float32");
    %5 = cast(%y, dtype="float16");
    %6 = reshape(%5, newshape=[3, 2]);
    %7 = cast(%6, dtype="float32");
    %8 = add(%4, %7);
    %9 = cast(%8, dtype="float16");
    %10 = nn.relu(%y);
    (%9, %10)
  })");
}

TEST(LegalizeNarrowFloats, BFloat16AndFloat8AreCastBackToTheirOwnFormat) {
  ExpectPass(LegalizeNarrowFloats, R"(fn (%x: Tensor[(4), bfloat16], %y: Tensor[(4), float8_e4m3fn]) {
    %0 = abs(%x);
    %1 = reshape(%y, newshape=[2, 2]);
    %2 = negative(%1);
    (%0, %2)
  })",
             R"(fn (%x: Tensor[(4), bfloat16], %y: Tensor[(4), float8_e4m3fn]) {
    %0 = cast(%x, dtype="float32");
    %1 = abs(%0);
    %2 = cast(%1, dtype="bfloat16");
    %3 = reshape(%y, newshape=[2, 2]);
    %4 = cast(%3, dtype="float32");
    %5 = negative(%4);
    %6 = cast(%5, dtype="float8_e4m3fn");
    (%2, %6)
  })");
}

TEST(SimplifyInference, BatchNormBecomesScaleAndShiftDropoutDisappears) {
  ExpectPass(SimplifyInference, R"(fn (%x: Tensor[(1, 2, 3, 3), float32], %g: Tensor[(2), float32], %b: Tensor[(2), float32], %m: Tensor[(2), float32], %v: Tensor[(2), float32]) {
    %0 = nn.batch_norm(%x, %g, %b, %m, %v, epsilon=0.001);
    %1 = nn.dropout(%0);
    %1
  })",
             R"(fn (%x: Tensor[(1, 2, 3, 3), float32], %g: Tensor[(2), float32], %b: Tensor[(2), float32], %m: Tensor[(2), float32], %v: Tensor[(2), float32]) {
    %eps = const(Tensor[(), float32], [0.001]);
    %0 = add(%v, %eps);
    %1 = sqrt(%0);
    %scale = divide(%g, %1);
    %2 = multiply(%m, %scale);
    %shift = subtract(%b, %2);
    %s = reshape(%scale, newshape=[2, 1, 1]);
    %t = reshape(%shift, newshape=[2, 1, 1]);
    %3 = multiply(%x, %s);
    %4 = add(%3, %t);
    %4
  })");
}

TEST(SimplifyInference, LeavesOtherOpsAlone) {
  const char* text = "fn (%x: Tensor[(4), float32]) { %0 = nn.relu(%x); %1 = nn.softmax(%0); %1 }";
  ExpectPass(SimplifyInference, text, text);
}

TEST(SimplifyExpr, ReshapeChainsTransposePairsAndIdentities) {
  ExpectPass(SimplifyExpr, R"(fn (%x: Tensor[(2, 3, 4), float32]) {
    %0 = reshape(%x, newshape=[6, 4]);
    %1 = expand_dims(%0, axis=0);
    %2 = squeeze(%1, axis=[0]);
    %3 = reshape(%2, newshape=[24]);
    %4 = transpose(%x, axes=[1, 0, 2]);
    %5 = transpose(%4, axes=[1, 0, 2]);
    %6 = transpose(%x, axes=[2, 0, 1]);
    %7 = transpose(%6, axes=[0, 2, 1]);
    %one = const(Tensor[(1), float32], [1]);
    %zero = const(Tensor[(4), float32], [0, 0, 0, 0]);
    %8 = multiply(%5, %one);
    %9 = add(%zero, %8);
    %10 = cast(%9, dtype="float32");
    %11 = nn.pad(%10, pad_width=[0, 0, 0, 0, 0, 0], pad_mode="reflect");
    (%3, %11, %7)
  })",
             R"(fn (%x: Tensor[(2, 3, 4), float32]) {
    %0 = reshape(%x, newshape=[24]);
    %1 = transpose(%x, axes=[2, 1, 0]);
    (%0, %x, %1)
  })");
}

// A transpose that moves only axes of extent 1 (the others keep their order) is a reshape; one
// that reorders longer axes stays.
TEST(SimplifyExpr, TransposesOfUnitAxesAreReshapes) {
  ExpectPass(SimplifyExpr, R"(fn (%x: Tensor[(1, 197, 768), float32], %y: Tensor[(4, 1, 6, 1), float32]) {
    %0 = transpose(%x, axes=[1, 0, 2]);
    %1 = transpose(%y, axes=[1, 3, 0, 2]);
    %2 = transpose(%y, axes=[2, 1, 0, 3]);
    (%0, %1, %2)
  })",
             R"(fn (%x: Tensor[(1, 197, 768), float32], %y: Tensor[(4, 1, 6, 1), float32]) {
    %0 = reshape(%x, newshape=[197, 1, 768]);
    %1 = reshape(%y, newshape=[1, 1, 4, 6]);
    %2 = transpose(%y, axes=[2, 1, 0, 3]);
    (%0, %1, %2)
  })");
}

// x^2 is x * x and x^1 is x; other exponents, and exponents that broadcast x, stay powers.
TEST(SimplifyExpr, SquaresAndFirstPowers) {
  ExpectPass(SimplifyExpr, R"(fn (%x: Tensor[(4), float32]) {
    %two = const(Tensor[(), float32], [2]);
    %one = const(Tensor[(1), float32], [1]);
    %three = const(Tensor[(), float32], [3]);
    %twos = const(Tensor[(2, 4), float32], [2, 2, 2, 2, 2, 2, 2, 2]);
    %0 = power(%x, %two);
    %1 = power(%x, %one);
    %2 = power(%x, %three);
    %3 = power(%x, %twos);
    (%0, %1, %2, %3)
  })",
             R"(fn (%x: Tensor[(4), float32]) {
    %three = const(Tensor[(), float32], [3]);
    %twos = const(Tensor[(2, 4), float32], [2, 2, 2, 2, 2, 2, 2, 2]);
    %0 = multiply(%x, %x);
    %1 = power(%x, %three);
    %2 = power(%x, %twos);
    (%0, %x, %1, %2)
  })");
}

// 1-D convolutions run as 2-D ones between reshapes: the bias, scale and activation between two
// of them move before the reshape (constants laid out for the 4-D tensor, the bias axis kept),
// and the reshapes that then meet disappear.
TEST(SimplifyExpr, ElementwiseOpsMoveBeforeReshapesOfUnitAxes) {
  ExpectPass(SimplifyExpr, R"(fn (%x: Tensor[(1, 4, 1, 10), float32], %w: Tensor[(4, 4, 1, 3), float32]) {
    %0 = nn.conv2d(%x, %w, padding=[0, 1, 0, 1]);
    %1 = reshape(%0, newshape=[1, 4, 10]);
    %b = const(Tensor[(4), float32], [1, 2, 3, 4]);
    %2 = nn.bias_add(%1, %b);
    %s = const(Tensor[(4, 1), float32], [1, 2, 3, 4]);
    %3 = multiply(%2, %s);
    %4 = nn.relu(%3);
    %5 = reshape(%4, newshape=[1, 4, 1, 10]);
    %6 = nn.conv2d(%5, %w, padding=[0, 1, 0, 1]);
    %7 = reshape(%6, newshape=[1, 4, 10]);
    %8 = reshape(%x, newshape=[1, 4, 10]);
    %9 = add(%7, %8);
    %9
  })",
             R"(fn (%x: Tensor[(1, 4, 1, 10), float32], %w: Tensor[(4, 4, 1, 3), float32]) {
    %0 = nn.conv2d(%x, %w, padding=[0, 1, 0, 1]);
    %b = const(Tensor[(4), float32], [1, 2, 3, 4]);
    %1 = nn.bias_add(%0, %b);
    %s = const(Tensor[(1, 4, 1, 1), float32], [1, 2, 3, 4]);
    %2 = multiply(%1, %s);
    %3 = nn.relu(%2);
    %4 = nn.conv2d(%3, %w, padding=[0, 1, 0, 1]);
    %5 = add(%4, %x);
    %6 = reshape(%5, newshape=[1, 4, 10]);
    %6
  })");
}

// A reshape that moves elements between axes keeps the ops after it where they are, and so does
// a constant operand along an axis the reshape adds.
TEST(SimplifyExpr, ElementwiseOpsStayAfterOtherReshapes) {
  const char* text = R"(fn (%x: Tensor[(2, 6), float32], %y: Tensor[(4, 3), float32]) {
    %0 = reshape(%x, newshape=[3, 4]);
    %1 = nn.relu(%0);
    %2 = reshape(%y, newshape=[4, 1, 3]);
    %c = const(Tensor[(2, 1), float32], [1, 2]);
    %3 = add(%2, %c);
    (%1, %3)
  })";
  ExpectPass(SimplifyExpr, text, text);
}

TEST(SimplifyExpr, KeepsWhatChangesValuesOrShapes) {
  const char* text = R"(fn (%x: Tensor[(4), float32]) {
    %ones = const(Tensor[(2, 4), float32], [1, 1, 1, 1, 1, 1, 1, 1]);
    %0 = multiply(%x, %ones);
    %two = const(Tensor[(1), float32], [2]);
    %1 = add(%x, %two);
    %2 = cast(%x, dtype="int64");
    %3 = transpose(%0, axes=[1, 0]);
    %4 = nn.pad(%x, pad_width=[0, 1]);
    %5 = nn.pad(%x, pad_width=[1, 0], pad_mode="edge");
    (%0, %1, %2, %3, %4, %5)
  })";
  ExpectPass(SimplifyExpr, text, text);
}

TEST(EliminateCommonSubexpr, MergesEqualCallsAndConstants) {
  ExpectPass(EliminateCommonSubexpr, R"(fn (%x: Tensor[(3), float32]) {
    %c0 = const(Tensor[(3), float32], [1, 2, 3]);
    %c1 = const(Tensor[(3), float32], [1, 2, 3]);
    %0 = add(%x, %c0);
    %1 = add(%x, %c1);
    %2 = exp(%0);
    %3 = exp(%1);
    %4 = clip(%x, a_min=0.0, a_max=1.0);
    %5 = clip(%x, a_min=0.0, a_max=2.0);
    (%2, %3, %4, %5)
  })",
             R"(fn (%x: Tensor[(3), float32]) {
    %c = const(Tensor[(3), float32], [1, 2, 3]);
    %0 = add(%x, %c);
    %1 = exp(%0);
    %2 = clip(%x, a_min=0.0, a_max=1.0);
    %3 = clip(%x, a_min=0.0, a_max=2.0);
    (%1, %1, %2, %3)
  })");
}

TEST(EliminateCommonSubexpr, DifferentInputsStayApart) {
  const char* text = R"(fn (%x: Tensor[(3), float32], %y: Tensor[(3), float32]) {
    %0 = exp(%x); %1 = exp(%y); %c = const(Tensor[(3), float32], [1, 2, 3]); %d = const(Tensor[(3), float32], [1, 2, 4]);
    %2 = add(%0, %c); %3 = add(%0, %d); (%1, %2, %3)
  })";
  ExpectPass(EliminateCommonSubexpr, text, text);
}

TEST(DeadCodeElimination, TupleItemsAndUnusedPrimitiveParameters) {
  ExpectPass(DeadCodeElimination, R"(fn (%x: Tensor[(3), float32], %y: Tensor[(3), float32]) {
    %t = (%x, %y);
    %a = %t.1;
    %f = fn [Primitive=1] (%p0: Tensor[(3), float32], %p1: Tensor[(3), float32]) { %0 = exp(%p1); %0 };
    %r = %f(%x, %a);
    %r
  })",
             R"(fn (%x: Tensor[(3), float32], %y: Tensor[(3), float32]) {
    %f = fn [Primitive=1] (%p1: Tensor[(3), float32]) { %0 = exp(%p1); %0 };
    %r = %f(%y);
    %r
  })");
}

TEST(DeadCodeElimination, KeepsItemsOfComputedTuples) {
  const char* text = R"(fn (%x: Tensor[(4), float32]) {
    %s = split(%x, sections=[1, 3]); %a = %s.1; %a
  })";
  ExpectPass(DeadCodeElimination, text, text);
}

TEST(DeadCodeElimination, ExternalFunctionsKeepTheirParameters) {
  const char* text = R"(fn (%x: Tensor[(3), float32], %y: Tensor[(3), float32]) {
    %f = fn [Compiler="dnnl", global_symbol="ext0", Primitive=1] (%p0: Tensor[(3), float32], %p1: Tensor[(3), float32]) { %0 = exp(%p1); %0 };
    %r = %f(%x, %y);
    %r
  })";
  ExpectPass(DeadCodeElimination, text, text);
}

}  // namespace
}  // namespace kiln::transform
