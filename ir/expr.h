// IR expressions: a typed dataflow graph of variables, constants, op calls, calls of functions,
// tuples and functions. Expressions are immutable and shared; every one is typed when it is made
// (making a call runs its op's type inference, so an ill-typed call is an Error at once).
// Identity is the node: two uses of one Expr are one value.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/op.h"
#include "ir/type.h"
#include "runtime/ndarray.h"

namespace kiln::ir {

enum class ExprKind { kVar, kConstant, kCall, kTuple, kTupleGetItem, kFunction };

class ExprNode {
 public:
  virtual ~ExprNode() = default;
  ExprKind kind() const { return kind_; }
  // For a function: the type of its result.
  const Type& type() const { return type_; }
  template <typename T>
  const T* As() const {
    return kind_ == T::kKind ? static_cast<const T*>(this) : nullptr;
  }

 protected:
  ExprNode(ExprKind kind, Type type) : kind_(kind), type_(std::move(type)) {}

 private:
  ExprKind kind_;
  Type type_;
};

using Expr = std::shared_ptr<const ExprNode>;

class VarNode final : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kVar;
  VarNode(std::string name, Type type) : ExprNode(kKind, std::move(type)), name(std::move(name)) {}
  std::string name;
};

class ConstantNode final : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kConstant;
  ConstantNode(runtime::NDArray value, Type type) : ExprNode(kKind, std::move(type)), value(std::move(value)) {}
  runtime::NDArray value;
};

class CallNode final : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kCall;
  CallNode(const OpDef* op, Expr function, std::vector<Expr> args, Attrs attrs, Type type)
      : ExprNode(kKind, std::move(type)), op(op), function(std::move(function)), args(std::move(args)), attrs(std::move(attrs)) {}
  const OpDef* op;  // the op called, or null when calling `function`
  Expr function;    // a FunctionNode, when op is null
  std::vector<Expr> args;
  Attrs attrs;      // normalized against the op's schema
  std::string source;  // the ONNX node it comes from ("node 'conv1' (Conv)"), or empty (provenance.h)
};

class TupleNode final : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kTuple;
  TupleNode(std::vector<Expr> fields, Type type) : ExprNode(kKind, std::move(type)), fields(std::move(fields)) {}
  std::vector<Expr> fields;
};

class TupleGetItemNode final : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kTupleGetItem;
  TupleGetItemNode(Expr tuple, int index, Type type) : ExprNode(kKind, std::move(type)), tuple(std::move(tuple)), index(index) {}
  Expr tuple;
  int index;
};

class FunctionNode final : public ExprNode {
 public:
  static constexpr ExprKind kKind = ExprKind::kFunction;
  FunctionNode(std::vector<Expr> params, Expr body, Attrs attrs)
      : ExprNode(kKind, body->type()), params(std::move(params)), body(std::move(body)), attrs(std::move(attrs)) {}
  std::vector<Expr> params;  // VarNodes
  Expr body;
  Attrs attrs;  // see namespace attr
};

// Function attributes the compile flow reads (TVM's names).
namespace attr {
inline constexpr char kPrimitive[] = "Primitive";         // 1: a fused primitive function (FuseOps)
inline constexpr char kCompiler[] = "Compiler";           // the external codegen that compiles it
inline constexpr char kGlobalSymbol[] = "global_symbol";  // its symbol in the built library
// On the main function: (output, count output, axis) triples, one per output whose extent along
// `axis` depends on the data (RaggedAxesFn): the count outputs come after the model's outputs.
inline constexpr char kOutputTrim[] = "output_trim";
// On the main function: (output, shape output) pairs, one per output whose every extent is
// decided at run time (ShapeGivenBy); the shape outputs come after the model's outputs too.
inline constexpr char kOutputShapes[] = "output_shapes";
// On the main function: a batch dimension decided at run time (its name, its [min, max] and the
// indices of the parameters whose axis 0 it is). The function is typed for one sample (the
// dimension is 1); the compiled library runs any number in range (docs/architecture.md, "Batch
// dimensions").
inline constexpr char kBatchDim[] = "batch_dim";
inline constexpr char kBatchRange[] = "batch_range";
inline constexpr char kBatchInputs[] = "batch_inputs";
// On a main function imported at one sample of shape dimensions (ir/dim_samples.h): their names,
// joined by ",". Passes decide nothing by the extents they see that the dimensions change.
inline constexpr char kShapeDims[] = "shape_dims";
}  // namespace attr

// Whether `function` is handed to an external codegen (it has a Compiler attribute). Passes leave
// external functions as they are; the build sends them to their codegen.
inline bool IsExternal(const Expr& function) {
  const auto* f = function->As<FunctionNode>();
  return f != nullptr && f->attrs.Has(attr::kCompiler);
}

// Constructors. Each throws Error when the pieces do not fit.
Expr Var(std::string name, Type type);
Expr Constant(runtime::NDArray value);
Expr Call(const std::string& op_name, std::vector<Expr> args, Attrs attrs = {});
Expr Call(const OpDef& op, std::vector<Expr> args, Attrs attrs = {});
inline Expr Call(const OpRef& op, std::vector<Expr> args, Attrs attrs = {}) {
  return Call(*op, std::move(args), std::move(attrs));
}
Expr CallFunction(Expr function, std::vector<Expr> args);
Expr Tuple(std::vector<Expr> fields);
Expr TupleGetItem(Expr tuple, int index);
Expr Function(std::vector<Expr> params, Expr body, Attrs attrs = {});

// Convenience for building constants: a float32 tensor of the given values.
Expr FloatConstant(const std::vector<int64_t>& shape, const std::vector<float>& values);

// For a value whose extent depends on the data (a ragged field of a RaggedAxesFn op's result,
// taken out of its call's tuple): the count and the axis it counts along; or, for a value whose
// every extent is decided at run time (`whole_shape`), its shape as an int64 [rank] tensor.
struct RaggedExtent {
  Expr count;
  int axis = 0;
  bool whole_shape = false;
  bool sized = false;  // its storage sized as the graph runs (OpDef::sized_by_input): no elementwise op reads it
};
std::optional<RaggedExtent> RaggedExtentOf(const Expr& value);

// The direct inputs of an expression (call arguments, tuple fields, ...); a function's body is
// not an input of the function.
std::vector<Expr> Inputs(const Expr& expr);

// Every expression reachable from `root` through Inputs, each once, inputs before users. Does
// not enter function bodies. Iterative, so deep graphs are fine.
std::vector<Expr> PostOrder(const Expr& root);

// Rebuilds `root` bottom-up: `rewrite` receives each expression with its inputs already
// rewritten (`inputs`) and returns its replacement. Shared subexpressions are rewritten once.
Expr Rewrite(const Expr& root, const std::function<Expr(const Expr& original, const std::vector<Expr>& inputs)>& rewrite);
// The same expression with new inputs (unchanged when they are the same nodes).
Expr WithInputs(const Expr& expr, const std::vector<Expr>& inputs);

}  // namespace kiln::ir
