// The dataflow pattern matcher: what binds, repeated parts, argument orders, alternatives,
// predicates, private interiors, and rewriting in rounds, on functions written in IR text.
#include <gtest/gtest.h>

#include "ir/text.h"
#include "transform/pattern.h"

namespace kiln::transform {
namespace {

using ir::Expr;

const ir::OpRef kAdd("add");
const ir::OpRef kExp("exp");
const ir::OpRef kMultiply("multiply");
const ir::OpRef kNegative("negative");
const ir::OpRef kSigmoid("sigmoid");

Expr Body(const char* text) { return ir::ParseFunction(text)->As<ir::FunctionNode>()->body; }

const ir::CallNode& CallOf(const Expr& e) { return *e->As<ir::CallNode>(); }

TEST(Pattern, APartUsedTwiceMatchesOneExpressionInEitherOrder) {
  Pattern x = Wildcard(), sigmoid = IsOp(kSigmoid, {x});
  Pattern swish = IsOp(kMultiply, {x, sigmoid}).Commutative();
  Expr body = Body("fn (%x: Tensor[(4), float32]) { %0 = sigmoid(%x); %1 = multiply(%0, %x); %1 }");
  std::optional<Match> m = MatchPattern(swish, body);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->root(), body);
  EXPECT_EQ((*m)[x]->kind(), ir::ExprKind::kVar);
  EXPECT_EQ((*m)[sigmoid], CallOf(body).args[0]);
  ASSERT_EQ(m->interior().size(), 1u);
  EXPECT_EQ(m->interior()[0], (*m)[sigmoid]);
  // Without Commutative() only the written order matches; another value under the sigmoid never.
  EXPECT_FALSE(MatchPattern(IsOp(kMultiply, {x, sigmoid}), body).has_value());
  EXPECT_FALSE(MatchPattern(swish, Body(R"(fn (%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
    %0 = sigmoid(%y); %1 = multiply(%0, %x); %1 })")).has_value());
}

TEST(Pattern, AlternativesBindOnlyTheSideThatMatchedAndPredicatesFilter) {
  Pattern x = Wildcard(), e = IsOp(kExp, {x}), n = IsOp(kNegative, {x});
  Pattern either = e | n;
  std::optional<Match> m = MatchPattern(either, Body("fn (%x: Tensor[(4), float32]) { %0 = negative(%x); %0 }"));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ((*m)[e], nullptr);
  EXPECT_NE((*m)[n], nullptr);
  EXPECT_EQ((*m)[x]->kind(), ir::ExprKind::kVar);
  Pattern scalar = Wildcard().Where([](const Expr& v) { return v->type().tensor().ndim() == 0; });
  EXPECT_FALSE(MatchPattern(IsOp(kExp, {scalar}), Body("fn (%x: Tensor[(4), float32]) { %0 = exp(%x); %0 }")));
  EXPECT_TRUE(MatchPattern(IsOp(kExp, {scalar}), Body("fn (%x: Tensor[(), float32]) { %0 = exp(%x); %0 }")));
  EXPECT_TRUE(MatchPattern(IsOp(kAdd, {Wildcard(), IsConstant()}),
                           Body("fn (%x: Tensor[(2), float32]) { %c = const(Tensor[(2), float32], [1, 2]); "
                                "%0 = add(%x, %c); %0 }")));
  EXPECT_FALSE(MatchPattern(IsOp(kAdd, {Wildcard(), IsConstant()}),
                            Body("fn (%x: Tensor[(2), float32]) { %0 = add(%x, %x); %0 }")));
}

TEST(Pattern, InteriorIsPrivateOnlyWhenNothingElseReadsIt) {
  Pattern inner = IsOp(kExp, {Wildcard()});
  Pattern pattern = IsOp(kNegative, {inner});
  Expr private_body = Body("fn (%x: Tensor[(4), float32]) { %0 = exp(%x); %1 = negative(%0); %1 }");
  Expr shared_body = Body("fn (%x: Tensor[(4), float32]) { %0 = exp(%x); %1 = negative(%0); (%1, %0) }");
  std::optional<Match> m = MatchPattern(pattern, private_body);
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(InteriorIsPrivate(*m, CountReaders(private_body)));
  const Expr& shared_root = shared_body->As<ir::TupleNode>()->fields[0];
  m = MatchPattern(pattern, shared_root);
  ASSERT_TRUE(m.has_value());
  EXPECT_FALSE(InteriorIsPrivate(*m, CountReaders(shared_body)));
}

// add(exp(a), exp(b)) where exp(a) is also read elsewhere: the first order binds exp(a) inside
// (shared, rejected), so the matcher tries the other and takes exp(b), as a residual sum must
// when the block's input is itself a layer's output.
TEST(Pattern, AMatchTheCallerRejectsIsRetriedInTheOtherOrder) {
  Pattern inner = IsOp(kExp, {Wildcard()});
  Pattern sum = IsOp(kAdd, {inner, Wildcard()}).Commutative();
  Expr body = Body(R"(fn (%a: Tensor[(4), float32], %b: Tensor[(4), float32]) {
    %0 = exp(%a); %1 = exp(%b); %2 = add(%0, %1); (%2, %0) })");
  const Expr& root = body->As<ir::TupleNode>()->fields[0];
  ReaderCounts readers = CountReaders(body);
  std::optional<Match> first = MatchPattern(sum, root);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ((*first)[inner], CallOf(root).args[0]);
  std::optional<Match> m = MatchPattern(sum, root, [&](const Match& c) { return InteriorIsPrivate(c, readers); });
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ((*m)[inner], CallOf(root).args[1]);
  ASSERT_EQ(m->interior().size(), 1u);
  EXPECT_EQ(m->interior()[0], CallOf(root).args[1]);
  EXPECT_FALSE(MatchPattern(sum, root, [](const Match&) { return false; }).has_value());
}

// exp(exp(x)) -> x, written so that each rewrite removes one pair: a chain of four needs two
// rounds, and a pair whose inner exp is also returned is left alone (its interior is shared).
TEST(Pattern, RewritesRunInRoundsUntilNothingChanges) {
  Pattern x = Wildcard();
  PatternRewrite pair{IsOp(kExp, {IsOp(kExp, {x})}), [=](const Match& m, const Rewritten& rewritten) {
                        return rewritten(m[x]);
                      }};
  Expr chain = Body("fn (%x: Tensor[(4), float32]) { %0 = exp(%x); %1 = exp(%0); %2 = exp(%1); %3 = exp(%2); %3 }");
  EXPECT_EQ(RewritePatterns(chain, {pair})->kind(), ir::ExprKind::kVar);
  Expr shared = Body("fn (%x: Tensor[(4), float32]) { %0 = exp(%x); %1 = exp(%0); (%1, %0) }");
  EXPECT_EQ(RewritePatterns(shared, {pair}), shared);
}

}  // namespace
}  // namespace kiln::transform
