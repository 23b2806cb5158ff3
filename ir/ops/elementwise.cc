// Elementwise and broadcasting ops: arithmetic, comparisons, activations, clip, cast, where.
#include <algorithm>
#include <cmath>
#include <functional>
#include <tuple>

#include "ir/op.h"
#include "kernels/elementwise/scalar_ops.h"
#include "ir/ops/eval_util.h"
#include "ir/ops/infer_util.h"

namespace kiln::ir {
namespace {

using runtime::NDArray;
using Args = std::vector<NDArray>;

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

// left_shift, right_shift: unsigned integers (ONNX's BitShift), broadcast.
Type Shift(const std::vector<Type>& args, const Attrs& attrs) {
  DLDataType dtype = TensorArg(args, 0).dtype;
  runtime::Check(dtype.code == kDLUInt && dtype.bits >= 8, "shifts take unsigned integers, got ", DTypeToString(dtype));
  return Broadcast(args, attrs);
}

// bitwise_and, bitwise_or, bitwise_xor, bitwise_not: integers (ONNX's Bitwise*), broadcast.
Type Bitwise(const std::vector<Type>& args, const Attrs& attrs) {
  DLDataType dtype = TensorArg(args, 0).dtype;
  runtime::Check((dtype.code == kDLInt || dtype.code == kDLUInt) && dtype.bits >= 8, "bitwise ops take integers, got ",
                 DTypeToString(dtype));
  return args.size() == 1 ? Type::Tensor(TensorArg(args, 0)) : Broadcast(args, attrs);
}

Type Compare(const std::vector<Type>& args, const Attrs&) {
  CheckSameDType(args);
  return Type::Tensor(BroadcastShapes(TensorArg(args, 0).shape, TensorArg(args, 1).shape), kBool);
}

Type Logical(const std::vector<Type>& args, const Attrs&) {
  for (size_t i = 0; i < args.size(); ++i) {
    runtime::Check(TensorArg(args, i).dtype == kBool, "argument ", i, " must be bool, got ",
                   DTypeToString(TensorArg(args, i).dtype));
  }
  if (args.size() == 1) return Type::Tensor(TensorArg(args, 0));
  return Type::Tensor(BroadcastShapes(TensorArg(args, 0).shape, TensorArg(args, 1).shape), kBool);
}

Type Where(const std::vector<Type>& args, const Attrs&) {
  runtime::Check(TensorArg(args, 0).dtype == kBool, "the condition must be bool, got ",
                 DTypeToString(TensorArg(args, 0).dtype));
  runtime::Check(TensorArg(args, 1).dtype == TensorArg(args, 2).dtype, "the two branches have different dtypes");
  std::vector<int64_t> shape = BroadcastShapes(TensorArg(args, 0).shape, TensorArg(args, 1).shape);
  return Type::Tensor(BroadcastShapes(shape, TensorArg(args, 2).shape), TensorArg(args, 1).dtype);
}

// if_then_else(cond, a, b): a when the bool scalar cond holds, else b (ONNX If with a condition
// known only at run time, one call per output). Unlike where, it is opaque: never fused, so that
// each side stays its own nodes, which the graph executor runs only when their side is taken
// (graph codegen's run conditions).
Type IfThenElse(const std::vector<Type>& args, const Attrs&) {
  const TensorType& condition = TensorArg(args, 0);
  runtime::Check(condition.dtype == kBool && condition.ndim() == 0, "the condition must be a bool scalar, got ",
                 DTypeToString(condition.dtype), " of shape ", ShapeText(condition.shape));
  runtime::Check(args[1] == args[2], "the then side is ", args[1].ToString(), " and the else side ",
                 args[2].ToString(), "; they must have one type");
  return Type::Tensor(TensorArg(args, 1));
}

Type Cast(const std::vector<Type>& args, const Attrs& attrs) {
  return Type::Tensor(TensorArg(args, 0).shape, ParseDType(attrs.GetString("dtype")));
}

// Reference semantics: each op's one definition (kernels/elementwise/scalar_ops.h), which
// generated code calls too, on the C type of the dtype; here the cases it leaves undefined
// (integer division by zero, ...) do not fold.

// out[i] = f(a[i], ...) over the arguments broadcast to the result's shape, all of C type In;
// f returns std::optional<Out> (std::nullopt: the result is undefined).
template <typename In, typename Out, typename F, typename... Arrays>
std::optional<NDArray> Map(const TensorType& result, F f, const Arrays&... arrays) {
  NDArray out = NDArray::Empty(result.shape, result.dtype);
  std::tuple<decltype((void)arrays, NDArray())...> inputs{BroadcastArray(arrays, result.shape)...};
  Out* o = DataOf<Out>(out);
  int64_t n = result.NumElements();
  bool defined = std::apply(
      [&](const auto&... in) {
        for (int64_t i = 0; i < n; ++i) {
          std::optional<Out> v = f(DataOf<In>(in)[i]...);
          if (!v) return false;
          o[i] = *v;
        }
        return true;
      },
      inputs);
  if (!defined) return std::nullopt;
  return out;
}

namespace scalar = kernels::scalar;

struct AddOp {
  template <typename T>
  static std::optional<T> Apply(T a, T b) { return scalar::Add(a, b); }
};
struct SubtractOp {
  template <typename T>
  static std::optional<T> Apply(T a, T b) { return scalar::Subtract(a, b); }
};
struct MultiplyOp {
  template <typename T>
  static std::optional<T> Apply(T a, T b) { return scalar::Multiply(a, b); }
};
// Integer division by zero, and the minimum of a signed type divided by -1, are undefined.
template <typename T>
bool DivisionDefined(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) return false;
    if constexpr (std::is_signed_v<T>) return !(a == std::numeric_limits<T>::min() && b == -1);
  }
  return true;
}
struct DivideOp {
  template <typename T>
  static std::optional<T> Apply(T a, T b) {
    if (!DivisionDefined(a, b)) return std::nullopt;
    return scalar::Divide(a, b);
  }
};
// The remainder of a / b with the sign of a, or floored with the sign of b.
template <bool kFloored>
struct ModOp {
  template <typename T>
  static std::optional<T> Apply(T a, T b) {
    if (std::is_integral_v<T> && b == 0) return std::nullopt;
    return kFloored ? scalar::FloorMod(a, b) : scalar::TruncMod(a, b);
  }
};
template <bool kLeft>
struct ShiftOp {
  template <typename T>
  static std::optional<T> Apply(T a, T b) {
    if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) {
      return kLeft ? scalar::LeftShift(a, b) : scalar::RightShift(a, b);
    } else {
      return std::nullopt;
    }
  }
};
struct PowerOp {
  template <typename T>
  static std::optional<T> Apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) return scalar::Power(a, b);
    return std::nullopt;  // an integer power out of range converts undefined: left to the compiled kernel
  }
};
struct MaximumOp {
  template <typename T>
  static std::optional<T> Apply(T a, T b) { return scalar::Maximum(a, b); }
};
struct MinimumOp {
  template <typename T>
  static std::optional<T> Apply(T a, T b) { return scalar::Minimum(a, b); }
};

