// IR text: printing and parsing round-trip, and parse errors give line and column.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/text.h"
#include "runtime/error.h"

namespace kiln::ir {
namespace {

using ::testing::HasSubstr;

std::string ParseError(const std::string& text) {
  try {
    ParseFunction(text);
  } catch (const runtime::Error& e) {
    return e.what();
  }
  return "(no error)";
}

const char* kConvBlock = R"(fn (%data: Tensor[(1, 3, 8, 8), float32], %"weight.0": Tensor[(4, 3, 3, 3), float32]) -> (Tensor[(1, 4, 8, 8), float32], Tensor[(1, 4, 1, 1), float32]) {
  %0 = nn.conv2d(%data, %"weight.0", dilation=[1, 1], groups=1, padding=[1, 1, 1, 1], strides=[1, 1]);
  %1 = const(Tensor[(4, 1, 1), float32], [0.5, -1, 2.25, 3]);
  %2 = add(%0, %1);
  %3 = fn [Primitive=1] (%p0: Tensor[(1, 4, 8, 8), float32]) -> Tensor[(1, 4, 8, 8), float32] {
    %0 = nn.relu(%p0);
    %1 = clip(%0, a_max=6.0, a_min=0.0);
    %1
  };
  %4 = %3(%2);
  %5 = nn.global_avg_pool2d(%4);
  %6 = (%4, %5);
  %6
}
)";

TEST(IrText, RoundTripsExactly) {
  Expr f = ParseFunction(kConvBlock);
  std::string printed = PrintFunction(f);
  // Defaults are filled in when parsed, so printing adds them; a second round is then exact.
  Expr again = ParseFunction(printed);
  EXPECT_EQ(PrintFunction(again), printed);
  EXPECT_TRUE(StructurallyEqual(f, again));
  EXPECT_THAT(printed, HasSubstr("data_layout=\"NCHW\""));
  EXPECT_THAT(printed, HasSubstr("%\"weight.0\""));
}

TEST(IrText, TypesAreInferredWhileParsing) {
  Expr f = ParseFunction(kConvBlock);
  const auto* fn = f->As<FunctionNode>();
  ASSERT_TRUE(fn->body->type().is_tuple());
  EXPECT_EQ(fn->body->type().fields()[1].ToString(), "Tensor[(1, 4, 1, 1), float32]");
}

TEST(IrText, ConstantsKeepTheirValues) {
  Expr f = ParseFunction(R"(fn () -> Tensor[(3), int64] {
    %0 = const(Tensor[(3), int64], [-1, 0, 9007199254740993]);
    %0
  })");
  const auto* c = f->As<FunctionNode>()->body->As<ConstantNode>();
  ASSERT_NE(c, nullptr);
  const auto* v = static_cast<const int64_t*>(c->value.data());
  EXPECT_EQ(v[0], -1);
  EXPECT_EQ(v[2], 9007199254740993);  // beyond what a double holds exactly
  EXPECT_THAT(PrintFunction(f), HasSubstr("[-1, 0, 9007199254740993]"));
}

TEST(IrText, FloatConstantsRoundTripBitExactly) {
  Expr f = ParseFunction(R"(fn () -> Tensor[(4), float32] {
    %0 = const(Tensor[(4), float32], [0.1, 1e-30, -3.4028235e38, 7]);
    %0
  })");
  Expr again = ParseFunction(PrintFunction(f));
  EXPECT_TRUE(StructurallyEqual(f, again));
}

TEST(IrText, LargeConstantsAreElidedAndRefusedByTheParser) {
  std::vector<float> values(2000, 1.0f);
  Expr x = Var("x", Type::Tensor({2000}, runtime::kFloat32));
  Expr f = Function({x}, Call("add", {x, FloatConstant({2000}, values)}));
  std::string printed = PrintFunction(f);
  EXPECT_THAT(printed, HasSubstr("const(Tensor[(2000), float32], ...)"));
  EXPECT_THAT(ParseError(printed), HasSubstr("left out when it was printed"));
}

TEST(IrText, ParamNamedLikeAComputedValueDoesNotCollide) {
  Expr p = Var("0", Type::Tensor({2}, runtime::kFloat32));
  Expr f = Function({p}, Call("nn.relu", {p}));
  Expr again = ParseFunction(PrintFunction(f));
  EXPECT_TRUE(StructurallyEqual(f, again));
}

TEST(IrText, ErrorsSayWhereAndWhat) {
  EXPECT_THAT(ParseError("fn (%x: Tensor[(2), float32]) {\n  %0 = nn.relu(%y);\n  %0\n}"),
              HasSubstr("line 2, column 16: %y is not defined"));
  EXPECT_THAT(ParseError("fn (%x: Tensor[(2), float32]) {\n  %0 = nn.rlu(%x);\n  %0\n}"),
              HasSubstr("line 2, column 8: unknown op, got 'nn.rlu'"));
  EXPECT_THAT(ParseError("fn (%x: Tensor[(2), float32]) {\n  %0 = add(%x);\n  %0\n}"),
              HasSubstr("line 2, column 8: add: expected 2 arguments, got 1"));
  EXPECT_THAT(ParseError("fn (%x: Tensor[(2), float32], %y: Tensor[(3), float32]) {\n  %0 = add(%x, %y);\n  %0\n}"),
              HasSubstr("shapes (2) and (3) do not broadcast"));
  EXPECT_THAT(ParseError("fn (%x: Tensor[(2), float32]) {\n  %0 = clip(%x, a_min=0.0);\n  %0\n}"),
              HasSubstr("attribute 'a_max' is required"));
  EXPECT_THAT(ParseError("fn (%x: Tensor[(2), float32]) {\n  %0 = nn.relu(%x, alpha=1);\n  %0\n}"),
              HasSubstr("unknown attribute 'alpha' (known: none)"));
  EXPECT_THAT(ParseError("fn (%x: Tensor[(2), float32]) -> Tensor[(3), float32] {\n  %x\n}"),
              HasSubstr("declared to return Tensor[(3), float32] but returns Tensor[(2), float32]"));
  EXPECT_THAT(ParseError("fn (%x: Tensor[(2), float32]) {\n  %0 = const(Tensor[(2), float32], [1]);\n  %0\n}"),
              HasSubstr("needs 2 values, got 1"));
  EXPECT_THAT(ParseError("fn (%x: Tensor[(2), float32], %x: Tensor[(2), float32]) { %x }"),
              HasSubstr("%x is defined twice"));
  EXPECT_THAT(ParseError("fn (%x: Tensor[(2), flot32]) { %x }"), HasSubstr("is not a dtype"));
  EXPECT_THAT(ParseError("fn (%x: Tensor[(2), float32]) { %x } extra"), HasSubstr("expected the end of the text"));
  EXPECT_THAT(ParseError("fn (%x: Tensor[(2), float32]) { %0 = \"oops ; }"), HasSubstr("unterminated string"));
  EXPECT_THAT(ParseError("fn (%x: Tensor[(2), float32]) {\n  %0 = (%x, %x);\n  %1 = %0.2;\n  %1\n}"),
              HasSubstr("line 3, column 8: item 2 of a tuple of 2"));
}

TEST(IrText, NestedFunctionsSeeOnlyTheirParameters) {
  EXPECT_THAT(ParseError(R"(fn (%x: Tensor[(2), float32]) {
  %0 = fn (%p: Tensor[(2), float32]) { %1 = add(%p, %x); %1 };
  %0
})"),
              HasSubstr("%x is not defined"));
}

}  // namespace
}  // namespace kiln::ir
