// Matching by recursive descent with backtracking over alternatives and argument orders, until
// the caller accepts a match;
// rewriting in rounds over the graph.
#include "transform/pattern.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "runtime/error.h"

namespace kiln::transform {

using namespace ir;

struct PatternNode {
  enum class Kind { kWildcard, kConstant, kOp, kAlternative, kPredicate };
  Kind kind = Kind::kWildcard;
  const OpRef* op = nullptr;   // kOp
  std::vector<Pattern> parts;  // kOp: the arguments; kAlternative: both sides; kPredicate: the pattern
  bool commutative = false;    // kOp
  std::function<bool(const Expr&)> predicate;
};

Pattern MakePattern(std::shared_ptr<PatternNode> node) {
  Pattern p;
  p.node_ = std::move(node);
  return p;
}

Pattern Wildcard() { return MakePattern(std::make_shared<PatternNode>()); }

Pattern IsConstant() {
  auto node = std::make_shared<PatternNode>();
  node->kind = PatternNode::Kind::kConstant;
  return MakePattern(node);
}

// True when `e` is a float32 or int64 constant all of whose elements equal `value`.
static bool IsConstantOf(const Expr& e, double value) {
  const auto* c = e->As<ConstantNode>();
  if (c == nullptr) return false;
  const TensorType& t = e->type().tensor();
  int64_t n = t.NumElements();
  if (t.dtype == runtime::kFloat32) {
    const float* v = static_cast<const float*>(c->value.data());
    for (int64_t i = 0; i < n; ++i) {
      if (v[i] != static_cast<float>(value)) return false;
    }
    return true;
  }
  if (t.dtype == DLDataType{kDLInt, 64, 1}) {
    const int64_t* v = static_cast<const int64_t*>(c->value.data());
    for (int64_t i = 0; i < n; ++i) {
      if (v[i] != static_cast<int64_t>(value)) return false;
    }
    return true;
  }
  return false;
}

Pattern ConstantOf(double value) {
  return IsConstant().Where([value](const Expr& e) { return IsConstantOf(e, value); });
}

Pattern IsOp(const OpRef& op, std::vector<Pattern> args) {
  auto node = std::make_shared<PatternNode>();
  node->kind = PatternNode::Kind::kOp;
  node->op = &op;
  node->parts = std::move(args);
  return MakePattern(node);
}

Pattern Pattern::operator|(const Pattern& other) const {
  auto node = std::make_shared<PatternNode>();
  node->kind = PatternNode::Kind::kAlternative;
  node->parts = {*this, other};
  return MakePattern(node);
}

Pattern Pattern::Where(std::function<bool(const Expr&)> predicate) const {
  auto node = std::make_shared<PatternNode>();
  node->kind = PatternNode::Kind::kPredicate;
  node->parts = {*this};
  node->predicate = std::move(predicate);
  return MakePattern(node);
}

Pattern Pattern::Commutative() const {
  runtime::CheckInternal(node_->kind == PatternNode::Kind::kOp && node_->parts.size() == 2,
                         "Commutative() is for patterns of two-argument ops");
  auto node = std::make_shared<PatternNode>(*node_);
  node->commutative = true;
  return MakePattern(node);
}

Expr Match::operator[](const Pattern& part) const {
  auto it = bound_.find(part.get());
  return it == bound_.end() ? nullptr : it->second;
}

std::vector<Expr> Match::Leaves(const Pattern& pattern) const {
  std::vector<Expr> leaves;
  std::unordered_set<const PatternNode*> seen;
  std::function<void(const Pattern&)> visit = [&](const Pattern& p) {
    const PatternNode* node = p.get();
    if (node->kind == PatternNode::Kind::kWildcard || node->kind == PatternNode::Kind::kConstant) {
      Expr bound = (*this)[p];
      if (bound != nullptr && seen.insert(node).second) leaves.push_back(bound);
      return;
    }
    for (const Pattern& part : node->parts) visit(part);
  };
  visit(pattern);
  return leaves;
}

// Continuation passing: each part, once bound, calls `next` with the rest of the match to do,
// and undoes its binding when that fails, so that a match the caller rejects (its interior read
// outside it, a check) is retried with the other alternatives and argument orders.
class Matcher {
 public:
  using Next = std::function<bool(Match&)>;

  static std::optional<Match> Run(const Pattern& pattern, const Expr& expr, const std::function<bool(const Match&)>& accept) {
    Match match;
    match.root_ = expr;
    if (!Visit(pattern.get(), expr, match, [&](Match& m) { return accept(m); })) return std::nullopt;
    return match;
  }