template <typename Op>
std::optional<NDArray> EvaluateArithmetic(const Args& args, const Attrs&, const TensorType& result) {
  if (result.dtype == kBool) return std::nullopt;
  return WithCType(result.dtype, [&](auto tag) {
    using T = decltype(tag);
    return Map<T, T>(result, [](T a, T b) { return Op::template Apply<T>(a, b); }, args[0], args[1]);
  });
}

// A comparison of two tensors of one dtype, into bools: Compare::Apply(a, b).
template <typename Compare>
std::optional<NDArray> EvaluateCompare(const Args& args, const Attrs&, const TensorType& result) {
  return WithCType(args[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto compare = [](T a, T b) { return std::optional<uint8_t>(Compare::Apply(a, b) ? 1 : 0); };
    return Map<T, uint8_t>(result, compare, args[0], args[1]);
  });
}
#define KILN_SCALAR_PREDICATE(NAME, FUNCTION) \
  struct NAME {                               \
    template <typename A, typename B>         \
    static bool Apply(A a, B b) {             \
      return scalar::FUNCTION(a, b);          \
    }                                         \
  };
KILN_SCALAR_PREDICATE(EqualOp, Equal)
KILN_SCALAR_PREDICATE(LessOp, Less)
KILN_SCALAR_PREDICATE(GreaterOp, Greater)
KILN_SCALAR_PREDICATE(LessEqualOp, LessEqual)
KILN_SCALAR_PREDICATE(GreaterEqualOp, GreaterEqual)
KILN_SCALAR_PREDICATE(LogicalAndOp, LogicalAnd)
KILN_SCALAR_PREDICATE(LogicalOrOp, LogicalOr)
KILN_SCALAR_PREDICATE(LogicalXorOp, LogicalXor)
#undef KILN_SCALAR_PREDICATE
struct LogicalNotOp {
  template <typename A, typename B>
  static bool Apply(A a, B) { return scalar::LogicalNot(a); }
};

