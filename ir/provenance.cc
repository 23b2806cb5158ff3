// WorkingOn scopes: a thread-local stack, and the call the last exception left.
#include "ir/provenance.h"

#include <algorithm>
#include <exception>
#include <vector>

namespace kiln::ir {

namespace {

thread_local const WorkingOn* innermost = nullptr;
thread_local Expr failed_call;

const std::string& SourceOf(const Expr& call) {
  static const std::string none;
  const auto* node = call == nullptr ? nullptr : call->As<CallNode>();
  return node == nullptr ? none : node->source;
}

}  // namespace

WorkingOn::WorkingOn(const Expr& call)
    : outer_(innermost), call_(call), source_(SourceOf(call)), exceptions_at_entry_(std::uncaught_exceptions()) {
  innermost = this;
}

WorkingOn::WorkingOn(std::string source)
    : outer_(innermost), source_(std::move(source)), exceptions_at_entry_(std::uncaught_exceptions()) {
  innermost = this;
}

WorkingOn::~WorkingOn() {
  if (std::uncaught_exceptions() > exceptions_at_entry_ && failed_call == nullptr && call_ != nullptr) {
    failed_call = call_;
  }
  innermost = outer_;
}

const std::string& CurrentSource() {
  static const std::string none;
  return innermost == nullptr ? none : innermost->source_;
}

Expr FailedCall() { return failed_call; }

void ClearFailedCall() { failed_call = nullptr; }

std::string DescribeCall(const Expr& call) {
  const auto* node = call->As<CallNode>();
  if (node == nullptr) return "an expression of type " + call->type().ToString();
  std::string text = node->op != nullptr ? "call of " + node->op->name : std::string("call of a function");
  text += " -> " + call->type().ToString();
  if (!node->source.empty()) text += " (from ONNX " + node->source + ")";
  return text;
}

std::string DescribeSources(const Expr& function) {
  const auto* f = function->As<FunctionNode>();
  if (f == nullptr) return "";
  std::vector<std::string> sources;
  for (const Expr& e : PostOrder(f->body)) {
    const auto* call = e->As<CallNode>();
    if (call == nullptr || call->source.empty()) continue;
    if (std::find(sources.begin(), sources.end(), call->source) == sources.end()) sources.push_back(call->source);
  }
  std::string text;
  for (const std::string& s : sources) text += (text.empty() ? " (from ONNX " : ", ") + s;
  return text.empty() ? text : text + ")";
}

}  // namespace kiln::ir
