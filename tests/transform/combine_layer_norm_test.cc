// CombineLayerNorm: PyTorch's pre-opset-17 layer norm export becomes nn.layer_norm, in IR text;
// what is not a layer norm over the last axis stays. (Numerics: bert_2layer against ONNX Runtime
// in tests/python/test_model_suite.py, which runs through it.)
#include <gtest/gtest.h>

#include "tests/transform/pass_test_util.h"
#include "transform/combine_layer_norm.h"

namespace kiln::transform {
namespace {

TEST(CombineLayerNorm, TheExportedPartsBecomeOneLayerNorm) {
  ExpectPass(CombineLayerNorm, R"(fn (%x: Tensor[(2, 3, 4), float32]) {
    %0 = mean(%x, axis=[2], keepdims=1);
    %1 = subtract(%x, %0);
    %2 = const(Tensor[(), float32], [2]);
    %3 = power(%1, %2);
    %4 = mean(%3, axis=[-1], keepdims=1);
    %eps = const(Tensor[(), float32], [0.0009765625]);
    %5 = add(%4, %eps);
    %6 = sqrt(%5);
    %7 = divide(%1, %6);
    %g = const(Tensor[(4), float32], [1, 2, 3, 4]);
    %8 = multiply(%g, %7);
    %b = const(Tensor[(1, 4), float32], [0, 1, 0, 1]);
    %9 = add(%8, %b);
    %9
  })",
             R"(fn (%x: Tensor[(2, 3, 4), float32]) {
    %g = const(Tensor[(4), float32], [1, 2, 3, 4]);
    %b = const(Tensor[(1, 4), float32], [0, 1, 0, 1]);
    %0 = reshape(%b, newshape=[4]);
    %1 = nn.layer_norm(%x, %g, %0, axis=-1, epsilon=0.0009765625);
    %1
  })");
}

// Squares as SimplifyExpr leaves them (x * x) are taken too.
TEST(CombineLayerNorm, SquaresAsMultipliesAreTaken) {
  ExpectPass(CombineLayerNorm, R"(fn (%x: Tensor[(3, 4), float32]) {
    %0 = mean(%x, axis=[1], keepdims=1);
    %1 = subtract(%x, %0);
    %2 = multiply(%1, %1);
    %3 = mean(%2, axis=[1], keepdims=1);
    %eps = const(Tensor[(1), float32], [0.0000152587890625]);
    %4 = add(%eps, %3);
    %5 = sqrt(%4);
    %6 = divide(%1, %5);
    %g = const(Tensor[(4), float32], [1, 2, 3, 4]);
    %7 = multiply(%6, %g);
    %b = const(Tensor[(4), float32], [0, 1, 0, 1]);
    %8 = add(%7, %b);
    %8
  })",
             R"(fn (%x: Tensor[(3, 4), float32]) {
    %g = const(Tensor[(4), float32], [1, 2, 3, 4]);
    %b = const(Tensor[(4), float32], [0, 1, 0, 1]);
    %0 = nn.layer_norm(%x, %g, %b, axis=-1, epsilon=0.0000152587890625);
    %0
  })");
}

// SimplifyExpr removes a gamma of ones and a beta of zeros: the layer norm gets them back.
TEST(CombineLayerNorm, WithoutGammaAndBetaTheyAreOnesAndZeros) {
  ExpectPass(CombineLayerNorm, R"(fn (%x: Tensor[(3, 2), float32]) {
    %0 = mean(%x, axis=[1], keepdims=1);
    %1 = subtract(%x, %0);
    %2 = multiply(%1, %1);
    %3 = mean(%2, axis=[1], keepdims=1);
    %eps = const(Tensor[(), float32], [0.0000152587890625]);
    %4 = add(%3, %eps);
    %5 = sqrt(%4);
    %6 = divide(%1, %5);
    %b = const(Tensor[(2), float32], [0.5, 1]);
    %7 = add(%6, %b);
    %7
  })",
             R"(fn (%x: Tensor[(3, 2), float32]) {
    %g = const(Tensor[(2), float32], [1, 1]);
    %b = const(Tensor[(2), float32], [0.5, 1]);
    %0 = nn.layer_norm(%x, %g, %b, axis=-1, epsilon=0.0000152587890625);
    %0
  })");
  ExpectPass(CombineLayerNorm, R"(fn (%x: Tensor[(3, 2), float32]) {
    %0 = mean(%x, axis=[1], keepdims=1);
    %1 = subtract(%x, %0);
    %2 = multiply(%1, %1);
    %3 = mean(%2, axis=[1], keepdims=1);
    %eps = const(Tensor[(), float32], [0.0000152587890625]);
    %4 = add(%3, %eps);
    %5 = sqrt(%4);
    %6 = divide(%1, %5);
    %6
  })",
             R"(fn (%x: Tensor[(3, 2), float32]) {
    %g = const(Tensor[(2), float32], [1, 1]);
    %b = const(Tensor[(2), float32], [0, 0]);
    %0 = nn.layer_norm(%x, %g, %b, axis=-1, epsilon=0.0000152587890625);
    %0
  })");
}

// A layer norm of a [3, 4] input over `axis` with gamma `gamma` (a constant's type and values),
// whose result is `result`.
std::string Parts(const std::string& axis, const std::string& gamma, const std::string& result) {
  return R"(fn (%x: Tensor[(3, 4), float32]) {
    %0 = mean(%x, axis=[)" + axis + R"(], keepdims=1);
    %1 = subtract(%x, %0);
    %2 = multiply(%1, %1);
    %3 = mean(%2, axis=[)" + axis + R"(], keepdims=1);
    %eps = const(Tensor[(), float32], [0.00001]);
    %4 = add(%3, %eps);
    %5 = sqrt(%4);
    %6 = divide(%1, %5);
    %g = const()" + gamma + R"();
    %7 = multiply(%6, %g);
    %b = const(Tensor[(4), float32], [0, 1, 0, 1]);
    %8 = add(%7, %b);
    )" + result + R"(
  })";
}

// Over another axis than the last, or with the centered value read elsewhere too: no layer norm.
// A gamma that varies along another axis is not the layer norm's: it stays a multiply after it.
TEST(CombineLayerNorm, WhatIsNotALayerNormOverTheLastAxisStays) {
  const std::string gamma = "Tensor[(4), float32], [1, 2, 3, 4]";
  for (const std::string& text : {Parts("0", gamma, "%8"), Parts("1", gamma, "(%8, %1)")}) {
    ExpectPass(CombineLayerNorm, text, text);
  }
  ExpectPass(CombineLayerNorm, Parts("1", "Tensor[(3, 1), float32], [1, 2, 3]", "%8"), R"(fn (%x: Tensor[(3, 4), float32]) {
    %ones = const(Tensor[(4), float32], [1, 1, 1, 1]);
    %zeros = const(Tensor[(4), float32], [0, 0, 0, 0]);
    %0 = nn.layer_norm(%x, %ones, %zeros, axis=-1, epsilon=0.0000099999997473787516);
    %g = const(Tensor[(3, 1), float32], [1, 2, 3]);
    %1 = multiply(%0, %g);
    %b = const(Tensor[(4), float32], [0, 1, 0, 1]);
    %2 = add(%1, %b);
    %2
  })");
  EXPECT_NE(ir::PrintFunction(CombineLayerNorm(ir::ParseFunction(Parts("1", gamma, "%8")), {PassContext{}})),
            ir::PrintFunction(ir::ParseFunction(Parts("1", gamma, "%8"))));  // the control: this one combines
}

}  // namespace
}  // namespace kiln::transform
