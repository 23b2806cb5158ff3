// FuseOps: IR text before and the expected IR text after, including where it must not fuse.
#include "transform/fuse_ops.h"

#include <gtest/gtest.h>

#include "ir/text.h"
#include "runtime/error.h"

namespace kiln::transform {
namespace {

void ExpectFused(const std::string& before, const std::string& expected, FuseOptions options = {}) {
  ir::Expr actual = FuseOps(ir::ParseFunction(before), options);
  ir::Expr want = ir::ParseFunction(expected);
  EXPECT_TRUE(ir::StructurallyEqual(actual, want)) << "got:\n" << ir::PrintFunction(actual) << "expected:\n"
                                                   << ir::PrintFunction(want);
}

TEST(FuseOps, ConvTakesBiasResidualAddAndActivation) {
  ExpectFused(R"(fn (%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 3, 3), float32], %b: Tensor[(2), float32]) {
    %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
    %1 = nn.bias_add(%0, %b);
    %2 = add(%1, %x);
    %3 = nn.relu(%2);
    %3
  })",
              R"(fn (%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 3, 3), float32], %b: Tensor[(2), float32]) {
    %f = fn [Primitive=1] (%p0: Tensor[(1, 2, 4, 4), float32], %p1: Tensor[(2, 2, 3, 3), float32], %p2: Tensor[(2), float32]) {
      %0 = nn.conv2d(%p0, %p1, padding=[1, 1, 1, 1]);
      %1 = nn.bias_add(%0, %p2);
      %2 = add(%1, %p0);
      %3 = nn.relu(%2);
      %3
    };
    %r = %f(%x, %w, %b);
    %r
  })");
}

// exp has two consumers that meet again only through an opaque op (softmax), so it ends its
// group; add joins the group of its first argument.
TEST(FuseOps, AValueWithTwoConsumersEndsItsGroup) {
  ExpectFused(R"(fn (%x: Tensor[(4), float32]) {
    %0 = exp(%x);
    %1 = nn.relu(%0);
    %2 = nn.softmax(%0);
    %3 = add(%1, %2);
    %3
  })",
              R"(fn (%x: Tensor[(4), float32]) {
    %f0 = fn [Primitive=1] (%p0: Tensor[(4), float32]) { %0 = exp(%p0); %0 };
    %e = %f0(%x);
    %f1 = fn [Primitive=1] (%p0: Tensor[(4), float32]) { %0 = nn.softmax(%p0); %0 };
    %s = %f1(%e);
    %f2 = fn [Primitive=1] (%p0: Tensor[(4), float32], %p1: Tensor[(4), float32]) { %0 = nn.relu(%p0); %1 = add(%0, %p1); %1 };
    %r = %f2(%e, %s);
    %r
  })");
}

// A result read twice whose readers meet again (swish: x * sigmoid(x)) stays in its group: the
// convolution, its bias, sigmoid and multiply are one function. When a reader is a graph output
// the paths do not meet inside and the group ends.
TEST(FuseOps, DiamondsJoinTheGroupOfTheirSource) {
  ExpectFused(R"(fn (%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 1, 1), float32], %b: Tensor[(2), float32]) {
    %0 = nn.conv2d(%x, %w);
    %1 = nn.bias_add(%0, %b);
    %2 = sigmoid(%1);
    %3 = multiply(%1, %2);
    %4 = nn.relu(%3);
    %4
  })",
              R"(fn (%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 1, 1), float32], %b: Tensor[(2), float32]) {
    %f = fn [Primitive=1] (%p0: Tensor[(1, 2, 4, 4), float32], %p1: Tensor[(2, 2, 1, 1), float32], %p2: Tensor[(2), float32]) {
      %0 = nn.conv2d(%p0, %p1);
      %1 = nn.bias_add(%0, %p2);
      %2 = sigmoid(%1);
      %3 = multiply(%1, %2);
      %4 = nn.relu(%3);
      %4
    };
    %r = %f(%x, %w, %b);
    %r
  })");
  ExpectFused(R"(fn (%x: Tensor[(4), float32]) {
    %0 = exp(%x); %1 = sigmoid(%0); %2 = multiply(%0, %1); (%1, %2)
  })",
              R"(fn (%x: Tensor[(4), float32]) {
    %f0 = fn [Primitive=1] (%p0: Tensor[(4), float32]) { %0 = exp(%p0); %0 };
    %e = %f0(%x);
    %f1 = fn [Primitive=1] (%p0: Tensor[(4), float32]) { %0 = sigmoid(%p0); %0 };
    %s = %f1(%e);
    %f2 = fn [Primitive=1] (%p0: Tensor[(4), float32], %p1: Tensor[(4), float32]) { %0 = multiply(%p0, %p1); %0 };
    %m = %f2(%e, %s);
    (%s, %m)
  })");
}

