// Dataflow patterns (after TVM's DFPattern): a pattern describes a value and, through its
// arguments, the values it reads; matching binds each part of the pattern to the expression it
// matched. The passes that rewrite subgraphs (SimplifyExpr, FoldScaleAxis) and the host code
// generator's epilogue fusion write their shapes as patterns and rewrite through
// RewritePatterns.
//
//   Pattern x = Wildcard();
//   Pattern swish = IsOp(kMultiply, {x, IsOp(kSigmoid, {x})}).Commutative();
//
// A pattern used twice in one pattern (x above) must match the same expression both times.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/expr.h"
#include "ir/op.h"

namespace kiln::transform {

struct PatternNode;

class Pattern {
 public:
  // Matches what this or else `other` matches.
  Pattern operator|(const Pattern& other) const;
  // Matches what this matches when `predicate` holds for the expression.
  Pattern Where(std::function<bool(const ir::Expr&)> predicate) const;
  // For a pattern of a two-argument op: its arguments may match in either order.
  Pattern Commutative() const;

  const PatternNode* get() const { return node_.get(); }

 private:
  friend Pattern MakePattern(std::shared_ptr<PatternNode> node);
  std::shared_ptr<const PatternNode> node_;
};

// Any expression.
Pattern Wildcard();
// A constant.
Pattern IsConstant();
// A float32 or int64 constant all of whose elements equal `value`.
Pattern ConstantOf(double value);
// A call of `op` with as many arguments as `args`, each matching its pattern in order.
Pattern IsOp(const ir::OpRef& op, std::vector<Pattern> args);

class Match {
 public:
  const ir::Expr& root() const { return root_; }
  // What `part` matched; null when it took no part (the other side of an alternative).
  ir::Expr operator[](const Pattern& part) const;
  // The calls the match covers below its root (matched by IsOp patterns).
  const std::vector<ir::Expr>& interior() const { return interior_; }
  // What the leaves of `pattern` (the pattern matched: Wildcard, IsConstant) bound, in the
  // pattern's order (depth first, arguments as the pattern lists them, whichever order a
  // commutative op matched in): one per leaf, a leaf the pattern uses twice once, two leaves
  // that bound one expression both.
  std::vector<ir::Expr> Leaves(const Pattern& pattern) const;

 private:
  friend class Matcher;
  ir::Expr root_;
  std::unordered_map<const PatternNode*, ir::Expr> bound_;
  std::vector<ir::Expr> interior_;
};

// The first match of `pattern` at `expr` that `accept` takes (any, without it): alternatives and
// argument orders are tried until one is accepted.
std::optional<Match> MatchPattern(const Pattern& pattern, const ir::Expr& expr,
                                  const std::function<bool(const Match&)>& accept = nullptr);

// How many times each value is read: as an argument (once per argument position), and once more
// for the root.
using ReaderCounts = std::unordered_map<const ir::ExprNode*, int>;
ReaderCounts CountReaders(const ir::Expr& root);
// Whether nothing but the match itself reads its interior: the interior can then be replaced
// together with the root.
bool InteriorIsPrivate(const Match& match, const ReaderCounts& readers);

// A rewrite: where `pattern` matches and (when `private_interior`) InteriorIsPrivate holds,
// `rewrite` returns the replacement of the match's root, or null to leave it. The match binds
// expressions of the graph before this round; `rewritten` maps one to its form after it (use it
// for every expression the replacement reads).
using Rewritten = std::function<ir::Expr(const ir::Expr&)>;
struct PatternRewrite {
  Pattern pattern;
  std::function<ir::Expr(const Match& match, const Rewritten& rewritten)> rewrite;
  bool private_interior = true;
};

// Applies `rewrites` (the first that fires at a value wins) to every value of `root` in
// topological order, in rounds until a round changes nothing (at most 16 rounds).
ir::Expr RewritePatterns(const ir::Expr& root, const std::vector<PatternRewrite>& rewrites);

}  // namespace kiln::transform
