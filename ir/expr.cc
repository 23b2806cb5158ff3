// Making, walking and rebuilding expressions.
#include "ir/expr.h"

#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "ir/provenance.h"
#include "runtime/error.h"

namespace kiln::ir {

using runtime::Check;
using runtime::Fail;
using runtime::StrCat;

Expr Var(std::string name, Type type) {
  Check(type.defined(), "variable '%", name, "' has no type");
  return std::make_shared<VarNode>(std::move(name), std::move(type));
}

Expr Constant(runtime::NDArray value) {
  Check(value.defined(), "constant without a value");
  Type type = Type::Tensor(value.shape(), value.dtype());
  return std::make_shared<ConstantNode>(std::move(value), std::move(type));
}

Expr FloatConstant(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  runtime::NDArray array = runtime::NDArray::Empty(shape, runtime::kFloat32);
  array.CopyFromBytes(values.data(), values.size() * sizeof(float));
  return Constant(array);
}

Expr Call(const std::string& op_name, std::vector<Expr> args, Attrs attrs) {
  return Call(GetOp(op_name), std::move(args), std::move(attrs));
}

Expr Call(const OpDef& op, std::vector<Expr> args, Attrs attrs) {
  int n = static_cast<int>(args.size());
  if (n < op.min_args || n > op.max_args) {
    if (op.min_args == op.max_args) Fail(op.name, ": expected ", op.min_args, " arguments, got ", n);
    Fail(op.name, ": expected ", op.min_args, " to ", op.max_args, " arguments, got ", n);
  }
  Attrs normalized = attrs.Normalize(op.attrs, op.name);
  std::vector<Type> types;
  for (const Expr& arg : args) {
    Check(arg != nullptr, op.name, ": an argument is missing");
    Check(arg->kind() != ExprKind::kFunction, op.name, ": a function cannot be an argument");
    types.push_back(arg->type());
  }
  Type type;
  try {
    type = op.infer(types, normalized);
  } catch (const runtime::Error& e) {
    std::string args_text;
    for (const Type& t : types) args_text += (args_text.empty() ? "" : ", ") + t.ToString();
    Fail(op.name, "(", args_text, "): ", e.what());
  }
  auto call = std::make_shared<CallNode>(&op, nullptr, std::move(args), std::move(normalized), std::move(type));
  call->source = CurrentSource();
  return call;
}

Expr CallFunction(Expr function, std::vector<Expr> args) {
  const auto* f = function->As<FunctionNode>();
  Check(f != nullptr, "only functions and ops can be called");
  Check(f->params.size() == args.size(), "function of ", f->params.size(), " parameters called with ",
        args.size(), " arguments");
  for (size_t i = 0; i < args.size(); ++i) {
    Check(args[i]->type() == f->params[i]->type(), "argument ", i, " of a function call is ",
          args[i]->type().ToString(), " but the parameter is ", f->params[i]->type().ToString());
  }
  Type type = f->type();
  auto call = std::make_shared<CallNode>(nullptr, std::move(function), std::move(args), Attrs(), std::move(type));
  call->source = CurrentSource();
  return call;
}

Expr Tuple(std::vector<Expr> fields) {
  std::vector<Type> types;
  for (const Expr& field : fields) {
    Check(field->kind() != ExprKind::kFunction, "a function cannot be a tuple field");
    types.push_back(field->type());
  }
  return std::make_shared<TupleNode>(std::move(fields), Type::Tuple(std::move(types)));
}

Expr TupleGetItem(Expr tuple, int index) {
  const Type& type = tuple->type();
  Check(type.is_tuple(), "item ", index, " of a non-tuple ", type.ToString());
  Check(index >= 0 && index < static_cast<int>(type.fields().size()), "item ", index, " of a tuple of ",
        type.fields().size());
  Type item = type.fields()[index];
  return std::make_shared<TupleGetItemNode>(std::move(tuple), index, std::move(item));
}

Expr Function(std::vector<Expr> params, Expr body, Attrs attrs) {
  for (const Expr& p : params) Check(p->kind() == ExprKind::kVar, "function parameters must be variables");
  Check(body != nullptr, "function without a body");
  return std::make_shared<FunctionNode>(std::move(params), std::move(body), std::move(attrs));
}

std::optional<RaggedExtent> RaggedExtentOf(const Expr& value) {
  const auto* item = value->As<TupleGetItemNode>();
  const auto* call = item == nullptr ? nullptr : item->tuple->As<CallNode>();
  if (call == nullptr || call->op == nullptr || call->op->ragged_axes == nullptr) return std::nullopt;
  std::vector<int> axes = call->op->ragged_axes(call->attrs, call->type());
  if (axes[item->index] <= -2) {
    return RaggedExtent{TupleGetItem(item->tuple, -2 - axes[item->index]), 0, true, call->op->sized_by_input >= 0};
  }
  if (axes[item->index] < 0) return std::nullopt;
  return RaggedExtent{TupleGetItem(item->tuple, static_cast<int>(axes.size()) - 1), axes[item->index]};
}

std::vector<Expr> Inputs(const Expr& expr) {
  switch (expr->kind()) {
    case ExprKind::kCall: {
      const auto* call = expr->As<CallNode>();
      std::vector<Expr> inputs;
      if (call->function) inputs.push_back(call->function);
      inputs.insert(inputs.end(), call->args.begin(), call->args.end());
      return inputs;
    }
    case ExprKind::kTuple: return expr->As<TupleNode>()->fields;
    case ExprKind::kTupleGetItem: return {expr->As<TupleGetItemNode>()->tuple};
    default: return {};
  }
}

std::vector<Expr> PostOrder(const Expr& root) {
  std::vector<Expr> order;
  std::unordered_set<const ExprNode*> done;
  struct Frame { Expr expr; std::vector<Expr> inputs; size_t next = 0; };
  std::vector<Frame> stack;
  stack.push_back({root, Inputs(root)});
  while (!stack.empty()) {
    Frame& top = stack.back();
    if (top.next < top.inputs.size()) {
      Expr input = top.inputs[top.next++];
      if (done.count(input.get()) == 0) stack.push_back({input, Inputs(input)});
      continue;
    }
    if (done.insert(top.expr.get()).second) order.push_back(top.expr);
    stack.pop_back();
  }
  return order;
}

Expr WithInputs(const Expr& expr, const std::vector<Expr>& inputs) {
  std::vector<Expr> old = Inputs(expr);
  runtime::CheckInternal(old.size() == inputs.size(), "WithInputs: ", inputs.size(), " inputs for ", old.size());
  bool same = true;
  for (size_t i = 0; i < old.size(); ++i) same = same && old[i] == inputs[i];
  if (same) return expr;
  switch (expr->kind()) {
    case ExprKind::kCall: {
      const auto* call = expr->As<CallNode>();
      WorkingOn keep_source(expr);
      if (call->op != nullptr) return Call(*call->op, inputs, call->attrs);
      return CallFunction(inputs[0], std::vector<Expr>(inputs.begin() + 1, inputs.end()));
    }
    case ExprKind::kTuple: return Tuple(inputs);
    case ExprKind::kTupleGetItem: return TupleGetItem(inputs[0], expr->As<TupleGetItemNode>()->index);
    default: return expr;
  }
}

Expr Rewrite(const Expr& root,
             const std::function<Expr(const Expr& original, const std::vector<Expr>& inputs)>& rewrite) {
  std::unordered_map<const ExprNode*, Expr> rewritten;
  for (const Expr& e : PostOrder(root)) {
    std::vector<Expr> inputs = Inputs(e);
    for (Expr& input : inputs) input = rewritten.at(input.get());
    std::optional<WorkingOn> scope;
    if (e->kind() == ExprKind::kCall) scope.emplace(e);
    rewritten[e.get()] = rewrite(e, inputs);
  }
  return rewritten.at(root.get());
}

}  // namespace kiln::ir
