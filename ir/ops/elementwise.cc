// Elementwise and broadcasting ops: arithmetic, comparisons, activations, clip, cast, where.
#include <algorithm>
#include <cmath>
#include <functional>
#include <tuple>

#include "ir/op.h"
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

// Reference semantics. Each evaluator visits the C type of its dtype. Integer arithmetic wraps
// modulo 2^bits (computed unsigned, so never undefined), as the compiled kernels do on this
// target; floats compute in their own precision, as the kernels do.

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

// a op b on the bits of two integers, modulo 2^bits.
template <typename T, typename Op>
T Wrapping(T a, T b, Op op) {
  return static_cast<T>(op(static_cast<uint64_t>(a), static_cast<uint64_t>(b)));
}

struct AddOp {
  template <typename T>
  static std::optional<T> Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) return Wrapping(a, b, std::plus<uint64_t>());
    return a + b;
  }
};
struct SubtractOp {
  template <typename T>
  static std::optional<T> Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) return Wrapping(a, b, std::minus<uint64_t>());
    return a - b;
  }
};
struct MultiplyOp {
  template <typename T>
  static std::optional<T> Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) return Wrapping(a, b, std::multiplies<uint64_t>());
    return a * b;
  }
};
struct DivideOp {  // integers truncate toward zero
  template <typename T>
  static std::optional<T> Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return std::nullopt;
      if constexpr (std::is_signed_v<T>) {
        if (a == std::numeric_limits<T>::min() && b == -1) return std::nullopt;
      }
    }
    return static_cast<T>(a / b);
  }
};
// The remainder of a / b with the sign of a (C's % and std::fmod) or, floored, of b (Python's %).
template <bool kFloored>
struct ModOp {
  template <typename T>
  static std::optional<T> Apply(T a, T b) {
    T r;
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return std::nullopt;
      if constexpr (std::is_signed_v<T>) {
        if (a == std::numeric_limits<T>::min() && b == -1) return T(0);
      }
      r = static_cast<T>(a % b);
    } else {
      r = std::fmod(a, b);
    }
    if (kFloored && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    return r;
  }
};
// A shift by the type's width or more gives 0 (in C++ it is undefined).
template <bool kLeft>
struct ShiftOp {
  template <typename T>
  static std::optional<T> Apply(T a, T b) {
    if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) {
      if (b >= sizeof(T) * 8) return T(0);
      return static_cast<T>(kLeft ? a << b : a >> b);
    } else {
      return std::nullopt;
    }
  }
};
struct PowerOp {
  template <typename T>
  static std::optional<T> Apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) return std::pow(a, b);
    return std::nullopt;  // integer powers are left to the compiled kernel
  }
};
struct MaximumOp {
  template <typename T>
  static std::optional<T> Apply(T a, T b) { return std::max<T>(a, b); }
};
struct MinimumOp {
  template <typename T>
  static std::optional<T> Apply(T a, T b) { return std::min<T>(a, b); }
};

template <typename Op>
std::optional<NDArray> EvaluateArithmetic(const Args& args, const Attrs&, const TensorType& result) {
  if (result.dtype == kBool) return std::nullopt;
  return WithCType(result.dtype, [&](auto tag) {
    using T = decltype(tag);
    return Map<T, T>(result, [](T a, T b) { return Op::template Apply<T>(a, b); }, args[0], args[1]);
  });
}

// A comparison (std::equal_to, std::less, ...) of two tensors of one dtype, into bools.
template <template <typename> class Compare>
std::optional<NDArray> EvaluateCompare(const Args& args, const Attrs&, const TensorType& result) {
  return WithCType(args[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto compare = [](T a, T b) { return std::optional<uint8_t>(Compare<T>()(a, b) ? 1 : 0); };
    return Map<T, uint8_t>(result, compare, args[0], args[1]);
  });
}

// Logical ops on bools (stored as bytes 0 and 1).
template <typename Op>
std::optional<NDArray> EvaluateLogical(const Args& args, const Attrs&, const TensorType& result) {
  if (args.size() == 1) {
    return Map<uint8_t, uint8_t>(result, [](uint8_t a) { return std::optional<uint8_t>(Op()(a != 0, false)); }, args[0]);
  }
  auto apply = [](uint8_t a, uint8_t b) { return std::optional<uint8_t>(Op()(a != 0, b != 0) ? 1 : 0); };
  return Map<uint8_t, uint8_t>(result, apply, args[0], args[1]);
}
template <char kOp>
struct BitwiseOp {
  template <typename T>
  static std::optional<T> Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(kOp == '&' ? (a & b) : kOp == '|' ? (a | b) : (a ^ b));
    } else {
      return std::nullopt;
    }
  }
};

struct NotOp {
  bool operator()(bool a, bool) const { return !a; }
};

