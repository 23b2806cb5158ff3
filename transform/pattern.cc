// Matching by recursive descent with backtracking over alternatives and argument orders;
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

class Matcher {
 public:
  static std::optional<Match> Run(const Pattern& pattern, const Expr& expr) {
    Match match;
    match.root_ = expr;
    if (!Visit(pattern.get(), expr, match)) return std::nullopt;
    return match;
  }

 private:
  // Binds `p` to `e` in `m`, or returns false leaving `m` as it was.
  static bool Visit(const PatternNode* p, const Expr& e, Match& m) {
    auto bound = m.bound_.find(p);
    if (bound != m.bound_.end()) return bound->second == e;
    Match saved = m;
    bool matched = false;
    switch (p->kind) {
      case PatternNode::Kind::kWildcard: matched = true; break;
      case PatternNode::Kind::kConstant: matched = e->kind() == ExprKind::kConstant; break;
      case PatternNode::Kind::kOp: {
        const auto* call = e->As<CallNode>();
        if (call == nullptr || !p->op->Is(call->op) || call->args.size() != p->parts.size()) break;
        matched = Arguments(p, *call, m, false) || (p->commutative && Arguments(p, *call, m, true));
        if (matched && e != m.root_) m.interior_.push_back(e);
        break;
      }
      case PatternNode::Kind::kAlternative:
        matched = Visit(p->parts[0].get(), e, m) || Visit(p->parts[1].get(), e, m);
        break;
      case PatternNode::Kind::kPredicate: matched = Visit(p->parts[0].get(), e, m) && p->predicate(e); break;
    }
    if (!matched) {
      m = std::move(saved);
      return false;
    }
    m.bound_[p] = e;
    return true;
  }

  static bool Arguments(const PatternNode* p, const CallNode& call, Match& m, bool swapped) {
    Match saved = m;
    for (size_t i = 0; i < call.args.size(); ++i) {
      size_t part = swapped ? call.args.size() - 1 - i : i;
      if (!Visit(p->parts[part].get(), call.args[i], m)) {
        m = std::move(saved);
        return false;
      }
    }
    return true;
  }
};

std::optional<Match> MatchPattern(const Pattern& pattern, const Expr& expr) { return Matcher::Run(pattern, expr); }

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
        std::optional<Match> match = MatchPattern(rewrite.pattern, e);
        if (!match || (rewrite.private_interior && !InteriorIsPrivate(*match, readers))) continue;
        replacement = rewrite.rewrite(*match, rewritten);
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