// Two values each read twice whose four reads meet in one concatenation (YOLOv5's Focus stem of
// slices): the concatenation joins the first value's diamond; the second diamond ends there too,
// so it stays apart instead of taking the concatenation from under the first group (which then
// read %1 and %4 from outside it, an unordered_map::at escaping the pass).
TEST(FuseOps, TwoDiamondsEndingInOneOpJoinTheFirst) {
  ExpectFused(R"(fn (%x: Tensor[(4), float32]) {
    %0 = exp(%x); %1 = sigmoid(%0); %2 = tanh(%x); %3 = sigmoid(%2); %4 = abs(%0); %5 = abs(%2);
    %6 = concatenate(%1, %3, %4, %5, axis=0);
    %6
  })",
              R"(fn (%x: Tensor[(4), float32]) {
    %f0 = fn [Primitive=1] (%p0: Tensor[(4), float32]) { %0 = tanh(%p0); %0 };
    %t = %f0(%x);
    %f1 = fn [Primitive=1] (%p0: Tensor[(4), float32]) { %0 = sigmoid(%p0); %0 };
    %s = %f1(%t);
    %f2 = fn [Primitive=1] (%p0: Tensor[(4), float32]) { %0 = abs(%p0); %0 };
    %a = %f2(%t);
    %f3 = fn [Primitive=1] (%p0: Tensor[(4), float32], %p1: Tensor[(4), float32], %p2: Tensor[(4), float32]) {
      %0 = exp(%p0); %1 = sigmoid(%0); %2 = abs(%0); %3 = concatenate(%1, %p1, %2, %p2, axis=0); %3
    };
    %r = %f3(%x, %s, %a);
    %r
  })");
}

// Layer norm written out: the reduction takes the elementwise ops before it (the squared
// difference) as its input stage; x - mean, read twice, ends the first group because the second
// reduction cannot join a reduction's group.
TEST(FuseOps, ReductionsTakeElementwiseProducers) {
  ExpectFused(R"(fn (%x: Tensor[(2, 8), float32]) {
    %two = const(Tensor[(), float32], [2]);
    %eps = const(Tensor[(), float32], [1e-05]);
    %0 = mean(%x, axis=[-1], keepdims=1);
    %1 = subtract(%x, %0);
    %2 = power(%1, %two);
    %3 = mean(%2, axis=[-1], keepdims=1);
    %4 = add(%3, %eps);
    %5 = sqrt(%4);
    %6 = divide(%1, %5);
    %6
  })",
              R"(fn (%x: Tensor[(2, 8), float32]) {
    %two = const(Tensor[(), float32], [2]);
    %eps = const(Tensor[(), float32], [1e-05]);
    %f0 = fn [Primitive=1] (%p0: Tensor[(2, 8), float32]) {
      %0 = mean(%p0, axis=[-1], keepdims=1); %1 = subtract(%p0, %0); %1
    };
    %d = %f0(%x);
    %f1 = fn [Primitive=1] (%p0: Tensor[(2, 8), float32], %p1: Tensor[(), float32], %p2: Tensor[(), float32]) {
      %0 = power(%p0, %p1); %1 = mean(%0, axis=[-1], keepdims=1); %2 = add(%1, %p2); %3 = sqrt(%2); %4 = divide(%p0, %3); %4
    };
    %r = %f1(%d, %two, %eps);
    %r
  })");
}

