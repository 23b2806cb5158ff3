// EliminateCommonSubexpr: hash-consing in topological order.
#include "transform/eliminate_common_subexpr.h"

#include <cstring>
#include <map>

#include "ir/attrs.h"

namespace kiln::transform {

using namespace ir;

namespace {

// A key that identifies a value by what it computes from already-unique inputs.
std::string KeyOf(const Expr& e, const std::vector<Expr>& inputs) {
  std::string key = std::to_string(static_cast<int>(e->kind())) + "|";
  if (const auto* call = e->As<CallNode>()) {
    key += call->op != nullptr ? call->op->name : "fn";
    for (const auto& [name, value] : call->attrs.values()) key += "|" + name + "=" + AttrValueText(value);
  }
  if (const auto* item = e->As<TupleGetItemNode>()) key += std::to_string(item->index);
  if (const auto* constant = e->As<ConstantNode>()) {
    key += e->type().ToString() + "|";
    key.append(static_cast<const char*>(constant->value.data()), constant->value.NumBytes());
  }
  for (const Expr& input : inputs) {
    char pointer[32];
    std::snprintf(pointer, sizeof(pointer), "|%p", static_cast<const void*>(input.get()));
    key += pointer;
  }
  return key;
}

}  // namespace

Expr EliminateCommonSubexpr(const Expr& main, const PassEnvironment&) {
  const auto* f = main->As<FunctionNode>();
  std::map<std::string, Expr> seen;
  Expr body = Rewrite(f->body, [&](const Expr& original, const std::vector<Expr>& inputs) -> Expr {
    if (original->kind() == ExprKind::kVar || original->kind() == ExprKind::kFunction) return original;
    Expr rebuilt = WithInputs(original, inputs);
    auto [it, inserted] = seen.emplace(KeyOf(rebuilt, inputs), rebuilt);
    return it->second;
  });
  return Function(f->params, body, f->attrs);
}

}  // namespace kiln::transform
