// MergeComposite: one round of pattern rewriting per pattern.
#include "transform/merge_composite.h"

#include <unordered_map>
#include <unordered_set>

#include "runtime/error.h"

namespace kiln::transform {

using namespace ir;

namespace {

constexpr char kComposite[] = "Composite";

// The function computing `match` over parameters for its leaves, in the pattern's order, called
// with the leaves.
Expr Composite(const std::string& name, const Pattern& pattern, const Match& match, const Rewritten& rewritten) {
  std::unordered_set<const ExprNode*> inside = {match.root().get()};
  for (const Expr& e : match.interior()) inside.insert(e.get());
  std::vector<Expr> leaves, params;
  std::unordered_map<const ExprNode*, Expr> copies;
  for (const Expr& leaf : match.Leaves(pattern)) {  // a value two leaves bound is passed twice
    if (inside.count(leaf.get()) != 0) continue;
    params.push_back(Var("p" + std::to_string(params.size()), leaf->type()));
    leaves.push_back(rewritten(leaf));
    copies.emplace(leaf.get(), params.back());  // the body reads the first
  }
  std::function<Expr(const Expr&)> copy = [&](const Expr& e) -> Expr {
    auto it = copies.find(e.get());
    if (it != copies.end()) return it->second;
    Expr result;
    if (inside.count(e.get()) != 0) {
      std::vector<Expr> inputs;
      for (const Expr& input : Inputs(e)) inputs.push_back(copy(input));
      result = WithInputs(e, inputs);
    } else {
      result = Var("p" + std::to_string(params.size()), e->type());
      leaves.push_back(rewritten(e));
      params.push_back(result);
    }
    copies.emplace(e.get(), result);
    return result;
  };
  Expr body = copy(match.root());
  Attrs attrs;
  attrs.Set(kComposite, name);
  return CallFunction(Function(params, body, attrs), leaves);
}

}  // namespace

std::string CompositeName(const Expr& function) {
  const auto* f = function == nullptr ? nullptr : function->As<FunctionNode>();
  return f != nullptr && f->attrs.Has(kComposite) ? f->attrs.GetString(kComposite) : "";
}

Expr MergeComposite(const Expr& main, const std::vector<CompositePattern>& patterns) {
  const auto* f = main->As<FunctionNode>();
  runtime::CheckInternal(f != nullptr, "MergeComposite: expected a function");
  Expr body = f->body;
  for (const CompositePattern& composite : patterns) {
    PatternRewrite rewrite;
    rewrite.pattern = composite.pattern;
    rewrite.rewrite = [&composite](const Match& match, const Rewritten& rewritten) -> Expr {
      if (composite.check && !composite.check(match)) return nullptr;
      return Composite(composite.name, composite.pattern, match, rewritten);
    };
    body = RewritePatterns(body, {rewrite});
  }
  return body == f->body ? main : Function(f->params, body, f->attrs);
}

}  // namespace kiln::transform