std::optional<NDArray> EvaluateWhere(const Args& args, const Attrs&, const TensorType& result) {
  NDArray condition = BroadcastArray(args[0], result.shape);
  const uint8_t* c = DataOf<uint8_t>(condition);
  return WithCType(result.dtype, [&](auto tag) -> std::optional<NDArray> {
    using T = decltype(tag);
    NDArray a = BroadcastArray(args[1], result.shape), b = BroadcastArray(args[2], result.shape);
    NDArray out = NDArray::Empty(result.shape, result.dtype);
    for (int64_t i = 0, n = result.NumElements(); i < n; ++i) {
      DataOf<T>(out)[i] = c[i] != 0 ? DataOf<T>(a)[i] : DataOf<T>(b)[i];
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
  static std::optional<T> Apply(T x, const Attrs&) {
    if constexpr (std::is_integral_v<T>) return Wrapping(T(0), x, std::minus<uint64_t>());
    return -x;
  }
};
struct AbsOp {
  template <typename T>
  static std::optional<T> Apply(T x, const Attrs&) {
    if constexpr (std::is_integral_v<T>) return x < 0 ? Wrapping(T(0), x, std::minus<uint64_t>()) : x;
    return std::fabs(x);
  }
};
struct BitwiseNotOp {
  template <typename T>
  static std::optional<T> Apply(T x, const Attrs&) {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(~x);
    return std::nullopt;
  }
};
struct ReluOp {
  template <typename T>
  static std::optional<T> Apply(T x, const Attrs&) { return x > 0 ? x : T(0); }
};
struct ClipOp {  // bounds convert to T as the kernel's T(a_min) does; out of T's range: undefined
  template <typename T>
  static std::optional<T> Apply(T x, const Attrs& attrs) {
    std::optional<T> lo = ConvertValue<T>(attrs.GetFloat("a_min"));
    std::optional<T> hi = ConvertValue<T>(attrs.GetFloat("a_max"));
    if (!lo || !hi) return std::nullopt;
    return std::min<T>(std::max<T>(x, *lo), *hi);
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
KILN_FLOAT_OP(SigmoidOp, T(1) / (T(1) + std::exp(-x)))
KILN_FLOAT_OP(TanhOp, std::tanh(x))
KILN_FLOAT_OP(ExpOp, std::exp(x))
KILN_FLOAT_OP(LogOp, std::log(x))
KILN_FLOAT_OP(SqrtOp, std::sqrt(x))
KILN_FLOAT_OP(RsqrtOp, T(1) / std::sqrt(x))
KILN_FLOAT_OP(ErfOp, std::erf(x))
KILN_FLOAT_OP(FloorOp, std::floor(x))
KILN_FLOAT_OP(CeilOp, std::ceil(x))
KILN_FLOAT_OP(RoundOp, std::nearbyint(x))  // halves to even
KILN_FLOAT_OP(LeakyReluOp, x > 0 ? x : x * static_cast<T>(attrs.GetFloat("alpha")))
KILN_FLOAT_OP(SinOp, std::sin(x))
KILN_FLOAT_OP(CosOp, std::cos(x))
KILN_FLOAT_OP(TanOp, std::tan(x))
KILN_FLOAT_OP(AsinOp, std::asin(x))
KILN_FLOAT_OP(AcosOp, std::acos(x))
KILN_FLOAT_OP(AtanOp, std::atan(x))
KILN_FLOAT_OP(SinhOp, std::sinh(x))
KILN_FLOAT_OP(CoshOp, std::cosh(x))
KILN_FLOAT_OP(AsinhOp, std::asinh(x))
KILN_FLOAT_OP(AcoshOp, std::acosh(x))
KILN_FLOAT_OP(AtanhOp, std::atanh(x))
// log(1 + e^x), without overflow for large x
KILN_FLOAT_OP(SoftplusOp, x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)))
KILN_FLOAT_OP(SoftsignOp, x / (T(1) + std::fabs(x)))
KILN_FLOAT_OP(HardSwishOp, x * std::min(T(1), std::max(T(0), x / T(6) + T(0.5))))
KILN_FLOAT_OP(EluOp, x > 0 ? x : static_cast<T>(attrs.GetFloat("alpha")) * std::expm1(x))
KILN_FLOAT_OP(SeluOp, static_cast<T>(attrs.GetFloat("gamma")) *
                          (x > 0 ? x : static_cast<T>(attrs.GetFloat("alpha")) * std::expm1(x)))
KILN_FLOAT_OP(CeluOp, std::max(T(0), x) + std::min(T(0), static_cast<T>(attrs.GetFloat("alpha")) *
                                                            std::expm1(x / static_cast<T>(attrs.GetFloat("alpha")))))
KILN_FLOAT_OP(ThresholdedReluOp, x > static_cast<T>(attrs.GetFloat("alpha")) ? x : T(0))
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
  for (Evaluated op : {Evaluated{"equal", EvaluateCompare<std::equal_to>}, {"less", EvaluateCompare<std::less>},
                       {"greater", EvaluateCompare<std::greater>}, {"less_equal", EvaluateCompare<std::less_equal>},
                       {"greater_equal", EvaluateCompare<std::greater_equal>}}) {
    Add(table, {op.name, 2, 2, {}, OpPattern::kBroadcast, Compare, "comparison with broadcasting; bool result",
                op.evaluate});
  }
  Add(table, {"where", 3, 3, {}, OpPattern::kBroadcast, Where, "where(cond, a, b) with broadcasting", EvaluateWhere});
  Add(table, {"if_then_else", 3, 3, {}, OpPattern::kOpaque, IfThenElse,
              "a when the bool scalar cond holds, else b; only the taken side runs", EvaluateWhere});
  for (Evaluated op : {Evaluated{"logical_and", EvaluateLogical<std::logical_and<bool>>},
                       {"logical_or", EvaluateLogical<std::logical_or<bool>>},
                       {"logical_xor", EvaluateLogical<std::not_equal_to<bool>>}}) {
    Add(table, {op.name, 2, 2, {}, OpPattern::kBroadcast, Logical, "logical op on bools with broadcasting",
                op.evaluate});
  }
  Add(table, {"logical_not", 1, 1, {}, OpPattern::kElemWise, Logical, "logical not of bools",
              EvaluateLogical<NotOp>, LayoutRule::kElementwise});
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
                       {"nn.softsign", EvaluateFloat<SoftsignOp>}, {"nn.hard_swish", EvaluateFloat<HardSwishOp>}}) {
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