// Logical ops on bools (stored as bytes 0 and 1).
template <typename Op>
std::optional<NDArray> EvaluateLogical(const Args& args, const Attrs&, const TensorType& result) {
  if (args.size() == 1) {
    auto apply = [](uint8_t a) { return std::optional<uint8_t>(Op::Apply(a, 0) ? 1 : 0); };
    return Map<uint8_t, uint8_t>(result, apply, args[0]);
  }
  auto apply = [](uint8_t a, uint8_t b) { return std::optional<uint8_t>(Op::Apply(a, b) ? 1 : 0); };
  return Map<uint8_t, uint8_t>(result, apply, args[0], args[1]);
}
template <char kOp>
struct BitwiseOp {
  template <typename T>
  static std::optional<T> Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return kOp == '&' ? scalar::BitwiseAnd(a, b) : kOp == '|' ? scalar::BitwiseOr(a, b) : scalar::BitwiseXor(a, b);
    } else {
      return std::nullopt;
    }
  }
};

std::optional<NDArray> EvaluateWhere(const Args& args, const Attrs&, const TensorType& result) {
  NDArray condition = BroadcastArray(args[0], result.shape);
  const uint8_t* c = DataOf<uint8_t>(condition);
  return WithCType(result.dtype, [&](auto tag) -> std::optional<NDArray> {
    using T = decltype(tag);
    NDArray a = BroadcastArray(args[1], result.shape), b = BroadcastArray(args[2], result.shape);
    NDArray out = NDArray::Empty(result.shape, result.dtype);
    for (int64_t i = 0, n = result.NumElements(); i < n; ++i) {
      DataOf<T>(out)[i] = scalar::Select(c[i] != 0, DataOf<T>(a)[i], DataOf<T>(b)[i]);
    }
    return out;
  });
}

// A unary op on any evaluable dtype but bool: Op::Apply<T>(x, attrs) -> std::optional<T>.
template <typename Op>
std::optional<NDArray> EvaluateUnary(const Args& args, const Attrs& attrs, const TensorType& result) {
  if (result.dtype == kBool) return std::nullopt;
  return WithCType(result.dtype, [&](auto tag) {
    using T = decltype(tag);
    return Map<T, T>(result, [&](T x) { return Op::template Apply<T>(x, attrs); }, args[0]);
  });
}

struct NegativeOp {
  template <typename T>
  static std::optional<T> Apply(T x, const Attrs&) { return scalar::Negative(x); }
};
struct AbsOp {
  template <typename T>
  static std::optional<T> Apply(T x, const Attrs&) { return scalar::Abs(x); }
};
struct BitwiseNotOp {
  template <typename T>
  static std::optional<T> Apply(T x, const Attrs&) {
    if constexpr (std::is_integral_v<T>) return scalar::BitwiseNot(x);
    return std::nullopt;
  }
};
struct ReluOp {
  template <typename T>
  static std::optional<T> Apply(T x, const Attrs&) { return scalar::Relu(x); }
};
struct ClipOp {  // bounds convert to T as the kernel's T(a_min) does; out of T's range: undefined
  template <typename T>
  static std::optional<T> Apply(T x, const Attrs& attrs) {
    std::optional<T> lo = ConvertValue<T>(attrs.GetFloat("a_min"));
    std::optional<T> hi = ConvertValue<T>(attrs.GetFloat("a_max"));
    if (!lo || !hi) return std::nullopt;
    return scalar::Clip(x, *lo, *hi);
  }
};

// A function of one float, computed in the tensor's precision: Op::Apply(x, attrs).
template <typename Op>
std::optional<NDArray> EvaluateFloat(const Args& args, const Attrs& attrs, const TensorType& result) {
  if (result.dtype.code != kDLFloat) return std::nullopt;
  return WithCType(result.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      return Map<T, T>(result, [&](T x) { return std::optional<T>(Op::Apply(x, attrs)); }, args[0]);
    }
    return std::optional<NDArray>();
  });
}

