// Structural equality of functions (for IR-text tests of passes).
#include <cstring>
#include <unordered_map>

#include "ir/text.h"

namespace kiln::ir {
namespace {

class Matcher {
 public:
  bool Equal(const Expr& a, const Expr& b) {
    if (a == b) return true;
    auto it = matched_.find(a.get());
    if (it != matched_.end()) return it->second == b.get();
    if (a->kind() != b->kind() || a->type() != b->type()) return false;
    bool equal = EqualNodes(a, b);
    if (equal) matched_[a.get()] = b.get();
    return equal;
  }

 private:
  bool EqualLists(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!Equal(a[i], b[i])) return false;
    }
    return true;
  }

  bool EqualNodes(const Expr& a, const Expr& b) {
    switch (a->kind()) {
      case ExprKind::kVar: return true;  // unmatched variables are free: pair them on first use
      case ExprKind::kConstant: {
        const auto& x = a->As<ConstantNode>()->value;
        const auto& y = b->As<ConstantNode>()->value;
        return x.NumBytes() == y.NumBytes() && std::memcmp(x.data(), y.data(), x.NumBytes()) == 0;
      }
      case ExprKind::kCall: {
        const auto* x = a->As<CallNode>();
        const auto* y = b->As<CallNode>();
        if (x->op != y->op || x->attrs != y->attrs) return false;
        if ((x->function == nullptr) != (y->function == nullptr)) return false;
        if (x->function && !Equal(x->function, y->function)) return false;
        return EqualLists(x->args, y->args);
      }
      case ExprKind::kTuple: return EqualLists(a->As<TupleNode>()->fields, b->As<TupleNode>()->fields);
      case ExprKind::kTupleGetItem: {
        const auto* x = a->As<TupleGetItemNode>();
        const auto* y = b->As<TupleGetItemNode>();
        return x->index == y->index && Equal(x->tuple, y->tuple);
      }
      case ExprKind::kFunction: {
        const auto* x = a->As<FunctionNode>();
        const auto* y = b->As<FunctionNode>();
        if (x->attrs != y->attrs || x->params.size() != y->params.size()) return false;
        for (size_t i = 0; i < x->params.size(); ++i) {
          if (x->params[i]->type() != y->params[i]->type()) return false;
          matched_[x->params[i].get()] = y->params[i].get();
        }
        return Equal(x->body, y->body);
      }
    }
    return false;
  }

  std::unordered_map<const ExprNode*, const ExprNode*> matched_;
};

}  // namespace

bool StructurallyEqual(const Expr& a, const Expr& b) { return Matcher().Equal(a, b); }

}  // namespace kiln::ir
