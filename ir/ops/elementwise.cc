// Elementwise and broadcasting ops: arithmetic, comparisons, activations, clip, cast, where.
#include "ir/op.h"
#include "ir/ops/infer_util.h"

namespace kiln::ir {
namespace {

constexpr DLDataType kBool{kDLUInt, 1, 1};

Type SameAsInput(const std::vector<Type>& args, const Attrs&) { return Type::Tensor(TensorArg(args, 0)); }

Type FloatUnary(const std::vector<Type>& args, const Attrs&) {
  runtime::Check(TensorArg(args, 0).dtype.code == kDLFloat, "expects a float tensor, got ",
                 DTypeToString(TensorArg(args, 0).dtype));
  return Type::Tensor(TensorArg(args, 0));
}

Type Broadcast(const std::vector<Type>& args, const Attrs&) {
  CheckSameDType(args);
  return Type::Tensor(BroadcastShapes(TensorArg(args, 0).shape, TensorArg(args, 1).shape), TensorArg(args, 0).dtype);
}

Type Compare(const std::vector<Type>& args, const Attrs&) {
  CheckSameDType(args);
  return Type::Tensor(BroadcastShapes(TensorArg(args, 0).shape, TensorArg(args, 1).shape), kBool);
}

Type Where(const std::vector<Type>& args, const Attrs&) {
  runtime::Check(TensorArg(args, 0).dtype == kBool, "the condition must be bool, got ",
                 DTypeToString(TensorArg(args, 0).dtype));
  runtime::Check(TensorArg(args, 1).dtype == TensorArg(args, 2).dtype, "the two branches have different dtypes");
  std::vector<int64_t> shape = BroadcastShapes(TensorArg(args, 0).shape, TensorArg(args, 1).shape);
  return Type::Tensor(BroadcastShapes(shape, TensorArg(args, 2).shape), TensorArg(args, 1).dtype);
}

Type Cast(const std::vector<Type>& args, const Attrs& attrs) {
  return Type::Tensor(TensorArg(args, 0).shape, ParseDType(attrs.GetString("dtype")));
}

void Add(OpTable& table, OpDef op) { table[op.name] = std::move(op); }

}  // namespace

void RegisterElementwiseOps(OpTable& table) {
  for (const char* name : {"add", "subtract", "multiply", "divide", "power", "maximum", "minimum"}) {
    Add(table, {name, 2, 2, {}, OpPattern::kBroadcast, Broadcast, "binary arithmetic with broadcasting"});
  }
  for (const char* name : {"equal", "less", "greater", "less_equal", "greater_equal"}) {
    Add(table, {name, 2, 2, {}, OpPattern::kBroadcast, Compare, "comparison with broadcasting; bool result"});
  }
  Add(table, {"where", 3, 3, {}, OpPattern::kBroadcast, Where, "where(cond, a, b) with broadcasting"});
  for (const char* name : {"nn.relu", "negative", "abs", "copy"}) {
    Add(table, {name, 1, 1, {}, OpPattern::kElemWise, SameAsInput, "unary elementwise"});
  }
  for (const char* name : {"sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "erf", "floor", "ceil", "round"}) {
    Add(table, {name, 1, 1, {}, OpPattern::kElemWise, FloatUnary, "unary elementwise on floats"});
  }
  Add(table, {"nn.leaky_relu", 1, 1, {{"alpha", AttrKind::kFloat, 0.01, "slope for x < 0"}},
              OpPattern::kElemWise, FloatUnary, "x if x > 0 else alpha * x"});
  Add(table, {"clip", 1, 1,
              {{"a_min", AttrKind::kFloat, {}, "lower bound"}, {"a_max", AttrKind::kFloat, {}, "upper bound"}},
              OpPattern::kElemWise, SameAsInput, "min(max(x, a_min), a_max)"});
  Add(table, {"cast", 1, 1, {{"dtype", AttrKind::kString, {}, "target dtype"}}, OpPattern::kElemWise, Cast,
              "converts to another dtype"});
  Add(table, {"nn.dropout", 1, 1, {{"rate", AttrKind::kFloat, 0.5, "drop rate (unused at inference)"}},
              OpPattern::kElemWise, SameAsInput, "identity at inference; removed by SimplifyInference"});
}

}  // namespace kiln::ir