#define KILN_FLOAT_OP(NAME, EXPRESSION)             \
  struct NAME {                                     \
    template <typename T>                           \
    static T Apply(T x, const Attrs& attrs) {       \
      (void)attrs;                                  \
      return EXPRESSION;                            \
    }                                               \
  };
// A float attribute as T.
#define KILN_ATTR(NAME) static_cast<T>(attrs.GetFloat(NAME))
KILN_FLOAT_OP(SigmoidOp, scalar::Sigmoid(x))
KILN_FLOAT_OP(TanhOp, scalar::Tanh(x))
KILN_FLOAT_OP(ExpOp, scalar::Exp(x))
KILN_FLOAT_OP(LogOp, scalar::Log(x))
KILN_FLOAT_OP(SqrtOp, scalar::Sqrt(x))
KILN_FLOAT_OP(RsqrtOp, scalar::Rsqrt(x))
KILN_FLOAT_OP(ErfOp, scalar::Erf(x))
KILN_FLOAT_OP(GeluOp, scalar::Gelu(x))
KILN_FLOAT_OP(FloorOp, scalar::Floor(x))
KILN_FLOAT_OP(CeilOp, scalar::Ceil(x))
KILN_FLOAT_OP(RoundOp, scalar::Round(x))
KILN_FLOAT_OP(LeakyReluOp, scalar::LeakyRelu(x, KILN_ATTR("alpha")))
KILN_FLOAT_OP(SinOp, scalar::Sin(x))
KILN_FLOAT_OP(CosOp, scalar::Cos(x))
KILN_FLOAT_OP(TanOp, scalar::Tan(x))
KILN_FLOAT_OP(AsinOp, scalar::Asin(x))
KILN_FLOAT_OP(AcosOp, scalar::Acos(x))
KILN_FLOAT_OP(AtanOp, scalar::Atan(x))
KILN_FLOAT_OP(SinhOp, scalar::Sinh(x))
KILN_FLOAT_OP(CoshOp, scalar::Cosh(x))
KILN_FLOAT_OP(AsinhOp, scalar::Asinh(x))
KILN_FLOAT_OP(AcoshOp, scalar::Acosh(x))
KILN_FLOAT_OP(AtanhOp, scalar::Atanh(x))
KILN_FLOAT_OP(SoftplusOp, scalar::Softplus(x))
KILN_FLOAT_OP(SoftsignOp, scalar::Softsign(x))
KILN_FLOAT_OP(HardSwishOp, scalar::HardSwish(x))
KILN_FLOAT_OP(EluOp, scalar::Elu(x, KILN_ATTR("alpha")))
KILN_FLOAT_OP(SeluOp, scalar::Selu(x, KILN_ATTR("alpha"), KILN_ATTR("gamma")))
KILN_FLOAT_OP(CeluOp, scalar::Celu(x, KILN_ATTR("alpha")))
KILN_FLOAT_OP(ThresholdedReluOp, scalar::ThresholdedRelu(x, KILN_ATTR("alpha")))
#undef KILN_ATTR
#undef KILN_FLOAT_OP

std::optional<NDArray> EvaluateCopy(const Args& args, const Attrs&, const TensorType&) { return args[0].Clone(); }

// Floats to integers truncate (NaN or out of range: undefined); integers wrap; to bool: x != 0.
std::optional<NDArray> EvaluateCast(const Args& args, const Attrs&, const TensorType& result) {
  return WithCType(args[0].dtype(), [&](auto from_tag) {
    using From = decltype(from_tag);
    return WithCType(result.dtype, [&](auto to_tag) {
      using To = decltype(to_tag);
      if (result.dtype == kBool) {
        return Map<From, uint8_t>(result, [](From x) { return std::optional<uint8_t>(x != 0 ? 1 : 0); }, args[0]);
      }
      return Map<From, To>(result, [](From x) { return ConvertValue<To>(x); }, args[0]);
    });
  });
}

void Add(OpTable& table, OpDef op) { table[op.name] = std::move(op); }

struct Evaluated {
  const char* name;
  EvaluateFn evaluate;
};

}  // namespace