TEST(FuseOps, OpaqueOpsStandAloneAndHeavyOpsDoNotTakeInjectiveOps) {
  ExpectFused(R"(fn (%x: Tensor[(2, 8), float32], %w: Tensor[(4, 8), float32]) {
    %0 = nn.dense(%x, %w);
    %1 = reshape(%0, newshape=[8]);
    %2 = nn.softmax(%1);
    %3 = multiply(%2, %2);
    %3
  })",
              R"(fn (%x: Tensor[(2, 8), float32], %w: Tensor[(4, 8), float32]) {
    %f0 = fn [Primitive=1] (%p0: Tensor[(2, 8), float32], %p1: Tensor[(4, 8), float32]) { %0 = nn.dense(%p0, %p1); %0 };
    %d = %f0(%x, %w);
    %f1 = fn [Primitive=1] (%p0: Tensor[(2, 4), float32]) { %0 = reshape(%p0, newshape=[8]); %0 };
    %r = %f1(%d);
    %f2 = fn [Primitive=1] (%p0: Tensor[(8), float32]) { %0 = nn.softmax(%p0); %0 };
    %s = %f2(%r);
    %f3 = fn [Primitive=1] (%p0: Tensor[(8), float32]) { %0 = multiply(%p0, %p0); %0 };
    %m = %f3(%s);
    %m
  })");
}

TEST(FuseOps, InjectiveChainsFuseAndGraphOutputsStayVisible) {
  ExpectFused(R"(fn (%x: Tensor[(2, 3), float32]) {
    %0 = transpose(%x);
    %1 = reshape(%0, newshape=[6]);
    %2 = negative(%1);
    %3 = exp(%2);
    (%2, %3)
  })",
              R"(fn (%x: Tensor[(2, 3), float32]) {
    %f0 = fn [Primitive=1] (%p0: Tensor[(2, 3), float32]) {
      %0 = transpose(%p0);
      %1 = reshape(%0, newshape=[6]);
      %2 = negative(%1);
      %2
    };
    %n = %f0(%x);
    %f1 = fn [Primitive=1] (%p0: Tensor[(6), float32]) { %0 = exp(%p0); %0 };
    %e = %f1(%n);
    (%n, %e)
  })");
}

// A concatenation whose parts are each a heavy op's group, read only by it, takes them in (its
// parts are then computed in their places in its output): SqueezeNet's fire module. The
// squeezed input both read stays one parameter.
TEST(FuseOps, AConcatenationTakesInTheConvolutionsOfItsParts) {
  ExpectFused(R"(fn (%x: Tensor[(1, 2, 4, 4), float32], %a: Tensor[(3, 2, 1, 1), float32], %b: Tensor[(5, 2, 3, 3), float32]) {
    %0 = nn.conv2d(%x, %a);
    %1 = nn.relu(%0);
    %2 = nn.conv2d(%x, %b, padding=[1, 1, 1, 1]);
    %3 = nn.relu(%2);
    %4 = concatenate(%1, %3, axis=1);
    %4
  })",
              R"(fn (%x: Tensor[(1, 2, 4, 4), float32], %a: Tensor[(3, 2, 1, 1), float32], %b: Tensor[(5, 2, 3, 3), float32]) {
    %f = fn [Primitive=1] (%p0: Tensor[(1, 2, 4, 4), float32], %p1: Tensor[(3, 2, 1, 1), float32], %p2: Tensor[(5, 2, 3, 3), float32]) {
      %0 = nn.conv2d(%p0, %p1);
      %1 = nn.relu(%0);
      %2 = nn.conv2d(%p0, %p2, padding=[1, 1, 1, 1]);
      %3 = nn.relu(%2);
      %4 = concatenate(%1, %3, axis=1);
      %4
    };
    %r = %f(%x, %a, %b);
    %r
  })");
}

