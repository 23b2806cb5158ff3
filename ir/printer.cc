// Printing functions as IR text (see text.h).
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

#include "ir/text.h"
#include "runtime/error.h"

namespace kiln::ir {
namespace {

bool IsPlainName(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

std::string NameText(const std::string& name) {
  if (IsPlainName(name)) return "%" + name;
  std::string text = "%\"";
  for (char c : name) {
    if (c == '"' || c == '\\') text += '\\';
    text += c;
  }
  return text + "\"";
}

template <typename T>
void AppendValues(std::string& text, const void* data, int64_t count, const char* format) {
  const T* values = static_cast<const T*>(data);
  char buffer[48];
  for (int64_t i = 0; i < count; ++i) {
    std::snprintf(buffer, sizeof(buffer), format, values[i]);
    text += (i > 0 ? ", " : "") + std::string(buffer);
  }
}

std::string ConstantText(const ConstantNode& c, const PrintOptions& options) {
  const TensorType& t = c.type().tensor();
  std::string text = "const(" + c.type().ToString() + ", ";
  int64_t n = t.NumElements();
  const void* data = c.value.data();
  DLDataType d = t.dtype;
  if (n > options.max_constant_elements || d.lanes != 1) return text + "...)";
  text += "[";
  if (d.code == kDLFloat && d.bits == 32) {
    AppendValues<float>(text, data, n, "%.9g");
  } else if (d.code == kDLFloat && d.bits == 64) {
    AppendValues<double>(text, data, n, "%.17g");
  } else if (d.code == kDLInt && d.bits == 64) {
    AppendValues<int64_t>(text, data, n, "%lld");
  } else if (d.code == kDLInt && d.bits == 32) {
    AppendValues<int32_t>(text, data, n, "%d");
  } else if (d.code == kDLInt && d.bits == 16) {
    AppendValues<int16_t>(text, data, n, "%d");
  } else if (d.code == kDLInt && d.bits == 8) {
    AppendValues<int8_t>(text, data, n, "%d");
  } else if ((d.code == kDLUInt && d.bits == 8) || (d.code == kDLUInt && d.bits == 1)) {
    AppendValues<uint8_t>(text, data, n, "%u");
  } else {
    return "const(" + c.type().ToString() + ", ...)";
  }
  return text + "])";
}

std::string AttrsText(const Attrs& attrs) {
  std::string text;
  for (const auto& [name, value] : attrs.values()) {
    text += (text.empty() ? "" : ", ") + name + "=" + AttrValueText(value);
  }
  return text;
}

class FunctionPrinter {
 public:
  explicit FunctionPrinter(const PrintOptions& options) : options_(options) {}

  std::string Print(const FunctionNode& f, const std::string& indent) {
    std::unordered_map<const ExprNode*, std::string> names;
    std::string text = "fn ";
    if (!f.attrs.values().empty()) text += "[" + AttrsText(f.attrs) + "] ";
    text += "(";
    for (size_t i = 0; i < f.params.size(); ++i) {
      const auto* var = f.params[i]->As<VarNode>();
      names[var] = NameText(var->name);
      text += (i > 0 ? ", " : "") + names[var] + ": " + var->type().ToString();
    }
    text += ") -> " + f.type().ToString() + " {\n";
    std::string inner = indent + "  ";
    std::unordered_set<std::string> taken;
    for (const auto& [node, name] : names) taken.insert(name);
    int counter = 0;
    for (const Expr& e : PostOrder(f.body)) {
      if (const auto* var = e->As<VarNode>()) {
        if (names.count(var) == 0) names[var] = NameText(var->name);  // free variable
        continue;
      }
      std::string name = "%" + std::to_string(counter++);
      while (taken.count(name) != 0) name = "%" + std::to_string(counter++);
      text += inner + name + " = " + Value(e, names, inner) + ";\n";
      names[e.get()] = name;
    }
    return text + inner + names.at(f.body.get()) + "\n" + indent + "}";
  }

 private:
  std::string Value(const Expr& e, const std::unordered_map<const ExprNode*, std::string>& names,
                    const std::string& indent) {
    auto list = [&](const std::vector<Expr>& items) {
      std::string text;
      for (size_t i = 0; i < items.size(); ++i) text += (i > 0 ? ", " : "") + names.at(items[i].get());
      return text;
    };
    switch (e->kind()) {
      case ExprKind::kConstant: return ConstantText(*e->As<ConstantNode>(), options_);
      case ExprKind::kCall: {
        const auto* call = e->As<CallNode>();
        if (call->op == nullptr) return names.at(call->function.get()) + "(" + list(call->args) + ")";
        std::string attrs = AttrsText(call->attrs);
        return call->op->name + "(" + list(call->args) + (attrs.empty() || call->args.empty() ? "" : ", ") + attrs + ")";
      }
      case ExprKind::kTuple: {
        const auto* tuple = e->As<TupleNode>();
        return "(" + list(tuple->fields) + (tuple->fields.size() == 1 ? ",)" : ")");
      }
      case ExprKind::kTupleGetItem: {
        const auto* item = e->As<TupleGetItemNode>();
        return names.at(item->tuple.get()) + "." + std::to_string(item->index);
      }
      case ExprKind::kFunction: return Print(*e->As<FunctionNode>(), indent);
      case ExprKind::kVar: break;
    }
    throw runtime::InternalError("printer: unexpected expression kind");
  }

  const PrintOptions& options_;
};

}  // namespace

std::string PrintFunction(const Expr& function, const PrintOptions& options) {
  const auto* f = function->As<FunctionNode>();
  runtime::Check(f != nullptr, "PrintFunction: not a function");
  return FunctionPrinter(options).Print(*f, "") + "\n";
}

}  // namespace kiln::ir