 private:
  static bool Visit(const PatternNode* p, const Expr& e, Match& m, const Next& next) {
    auto bound = m.bound_.find(p);
    if (bound != m.bound_.end()) return bound->second == e && next(m);
    auto bind = [&](Match& mm) {
      mm.bound_[p] = e;
      if (next(mm)) return true;
      mm.bound_.erase(p);
      return false;
    };
    switch (p->kind) {
      case PatternNode::Kind::kWildcard: return bind(m);
      case PatternNode::Kind::kConstant: return e->kind() == ExprKind::kConstant && bind(m);
      case PatternNode::Kind::kOp: {
        const auto* call = e->As<CallNode>();
        if (call == nullptr || !p->op->Is(call->op) || call->args.size() != p->parts.size()) return false;
        auto with_interior = [&](Match& mm) {
          bool interior = e != mm.root_;
          if (interior) mm.interior_.push_back(e);
          if (bind(mm)) return true;
          if (interior) mm.interior_.pop_back();
          return false;
        };
        return Arguments(p, *call, 0, false, m, with_interior) ||
               (p->commutative && Arguments(p, *call, 0, true, m, with_interior));
      }
      case PatternNode::Kind::kAlternative:
        return Visit(p->parts[0].get(), e, m, bind) || Visit(p->parts[1].get(), e, m, bind);
      case PatternNode::Kind::kPredicate:  // asked once the pattern matched: it may rely on that
        return Visit(p->parts[0].get(), e, m, [&](Match& mm) { return p->predicate(e) && bind(mm); });
    }
    return false;
  }

  // Matches the arguments from `i` on, then continues with `next`.
  static bool Arguments(const PatternNode* p, const CallNode& call, size_t i, bool swapped, Match& m, const Next& next) {
    if (i == call.args.size()) return next(m);
    size_t part = swapped ? call.args.size() - 1 - i : i;
    return Visit(p->parts[part].get(), call.args[i], m,
                 [&](Match& mm) { return Arguments(p, call, i + 1, swapped, mm, next); });
  }
};

std::optional<Match> MatchPattern(const Pattern& pattern, const Expr& expr, const std::function<bool(const Match&)>& accept) {
  return Matcher::Run(pattern, expr, accept ? accept : [](const Match&) { return true; });
}

ReaderCounts CountReaders(const Expr& root) {
  ReaderCounts readers;
  for (const Expr& e : PostOrder(root)) {
    for (const Expr& input : Inputs(e)) ++readers[input.get()];
  }
  ++readers[root.get()];
  return readers;
}

bool InteriorIsPrivate(const Match& match, const ReaderCounts& readers) {
  std::unordered_set<const ExprNode*> inside;
  for (const Expr& e : match.interior()) inside.insert(e.get());
  std::unordered_map<const ExprNode*, int> reads_inside;
  auto count_reads = [&](const Expr& e) {
    for (const Expr& input : Inputs(e)) {
      if (inside.count(input.get()) != 0) ++reads_inside[input.get()];
    }
  };
  count_reads(match.root());
  std::unordered_set<const ExprNode*> counted;
  for (const Expr& e : match.interior()) {
    if (counted.insert(e.get()).second) count_reads(e);
  }
  for (const ExprNode* node : inside) {
    auto it = readers.find(node);
    if (it == readers.end() || it->second != reads_inside[node]) return false;
  }
  return true;
}

Expr RewritePatterns(const Expr& root, const std::vector<PatternRewrite>& rewrites) {
  constexpr int kMaxRounds = 16;
  Expr current = root;
  for (int round = 0; round < kMaxRounds; ++round) {
    ReaderCounts readers = CountReaders(current);
    std::unordered_map<const ExprNode*, Expr> done;
    auto rewritten = [&](const Expr& e) { return done.at(e.get()); };
    bool changed = false;
    for (const Expr& e : PostOrder(current)) {
      Expr replacement;
      for (const PatternRewrite& rewrite : rewrites) {
        // The first match whose interior is private (when that is asked) and that the rewrite takes.
        MatchPattern(rewrite.pattern, e, [&](const Match& match) {
          if (rewrite.private_interior && !InteriorIsPrivate(match, readers)) return false;
          replacement = rewrite.rewrite(match, rewritten);
          return replacement != nullptr;
        });
        if (replacement != nullptr) break;
      }
      if (replacement != nullptr && replacement != e) {
        changed = true;
      } else {
        std::vector<Expr> inputs = Inputs(e);
        for (Expr& input : inputs) input = rewritten(input);
        replacement = WithInputs(e, inputs);
      }
      done[e.get()] = replacement;
    }
    current = done.at(current.get());
    if (!changed) break;
  }
  return current;
}

}  // namespace kiln::transform
