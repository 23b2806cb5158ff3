// The op registry: every op's name, argument count, attribute schema, fusion pattern and type
// inference, listed in plain code (ir/ops/*.cc, gathered in op.cc).
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/type.h"

namespace kiln::ir {

// How an op may fuse with its neighbours (the values are TVM's OpPatternKind).
enum class OpPattern {
  kElemWise = 0,         // out[i] = f(in[i]) with equal shapes
  kBroadcast = 1,        // elementwise with broadcasting
  kInjective = 2,        // each output element reads one input element (reshape, transpose)
  kCommReduce = 3,       // reductions
  kOutEWiseFusable = 4,  // heavy ops whose outputs can take an elementwise epilogue (conv, dense)
  kTuple = 7,
  kOpaque = 8,           // never fused
};
const char* OpPatternName(OpPattern pattern);

// Returns the output type for argument types and normalized attributes; throws Error explaining
// what does not fit (the caller adds the op name).
using TypeInferFn = Type (*)(const std::vector<Type>& args, const Attrs& attrs);

struct OpDef {
  std::string name;
  int min_args = 1;
  int max_args = 1;
  std::vector<AttrSchema> attrs;
  OpPattern pattern = OpPattern::kOpaque;
  TypeInferFn infer = nullptr;
  std::string doc;
};

using OpTable = std::map<std::string, OpDef>;

// How code outside ir/ops names the ops it makes (converters, passes, lowerings): an OpRef
// declared at namespace scope, resolved on first use. Every name an OpRef was made with is listed
// (OpRefNames), so a test checks that each names a registered op; using one that does not is
// kiln's bug (InternalError).
class OpRef {
 public:
  explicit OpRef(const char* name);
  OpRef(const OpRef&) = delete;
  OpRef& operator=(const OpRef&) = delete;
  const OpDef& get() const;
  const OpDef& operator*() const { return get(); }
  const OpDef* operator->() const { return &get(); }
  const char* name() const { return name_; }
  // Whether `op` is this op (a call's op may be null: a call of a function).
  bool Is(const OpDef* op) const { return op == &get(); }

 private:
  const char* name_;
  mutable std::atomic<const OpDef*> op_{nullptr};
};
const std::vector<std::string>& OpRefNames();

// Null when there is no op of that name.
const OpDef* FindOp(const std::string& name);
// Throws Error naming the op when there is none.
const OpDef& GetOp(const std::string& name);
const OpTable& AllOps();

// The registration functions of the op files (each adds its ops to the table).
void RegisterElementwiseOps(OpTable& table);
void RegisterNnOps(OpTable& table);
void RegisterTransformOps(OpTable& table);
void RegisterReduceOps(OpTable& table);

}  // namespace kiln::ir