void RegisterElementwiseOps(OpTable& table) {
  for (Evaluated op : {Evaluated{"add", EvaluateArithmetic<AddOp>}, {"subtract", EvaluateArithmetic<SubtractOp>},
                       {"multiply", EvaluateArithmetic<MultiplyOp>}, {"divide", EvaluateArithmetic<DivideOp>},
                       {"power", EvaluateArithmetic<PowerOp>}, {"maximum", EvaluateArithmetic<MaximumOp>},
                       {"minimum", EvaluateArithmetic<MinimumOp>}, {"trunc_mod", EvaluateArithmetic<ModOp<false>>},
                       {"floor_mod", EvaluateArithmetic<ModOp<true>>}}) {
    Add(table, {op.name, 2, 2, {}, OpPattern::kBroadcast, Broadcast, "binary arithmetic with broadcasting",
                op.evaluate, LayoutRule::kBroadcast});
  }
  for (Evaluated op : {Evaluated{"left_shift", EvaluateArithmetic<ShiftOp<true>>},
                       {"right_shift", EvaluateArithmetic<ShiftOp<false>>}}) {
    Add(table, {op.name, 2, 2, {}, OpPattern::kBroadcast, Shift, "bit shift of unsigned integers with broadcasting",
                op.evaluate});
  }
  for (Evaluated op : {Evaluated{"bitwise_and", EvaluateArithmetic<BitwiseOp<'&'>>},
                       {"bitwise_or", EvaluateArithmetic<BitwiseOp<'|'>>},
                       {"bitwise_xor", EvaluateArithmetic<BitwiseOp<'^'>>}}) {
    Add(table, {op.name, 2, 2, {}, OpPattern::kBroadcast, Bitwise, "bitwise op on integers with broadcasting",
                op.evaluate});
  }
  Add(table, {"bitwise_not", 1, 1, {}, OpPattern::kElemWise, Bitwise, "bitwise complement of integers",
              EvaluateUnary<BitwiseNotOp>, LayoutRule::kElementwise});
  for (Evaluated op : {Evaluated{"equal", EvaluateCompare<EqualOp>}, {"less", EvaluateCompare<LessOp>},
                       {"greater", EvaluateCompare<GreaterOp>}, {"less_equal", EvaluateCompare<LessEqualOp>},
                       {"greater_equal", EvaluateCompare<GreaterEqualOp>}}) {
    Add(table, {op.name, 2, 2, {}, OpPattern::kBroadcast, Compare, "comparison with broadcasting; bool result",
                op.evaluate});
  }
  Add(table, {"where", 3, 3, {}, OpPattern::kBroadcast, Where, "where(cond, a, b) with broadcasting", EvaluateWhere});
  Add(table, {"if_then_else", 3, 3, {}, OpPattern::kOpaque, IfThenElse,
              "a when the bool scalar cond holds, else b; only the taken side runs", EvaluateWhere});
  for (Evaluated op : {Evaluated{"logical_and", EvaluateLogical<LogicalAndOp>},
                       {"logical_or", EvaluateLogical<LogicalOrOp>}, {"logical_xor", EvaluateLogical<LogicalXorOp>}}) {
    Add(table, {op.name, 2, 2, {}, OpPattern::kBroadcast, Logical, "logical op on bools with broadcasting",
                op.evaluate});
  }
  Add(table, {"logical_not", 1, 1, {}, OpPattern::kElemWise, Logical, "logical not of bools",
              EvaluateLogical<LogicalNotOp>, LayoutRule::kElementwise});
  for (Evaluated op : {Evaluated{"nn.relu", EvaluateUnary<ReluOp>}, {"negative", EvaluateUnary<NegativeOp>},
                       {"abs", EvaluateUnary<AbsOp>}, {"copy", EvaluateCopy}}) {
    Add(table, {op.name, 1, 1, {}, OpPattern::kElemWise, SameAsInput, "unary elementwise", op.evaluate,
                LayoutRule::kElementwise});
  }
  for (Evaluated op : {Evaluated{"sigmoid", EvaluateFloat<SigmoidOp>}, {"tanh", EvaluateFloat<TanhOp>},
                       {"exp", EvaluateFloat<ExpOp>}, {"log", EvaluateFloat<LogOp>}, {"sqrt", EvaluateFloat<SqrtOp>},
                       {"rsqrt", EvaluateFloat<RsqrtOp>}, {"erf", EvaluateFloat<ErfOp>},
                       {"floor", EvaluateFloat<FloorOp>}, {"ceil", EvaluateFloat<CeilOp>},
                       {"round", EvaluateFloat<RoundOp>}, {"sin", EvaluateFloat<SinOp>}, {"cos", EvaluateFloat<CosOp>},
                       {"tan", EvaluateFloat<TanOp>}, {"asin", EvaluateFloat<AsinOp>}, {"acos", EvaluateFloat<AcosOp>},
                       {"atan", EvaluateFloat<AtanOp>}, {"sinh", EvaluateFloat<SinhOp>}, {"cosh", EvaluateFloat<CoshOp>},
                       {"asinh", EvaluateFloat<AsinhOp>}, {"acosh", EvaluateFloat<AcoshOp>},
                       {"atanh", EvaluateFloat<AtanhOp>}, {"nn.softplus", EvaluateFloat<SoftplusOp>},
                       {"nn.softsign", EvaluateFloat<SoftsignOp>}, {"nn.hard_swish", EvaluateFloat<HardSwishOp>},
                       {"nn.gelu", EvaluateFloat<GeluOp>}}) {
    Add(table, {op.name, 1, 1, {}, OpPattern::kElemWise, FloatUnary, "unary elementwise on floats",
                op.evaluate, LayoutRule::kElementwise});
  }
  Add(table, {"nn.leaky_relu", 1, 1, {{"alpha", AttrKind::kFloat, 0.01, "slope for x < 0"}},
              OpPattern::kElemWise, FloatUnary, "x if x > 0 else alpha * x", EvaluateFloat<LeakyReluOp>,
              LayoutRule::kElementwise});
  Add(table, {"nn.elu", 1, 1, {{"alpha", AttrKind::kFloat, 1.0, "scale of the negative part"}}, OpPattern::kElemWise,
              FloatUnary, "x if x > 0 else alpha * (e^x - 1)", EvaluateFloat<EluOp>, LayoutRule::kElementwise});
  Add(table, {"nn.selu", 1, 1,
              {{"alpha", AttrKind::kFloat, 1.6732632423543772, "scale of the negative part"},
               {"gamma", AttrKind::kFloat, 1.0507009873554805, "scale of the result"}},
              OpPattern::kElemWise, FloatUnary, "gamma * (x if x > 0 else alpha * (e^x - 1))", EvaluateFloat<SeluOp>,
              LayoutRule::kElementwise});
  Add(table, {"nn.celu", 1, 1, {{"alpha", AttrKind::kFloat, 1.0, "the curve's scale"}}, OpPattern::kElemWise,
              FloatUnary, "max(0, x) + min(0, alpha * (e^(x / alpha) - 1))", EvaluateFloat<CeluOp>,
              LayoutRule::kElementwise});
  Add(table, {"nn.thresholded_relu", 1, 1, {{"alpha", AttrKind::kFloat, 1.0, "the threshold"}}, OpPattern::kElemWise,
              FloatUnary, "x if x > alpha else 0", EvaluateFloat<ThresholdedReluOp>, LayoutRule::kElementwise});
  Add(table, {"clip", 1, 1,
              {{"a_min", AttrKind::kFloat, {}, "lower bound"}, {"a_max", AttrKind::kFloat, {}, "upper bound"}},
              OpPattern::kElemWise, SameAsInput, "min(max(x, a_min), a_max)", EvaluateUnary<ClipOp>,
              LayoutRule::kElementwise});
  Add(table, {"cast", 1, 1,
              {{"dtype", AttrKind::kString, {}, "target dtype"},
               {"saturate", AttrKind::kInt, int64_t{1}, "to float8: out-of-range values become the largest (else NaN or infinity)"}},
              OpPattern::kElemWise, Cast,
              "converts to another dtype", EvaluateCast, LayoutRule::kElementwise});
  Add(table, {"nn.dropout", 1, 1, {{"rate", AttrKind::kFloat, 0.5, "drop rate (unused at inference)"}},
              OpPattern::kElemWise, SameAsInput, "identity at inference; removed by SimplifyInference", EvaluateCopy,
              LayoutRule::kElementwise});
}

}  // namespace kiln::ir
