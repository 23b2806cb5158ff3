// The op registry: every op's name, argument count, attribute schema, fusion pattern, type
// inference and reference semantics, listed in plain code (ir/ops/*.cc, gathered in op.cc).
#pragma once

#include <atomic>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/type.h"
#include "runtime/ndarray.h"

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

// Reference semantics, which constant folding runs: the op's value on constant arguments. Called by
// ir::EvaluateCall once it has checked the arguments and the result (evaluable dtypes, types
// inferred, size bounded); std::nullopt when these values leave the result undefined (an index out
// of range, an integer division by zero) or the evaluator does not take this dtype.
using EvaluateFn = std::optional<runtime::NDArray> (*)(const std::vector<runtime::NDArray>& args,
                                                       const Attrs& attrs, const TensorType& result);

// Ops whose result extents depend on the data (NonZero, Unique, Compress, NonMaxSuppression) compute
// into their static maximum. Their result is a tuple whose last field, an int64 scalar, is the
// count: each ragged field holds its data compactly, as a tensor whose ragged axis has `count`
// elements, and zeros after it. Per field of the result: its ragged axis, or -1 when its shape is
// what it holds (the count itself, Unique's inverse indices).
// Ops whose shape-deciding input is given at run time (dyn.reshape, dyn.reduce, ...) compute into
// the largest size their result can have: a field whose every extent is decided at run time holds
// its data compactly at that shape, flat, and ShapeGivenBy(k) says that field k, an int64 [rank]
// tensor, holds the shape.
using RaggedAxesFn = std::vector<int> (*)(const Attrs& attrs, const Type& result);
constexpr int ShapeGivenBy(int shape_field) { return -2 - shape_field; }

// How an op takes 4-D NCHW tensors that AlterOpLayout holds in the blocked NCHW[x]c layout.
enum class LayoutRule {
  kPlain,            // its inputs are transformed back to their plain layout (the default)
  kElementwise,      // one input, any layout: the result keeps the input's block
  kBroadcast,        // binary arithmetic: each operand blocked, or reshaped when it has no channels
  kChannelBias,      // a bias along axis 1 (nn.bias_add): an add of the blocked bias
  kPool,             // pooling, told the blocked layout by its `layout` attribute
  kSpatialReduce,    // a reduction over H and W keeping dimensions: over the same axes, blocked
  kSpatialResize,    // a resize of H and W only: the same resize of the blocked tensor
  kConcatenate,      // joined on channels when every input's channels divide by the block
  kConvolution,      // rewritten to the blocked convolution kernels
  kDense,            // its constant weight packed for the packed matrix kernel
  kLayoutTransform,  // composed with the pass's own transforms
};

struct OpDef {
  std::string name;
  int min_args = 1;
  int max_args = 1;
  std::vector<AttrSchema> attrs;
  OpPattern pattern = OpPattern::kOpaque;
  TypeInferFn infer = nullptr;
  std::string doc;
  EvaluateFn evaluate = nullptr;  // null: calls of this op are not folded
  LayoutRule layout = LayoutRule::kPlain;
  RaggedAxesFn ragged_axes = nullptr;  // set for ops whose result extents depend on the data
  // >= 0 for an op whose result's field 0 has no size the compiler can bound (dyn.expand, ...):
  // it is typed as a flat tensor of no elements, and the executor gives it storage before each
  // call, as large as the shape in input `sized_by_input` (an int64 [rank] tensor) says.
  int sized_by_input = -1;
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

// Whether `op` is one of `ops` (null: a call of a function, none of them).
inline bool IsAnyOf(const OpDef* op, std::initializer_list<const OpRef*> ops) {
  for (const OpRef* candidate : ops) {
    if (candidate->Is(op)) return true;
  }
  return false;
}

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
void RegisterIndexingOps(OpTable& table);
void RegisterAlongAxisOps(OpTable& table);
void RegisterImageOps(OpTable& table);
void RegisterDataDependentOps(OpTable& table);
void RegisterRunTimeShapedOps(OpTable& table);
void RegisterRunTimeSizedOps(OpTable& table);
void RegisterTextOps(OpTable& table);
void RegisterAnnotationOps(OpTable& table);

}  // namespace kiln::ir
