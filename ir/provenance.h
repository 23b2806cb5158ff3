// Where calls come from, and which call the compiler is working on. A call keeps the ONNX node it
// was imported from (CallNode::source); a call made while a pass works on another takes that
// one's source, so rewritten calls keep it. When an exception leaves a WorkingOn scope, the call
// it names is remembered, so the pass runner can report an internal error at that call.
#pragma once

#include <string>

#include "ir/expr.h"

namespace kiln::ir {

// The source of the innermost WorkingOn scope on this thread; empty when none.
const std::string& CurrentSource();

// While alive, calls made on this thread take this scope's source, and an exception leaving it
// names its call (the innermost scope an exception leaves wins).
class WorkingOn {
 public:
  explicit WorkingOn(const Expr& call);     // a pass working on `call`
  explicit WorkingOn(std::string source);  // an importer converting the node `source` names
  ~WorkingOn();
  WorkingOn(const WorkingOn&) = delete;
  WorkingOn& operator=(const WorkingOn&) = delete;

 private:
  friend const std::string& CurrentSource();
  const WorkingOn* outer_;
  Expr call_;
  std::string source_;
  int exceptions_at_entry_;
};

// The call named by the first WorkingOn scope an exception left since the last ClearFailedCall.
Expr FailedCall();
void ClearFailedCall();

// "call of nn.conv2d -> Tensor[(1, 8, 4, 4), float32] (from ONNX node 'conv1' (Conv))".
std::string DescribeCall(const Expr& call);

// " (from ONNX node 'conv1' (Conv), node 'relu1' (Relu))": the sources of the calls in a
// function's body, each once, in order; empty when none is known.
std::string DescribeSources(const Expr& function);

}  // namespace kiln::ir