// Not where the parts do not follow one another in memory (a batch of 2 before the joined axis),
// nor where a part is read elsewhere too or is not a heavy op's group.
TEST(FuseOps, AConcatenationTakesInNoPartsThatCannotBeWrittenInPlace) {
  auto stays_apart = [](const std::string& concat_args, const std::string& shape, const std::string& outputs) {
    std::string text = "fn (%x: Tensor[(" + shape + ", 2, 4, 4), float32], %a: Tensor[(3, 2, 1, 1), float32]) {\n"
                       "  %0 = nn.conv2d(%x, %a);\n  %1 = nn.relu(%0);\n  %2 = exp(%x);\n  %4 = nn.conv2d(%x, %a);\n"
                       "  %3 = concatenate(" + concat_args + ", axis=1);\n  " + outputs + "\n}";
    std::string printed = ir::PrintFunction(FuseOps(ir::ParseFunction(text)));
    // No primitive function holds both the convolution and the concatenation.
    for (size_t at = printed.find("fn [Primitive=1]"); at != std::string::npos;) {
      size_t next = printed.find("fn [Primitive=1]", at + 1);
      std::string function = printed.substr(at, next == std::string::npos ? std::string::npos : next - at);
      EXPECT_FALSE(function.find("nn.conv2d(") != std::string::npos && function.find("concatenate(") != std::string::npos)
          << text << "\ngot:\n" << printed;
      at = next;
    }
  };
  stays_apart("%1, %1", "1", "%3");          // one part twice
  stays_apart("%1, %x", "1", "%3");          // a parameter as a part
  stays_apart("%1, %2", "1", "%3");          // an elementwise op's group as a part
  stays_apart("%1, %4", "2", "%3");          // a batch of 2 before the joined axis
  stays_apart("%1, %2", "1", "(%3, %1)");    // a part also a graph output
}

TEST(FuseOps, MaxDepthLimitsGroups) {
  const char* chain = R"(fn (%x: Tensor[(4), float32]) {
    %0 = exp(%x); %1 = negative(%0); %2 = abs(%1); %2
  })";
  FuseOptions one;
  one.max_depth = 1;
  ExpectFused(chain, R"(fn (%x: Tensor[(4), float32]) {
    %f0 = fn [Primitive=1] (%p0: Tensor[(4), float32]) { %0 = exp(%p0); %0 };
    %a = %f0(%x);
    %f1 = fn [Primitive=1] (%p0: Tensor[(4), float32]) { %0 = negative(%p0); %0 };
    %b = %f1(%a);
    %f2 = fn [Primitive=1] (%p0: Tensor[(4), float32]) { %0 = abs(%p0); %0 };
    %c = %f2(%b);
    %c
  })", one);
  FuseOptions two;
  two.max_depth = 2;
  ExpectFused(chain, R"(fn (%x: Tensor[(4), float32]) {
    %f0 = fn [Primitive=1] (%p0: Tensor[(4), float32]) { %0 = exp(%p0); %1 = negative(%0); %1 };
    %a = %f0(%x);
    %f1 = fn [Primitive=1] (%p0: Tensor[(4), float32]) { %0 = abs(%p0); %0 };
    %b = %f1(%a);
    %b
  })", two);
  EXPECT_THROW(FuseOps(ir::ParseFunction(chain), FuseOptions{0}), runtime::Error);
}

TEST(FuseOps, RefusesAlreadyFusedFunctions) {
  ir::Expr fused = FuseOps(ir::ParseFunction("fn (%x: Tensor[(4), float32]) { %0 = exp(%x); %0 }"));
  EXPECT_THROW(FuseOps(fused), runtime::Error);
}

// A call of an external function stays as it is: the ops around it fuse among themselves, never
// into or across it, and its body is not touched.
TEST(FuseOps, LeavesExternalFunctionsAlone) {
  const char* external = R"(fn [Compiler="dnnl", global_symbol="tvmgen_default_dnnl_main_0", Primitive=1] (%a: Tensor[(4), float32]) {
      %0 = nn.relu(%a);
      %1 = exp(%0);
      %1
    })";
  ExpectFused(std::string(R"(fn (%x: Tensor[(4), float32]) {
    %0 = exp(%x);
    %1 = negative(%0);
    %e = )") + external + R"(;
    %2 = %e(%1);
    %3 = abs(%2);
    %4 = sqrt(%3);
    %4
  })",
              std::string(R"(fn (%x: Tensor[(4), float32]) {
    %f0 = fn [Primitive=1] (%p0: Tensor[(4), float32]) { %0 = exp(%p0); %1 = negative(%0); %1 };
    %0 = %f0(%x);
    %e = )") + external + R"(;
    %1 = %e(%0);
    %f1 = fn [Primitive=1] (%p0: Tensor[(4), float32]) { %0 = abs(%p0); %1 = sqrt(%0); %1 };
    %2 = %f1(%1);
    %2
  })");
}

}  // namespace
}  // namespace kiln::transform
