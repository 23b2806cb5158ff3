// ONNX data-movement and shape ops: Reshape, Transpose, Concat, (Un)Squeeze, Slice, Gather,
// Shape, Size, Constant, ConstantOfShape, Range, Expand, Split, Pad, Trilu and the reductions (ReduceL1, L2,
// SumSquare, LogSum and LogSumExp composed of the others).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>

#include "frontend/onnx/converter.h"
#include "ir/ops/infer_util.h"
#include "runtime/error.h"

namespace kiln::frontend {

using namespace ir;
using runtime::StrCat;

namespace {

// The IR ops these converters make.
const OpRef kBroadcastTo("broadcast_to");
const OpRef kCast("cast");
const OpRef kConcatenate("concatenate");
const OpRef kMax("max");
const OpRef kMean("mean");
const OpRef kMin("min");
const OpRef kPad("nn.pad");
const OpRef kProd("prod");
const OpRef kReshape("reshape");
const OpRef kSplit("split");
const OpRef kSqueeze("squeeze");
const OpRef kStridedSlice("strided_slice");
const OpRef kSum("sum");
const OpRef kTake("take");
const OpRef kTranspose("transpose");
const OpRef kAbs("abs");
const OpRef kArgMax("argmax");
const OpRef kArgMin("argmin");
const OpRef kOneHot("one_hot");
const OpRef kGather("gather");
const OpRef kLess("less");
const OpRef kWhere("where");
const OpRef kTrilu("trilu");
const OpRef kGreaterEqual("greater_equal");
const OpRef kLessEqual("less_equal");
const OpRef kMaximum("maximum");
const OpRef kMinimum("minimum");
const OpRef kAdd("add");
const OpRef kExp("exp");
const OpRef kLog("log");
const OpRef kMultiply("multiply");
const OpRef kSqrt("sqrt");
const OpRef kSubtract("subtract");
const OpRef kDynReshape("dyn.reshape");
const OpRef kDynSqueeze("dyn.squeeze");
const OpRef kDynUnsqueeze("dyn.unsqueeze");
const OpRef kDynReduce("dyn.reduce");
const OpRef kDynStridedSlice("dyn.strided_slice");
const OpRef kDynSplit("dyn.split");
const OpRef kDynExpandShape("dyn.expand_shape");
const OpRef kDynExpand("dyn.expand");
const OpRef kDynPadShape("dyn.pad_shape");
const OpRef kDynPad("dyn.pad");
const OpRef kDynValuesShape("dyn.values_shape");
const OpRef kDynConstantOfShape("dyn.constant_of_shape");
const OpRef kDynRangeShape("dyn.range_shape");
const OpRef kDynRange("dyn.range");
const OpRef kDynCenterCropPadShape("dyn.center_crop_pad_shape");
const OpRef kDynCenterCropPad("dyn.center_crop_pad");

using Outputs = std::vector<Expr>;
using Ints = std::vector<int64_t>;

Expr IntConstant(const Ints& values, bool scalar = false) {
  runtime::NDArray a = runtime::NDArray::Empty(scalar ? Ints{} : Ints{static_cast<int64_t>(values.size())},
                                               DLDataType{kDLInt, 64, 1});
  if (!values.empty()) std::memcpy(a.data(), values.data(), values.size() * sizeof(int64_t));
  return Constant(a);
}

// An op whose shape-deciding input is given at run time (ir/ops/run_time_shaped.cc): its data,
// whose shape the importer carries beside it to the model's outputs.
Outputs AtRunTime(const NodeContext& c, const OpRef& op, std::vector<Expr> args, Attrs attrs = {}) {
  return {TupleGetItem(c.Op(op, std::move(args), std::move(attrs)), 0)};
}

Outputs Reshape(const NodeContext& c) {
  if (!c.IsConstant(1)) {
    return AtRunTime(c, kDynReshape, {c.input(0), c.input(1)}, MakeAttrs({{"allowzero", c.attr_int("allowzero", 0)}}));
  }
  const Ints& in = c.input_type(0).shape;
  Ints shape = c.ConstantInts(1);
  bool allow_zero = c.attr_int("allowzero", 0) != 0;
  int64_t known = 1, infer = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0 && !allow_zero) {
      if (d >= in.size()) c.Fail("a 0 in the shape refers to a dimension the input does not have");
      shape[d] = in[d];
    }
    if (shape[d] == -1) {
      if (infer >= 0) c.Fail("the shape has more than one -1");
      infer = static_cast<int64_t>(d);
    } else if (shape[d] < 0) {
      c.Fail(StrCat("the shape has a negative dimension ", shape[d]));
    } else if (__builtin_mul_overflow(known, shape[d], &known)) {
      c.Fail("the shape has more elements than a 64-bit count holds");
    }
  }
  if (infer >= 0) {
    int64_t total = c.input_type(0).NumElements();
    if (known == 0 || total % known != 0) c.Fail(StrCat("cannot infer the -1 in the shape for ", total, " elements"));
    shape[infer] = total / known;
  }
  return {c.Op(kReshape, {c.input(0)}, MakeAttrs({{"newshape", shape}}))};
}

Outputs Transpose(const NodeContext& c) {
  return {c.Op(kTranspose, {c.input(0)}, MakeAttrs({{"axes", c.attr_ints("perm", Ints{})}}))};
}

Outputs Concat(const NodeContext& c) {
  std::vector<Expr> args;
  for (size_t i = 0; i < c.num_inputs(); ++i) args.push_back(c.input(i));
  return {c.Op(kConcatenate, args, MakeAttrs({{"axis", c.attr_int("axis")}}))};
}

Ints AxesOf(const NodeContext& c, int64_t attr_until_opset) {
  if (c.opset() < attr_until_opset) return c.attr_ints("axes", Ints{});
  return c.has_input(1) ? c.ConstantInts(1) : Ints{};
}

// Axes from input 1 given at run time (opset 13 on).
bool AxesAtRunTime(const NodeContext& c, int64_t attr_until_opset) {
  return c.opset() >= attr_until_opset && c.has_input(1) && !c.IsConstant(1);
}

Outputs Unsqueeze(const NodeContext& c) {
  if (AxesAtRunTime(c, 13)) return AtRunTime(c, kDynUnsqueeze, {c.input(0), c.input(1)});
  Ints axes = AxesOf(c, 13);
  Ints in = c.input_type(0).shape;
  int64_t rank = static_cast<int64_t>(in.size() + axes.size());
  std::vector<bool> inserted(rank, false);
  for (int64_t a : axes) {
    int64_t axis = NormalizeAxis(a, rank, c);
    if (inserted[axis]) c.Fail(StrCat("axis ", a, " is given twice (axes of the output, rank ", rank, ")"));
    inserted[axis] = true;
  }
  Ints shape;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) shape.push_back(inserted[d] ? 1 : in.at(next++));
  return {c.Op(kReshape, {c.input(0)}, MakeAttrs({{"newshape", shape}}))};
}

Outputs Squeeze(const NodeContext& c) {
  // No axes squeeze every axis of extent 1, which the input's type tells.
  if (AxesAtRunTime(c, 13) && c.input_type(1).NumElements() > 0) {
    return AtRunTime(c, kDynSqueeze, {c.input(0), c.input(1)});
  }
  Ints axes = c.IsConstant(1) || c.opset() < 13 ? AxesOf(c, 13) : Ints{};
  for (int64_t& a : axes) a = NormalizeAxis(a, c.input_type(0).ndim(), c);
  return {c.Op(kSqueeze, {c.input(0)}, MakeAttrs({{"axis", axes}}))};
}

// Opset 10 on; without axes every axis from 0 in order, without steps steps of 1.
Outputs SliceAtRunTime(const NodeContext& c) {
  int64_t count = c.input_type(1).NumElements();
  Ints axes(count), steps(count, 1);
  std::iota(axes.begin(), axes.end(), 0);
  return AtRunTime(c, kDynStridedSlice,
                   {c.input(0), c.input(1), c.input(2), c.has_input(3) ? c.input(3) : IntConstant(axes),
                    c.has_input(4) ? c.input(4) : IntConstant(steps)});
}

Outputs Slice(const NodeContext& c) {
  for (size_t i = 1; i < 5 && c.opset() >= 10; ++i) {
    if (c.has_input(i) && !c.IsConstant(i)) return SliceAtRunTime(c);
  }
  Ints starts = c.ConstantInts(1), ends = c.ConstantInts(2);
  Ints axes = c.has_input(3) ? c.ConstantInts(3) : Ints{};
  Ints steps = c.has_input(4) ? c.ConstantInts(4) : Ints{};
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  for (int64_t& a : axes) a = NormalizeAxis(a, c.input_type(0).ndim(), c);
  return {c.Op(kStridedSlice, {c.input(0)},
               MakeAttrs({{"begin", starts}, {"end", ends}, {"strides", steps}, {"axes", axes}}))};
}

Outputs Gather(const NodeContext& c) {
  return {c.Op(kTake, {c.input(0), c.input(1)}, MakeAttrs({{"axis", c.attr_int("axis", 0)}}))};
}

Outputs Shape(const NodeContext& c) {
  Ints shape = c.input_type(0).shape;
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t start = c.attr_int("start", 0), end = c.attr_int("end", rank);
  auto clamp = [&](int64_t v) { return std::min(std::max<int64_t>(v < 0 ? v + rank : v, 0), rank); };
  start = clamp(start);
  end = clamp(end);
  return {IntConstant(Ints(shape.begin() + start, shape.begin() + std::max(start, end)))};
}

Outputs Size(const NodeContext& c) { return {IntConstant({c.input_type(0).NumElements()}, true)}; }

Outputs ConstantOp(const NodeContext& c) {
  if (c.has_attr("value")) return {Constant(TensorToNDArray(c.attr_tensor("value")))};
  if (c.has_attr("value_int")) return {IntConstant({c.attr_int("value_int")}, true)};
  if (c.has_attr("value_ints")) return {IntConstant(c.attr_ints("value_ints"))};
  if (c.has_attr("value_float")) {
    runtime::NDArray a = runtime::NDArray::Empty({}, runtime::kFloat32);
    *static_cast<float*>(a.data()) = c.attr_float("value_float");
    return {Constant(a)};
  }
  c.Fail("only value, value_int(s) and value_float constants are supported");
}

Outputs ConstantOfShape(const NodeContext& c) {
  runtime::NDArray value = runtime::NDArray::Empty({}, runtime::kFloat32);
  std::memset(value.data(), 0, value.NumBytes());
  if (c.has_attr("value")) value = TensorToNDArray(c.attr_tensor("value"));
  if (!c.IsConstant(0)) {
    return {SizedAtRunTime(c, kDynValuesShape, kDynConstantOfShape, {c.input(0)}, {Constant(value)})};
  }
  Ints shape = c.ConstantInts(0);
  runtime::NDArray out = runtime::NDArray::Empty(shape, value.dtype());
  size_t elem = runtime::DTypeBytes(value.dtype()), count = out.NumBytes() / elem;
  for (size_t i = 0; i < count; ++i) std::memcpy(static_cast<char*>(out.data()) + i * elem, value.data(), elem);
  return {Constant(out)};
}

// Range's start, limit and delta: one value each.
template <typename T>
T ScalarInput(const NodeContext& c, const std::vector<T>& values, size_t i) {
  if (values.size() != 1) c.FailAt(StrCat("input ", i), StrCat("must hold one value, it holds ", values.size()));
  return values[0];
}

// The element count of Range, checked against the tensor size limit before anything is made.
int64_t RangeCount(const NodeContext& c, double count) {
  if (!std::isfinite(count)) c.Fail("the number of elements is not finite");
  if (count <= 0) return 0;
  if (count > 9.0e15) c.Fail(StrCat("the output would have ", count, " elements"));
  auto n = static_cast<int64_t>(count);
  runtime::CheckedTensorBytes({n}, c.input_type(0).dtype, "the output");
  return n;
}

Outputs Range(const NodeContext& c) {
  DLDataType dtype = c.input_type(0).dtype;
  if (!c.IsConstant(0) || !c.IsConstant(1) || !c.IsConstant(2)) {
    std::vector<Expr> bounds = {c.input(0), c.input(1), c.input(2)};
    return {SizedAtRunTime(c, kDynRangeShape, kDynRange, bounds, bounds)};
  }
  if (dtype.code == kDLInt) {
    int64_t start = ScalarInput(c, c.ConstantInts(0), 0), limit = ScalarInput(c, c.ConstantInts(1), 1);
    int64_t delta = ScalarInput(c, c.ConstantInts(2), 2);
    if (delta == 0) c.Fail("delta is 0");
    __int128 span = static_cast<__int128>(limit) - start;
    __int128 count = (span + delta + (delta > 0 ? -1 : 1)) / delta;  // ceil(span / delta)
    int64_t n = RangeCount(c, static_cast<double>(count));
    Ints values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[i] = static_cast<int64_t>(start + static_cast<__int128>(i) * delta);
    Expr result = IntConstant(values);
    if (dtype.bits != 64) result = c.Op(kCast, {result}, MakeAttrs({{"dtype", runtime::DTypeToString(dtype)}}));
    return {result};
  }
  double start = ScalarInput(c, c.ConstantFloats(0), 0), limit = ScalarInput(c, c.ConstantFloats(1), 1);
  double delta = ScalarInput(c, c.ConstantFloats(2), 2);
  if (delta == 0) c.Fail("delta is 0");
  int64_t n = RangeCount(c, std::ceil((limit - start) / delta));
  runtime::NDArray out = runtime::NDArray::Empty({n}, runtime::kFloat32);
  for (int64_t i = 0; i < n; ++i) static_cast<float*>(out.data())[i] = static_cast<float>(start + i * delta);
  return {Constant(out)};
}

Outputs Expand(const NodeContext& c) {
  if (!c.IsConstant(1)) return {SizedAtRunTime(c, kDynExpandShape, kDynExpand, {c.input(0), c.input(1)}, {c.input(0)})};
  Ints shape = BroadcastShapes(c.input_type(0).shape, c.ConstantInts(1));
  if (shape == c.input_type(0).shape) return {c.input(0)};
  return {c.Op(kBroadcastTo, {c.input(0)}, MakeAttrs({{"shape", shape}}))};
}

Outputs Split(const NodeContext& c) {
  const Ints& in = c.input_type(0).shape;
  int64_t axis = NormalizeAxis(c.attr_int("axis", 0), static_cast<int64_t>(in.size()), c);
  Ints sizes;
  if (c.opset() < 13) {
    sizes = c.attr_ints("split", Ints{});
  } else if (c.has_input(1) && !c.IsConstant(1)) {  // sizes given at run time (ir/ops/run_time_shaped.cc)
    auto pieces = static_cast<int64_t>(c.num_outputs());
    Expr all = c.Op(kDynSplit, {c.input(0), c.input(1)}, MakeAttrs({{"axis", axis}, {"pieces", pieces}}));
    Outputs outputs;
    for (int64_t i = 0; i < pieces; ++i) outputs.push_back(TupleGetItem(all, static_cast<int>(i)));
    return outputs;
  } else if (c.has_input(1)) {
    sizes = c.ConstantInts(1);
  }
  if (sizes.empty()) {
    int64_t parts = static_cast<int64_t>(c.num_outputs());
    if (c.opset() >= 18 && c.attr_int("num_outputs", parts) != parts) {
      c.FailAt("attribute 'num_outputs'", StrCat(c.attr_int("num_outputs"), " differs from the node's ", parts, " outputs"));
    }
    if (parts < 1) c.Fail("Split needs at least one output");
    int64_t each = in[axis] / parts + (in[axis] % parts != 0);  // the last piece may be smaller (opset 18)
    for (int64_t p = 0, left = in[axis]; p < parts; ++p, left -= each) sizes.push_back(std::min(each, left));
  }
  Expr pieces = c.Op(kSplit, {c.input(0)}, MakeAttrs({{"sections", sizes}, {"axis", axis}}));
  Outputs outputs;
  for (size_t i = 0; i < sizes.size(); ++i) outputs.push_back(TupleGetItem(pieces, static_cast<int>(i)));
  return outputs;
}

// Pads (and from opset 18 axes) given at run time; without axes every axis, without a value 0.
Outputs PadAtRunTime(const NodeContext& c) {
  int64_t rank = c.input_type(0).ndim();
  Ints all(rank);
  std::iota(all.begin(), all.end(), 0);
  Expr axes = c.opset() >= 18 && c.has_input(3) ? c.input(3) : IntConstant(all);
  Expr value;
  if (c.has_input(2)) {
    value = c.input(2);
  } else {
    runtime::NDArray zero = runtime::NDArray::Empty({}, c.input_type(0).dtype);
    std::memset(zero.data(), 0, zero.NumBytes());
    value = Constant(zero);
  }
  Attrs mode = MakeAttrs({{"mode", c.attr_string("mode", "constant")}});
  return {SizedAtRunTime(c, kDynPadShape, kDynPad, {c.input(0), c.input(1), axes}, {c.input(0), c.input(1), axes, value},
                         mode)};
}

Outputs Pad(const NodeContext& c) {
  bool pads_at_run_time = c.opset() >= 11 && !c.IsConstant(1);
  if (pads_at_run_time || (c.opset() >= 18 && c.has_input(3) && !c.IsConstant(3))) return PadAtRunTime(c);
  Ints pads = c.opset() < 11 ? c.attr_ints("pads") : c.ConstantInts(1);
  int64_t rank = c.input_type(0).ndim();
  // From opset 18 pads may name only some axes: [begin of each, end of each].
  Ints axes(rank);
  std::iota(axes.begin(), axes.end(), 0);
  if (c.opset() >= 18 && c.has_input(3)) axes = c.ConstantInts(3);
  int64_t count = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(pads.size()) != 2 * count) {
    c.Fail(StrCat("pads has ", pads.size(), " values for ", count, " axes; it needs two per axis"));
  }
  Ints width(2 * rank, 0);
  std::vector<bool> seen(rank, false);
  for (int64_t k = 0; k < count; ++k) {
    int64_t axis = NormalizeAxis(axes[k], rank, c);
    if (seen[axis]) c.FailAt("input 3", StrCat("axis ", axes[k], " is given twice"));
    seen[axis] = true;
    width[2 * axis] = pads[k];
    width[2 * axis + 1] = pads[k + count];
  }
  std::string mode = c.attr_string("mode", "constant");
  for (int64_t w : width) {
    if (w < 0) c.Fail("negative pads (cropping) are not supported");
  }
  bool runtime_value = c.opset() >= 11 && c.has_input(2) && !c.IsConstant(2);
  double value = c.opset() < 11 ? c.attr_float("value", 0.0f) : (c.has_input(2) && !runtime_value ? c.ConstantScalar(2) : 0.0);
  Expr padded = c.Op(kPad, {c.input(0)}, MakeAttrs({{"pad_width", width}, {"pad_value", value}, {"pad_mode", mode}}));
  if (!runtime_value || mode != "constant") return {padded};
  // A value known only at run time: zeros padded, then the value where the input is not.
  if (c.input_type(2).NumElements() != 1) c.FailAt("input 2", "the constant value must hold one value");
  const Ints& shape = padded->type().tensor().shape;
  CheckConstantElements(c, padded->type().tensor().NumElements(), "the mask of padded elements");
  runtime::NDArray inside = runtime::NDArray::Empty(shape, DLDataType{kDLUInt, 1, 1});
  auto* flags = static_cast<uint8_t*>(inside.data());
  Ints at(rank, 0);
  for (int64_t e = 0, total = padded->type().tensor().NumElements(); e < total; ++e) {
    bool in = true;
    for (int64_t d = 0; d < rank; ++d) in = in && at[d] >= width[2 * d] && at[d] < shape[d] - width[2 * d + 1];
    flags[e] = in ? 1 : 0;
    for (int64_t d = rank - 1; d >= 0 && ++at[d] == shape[d]; --d) at[d] = 0;
  }
  Expr fill = c.Op(kReshape, {c.input(2)}, MakeAttrs({{"newshape", Ints{}}}));
  return {c.Op(kWhere, {Constant(inside), padded, fill})};
}

// The axes of a ReduceX node: from the attribute, or from input 1 from `axes_input_opset` on
// (empty: all); absent when the node reduces nothing (noop_with_empty_axes).
std::optional<Ints> ReduceAxes(const NodeContext& c, int64_t axes_input_opset) {
  Ints axes = c.opset() < axes_input_opset ? c.attr_ints("axes", Ints{}) : (c.has_input(1) ? c.ConstantInts(1) : Ints{});
  if (axes.empty() && c.attr_int("noop_with_empty_axes", 0) != 0) return std::nullopt;
  for (int64_t& a : axes) a = NormalizeAxis(a, c.input_type(0).ndim(), c);
  return axes;
}

// A reduction over axes given at run time: `reducer` as dyn.reduce names it.
Outputs ReduceAtRunTime(const NodeContext& c, const char* reducer) {
  return AtRunTime(c, kDynReduce, {c.input(0), c.input(1)},
                   MakeAttrs({{"reducer", std::string(reducer)},
                              {"keepdims", c.attr_int("keepdims", 1)},
                              {"noop_with_empty_axes", c.attr_int("noop_with_empty_axes", 0)}}));
}

template <const OpRef& kOp, int64_t kAxesInputOpset>
Outputs Reduce(const NodeContext& c) {
  if (AxesAtRunTime(c, kAxesInputOpset)) return ReduceAtRunTime(c, kOp.name());
  std::optional<Ints> axes = ReduceAxes(c, kAxesInputOpset);
  if (!axes) return {c.input(0)};
  return {c.Op(kOp, {c.input(0)}, MakeAttrs({{"axis", *axes}, {"keepdims", c.attr_int("keepdims", 1)}}))};
}

}  // namespace

Expr SizedAtRunTime(const NodeContext& c, const OpRef& shape_op, const OpRef& op, std::vector<Expr> shape_args,
                    std::vector<Expr> args, const Attrs& attrs, const std::optional<Attrs>& shape_attrs) {
  args.push_back(c.Op(shape_op, std::move(shape_args), shape_attrs ? *shape_attrs : attrs));
  return TupleGetItem(c.Op(op, std::move(args), attrs), 0);
}

namespace {

// The reductions ONNX composes of others: L1 = sum |x|, L2 = sqrt(sum x^2), SumSquare = sum x^2,
// LogSum = log(sum x), LogSumExp = log(sum e^(x - max)) + max. Axes are an input from opset 18;
// reducing nothing (noop_with_empty_axes) leaves the elementwise part.
enum class Composite { kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

template <Composite kKind>
Outputs ReduceComposite(const NodeContext& c) {
  if (AxesAtRunTime(c, 18)) {
    const char* names[] = {"l1", "l2", "sum_square", "log_sum", "log_sum_exp"};
    return ReduceAtRunTime(c, names[static_cast<int>(kKind)]);
  }
  Expr x = c.input(0);
  std::optional<Ints> axes = ReduceAxes(c, 18);
  int64_t keepdims = c.attr_int("keepdims", 1);
  auto sum = [&](const Expr& e, int64_t keep) {
    return axes ? c.Op(kSum, {e}, MakeAttrs({{"axis", *axes}, {"keepdims", keep}})) : e;
  };
  switch (kKind) {
    case Composite::kL1: return {sum(c.Op(kAbs, {x}), keepdims)};
    case Composite::kL2: return {c.Op(kSqrt, {sum(c.Op(kMultiply, {x, x}), keepdims)})};
    case Composite::kSumSquare: return {sum(c.Op(kMultiply, {x, x}), keepdims)};
    case Composite::kLogSum: return {c.Op(kLog, {sum(x, keepdims)})};
    case Composite::kLogSumExp: break;
  }
  if (!axes) return {c.Op(kLog, {c.Op(kExp, {x})})};
  Expr max = c.Op(kMax, {x}, MakeAttrs({{"axis", *axes}, {"keepdims", int64_t{1}}}));
  Expr result = c.Op(kAdd, {c.Op(kLog, {sum(c.Op(kExp, {c.Op(kSubtract, {x, max})}), 1)}), max});
  if (keepdims != 0) return {result};
  Ints shape;  // without the reduced axes (all of them when axes is empty)
  for (int64_t d = 0; d < c.input_type(0).ndim(); ++d) {
    if (!axes->empty() && std::find(axes->begin(), axes->end(), d) == axes->end()) {
      shape.push_back(c.input_type(0).shape[d]);
    }
  }
  return {c.Op(kReshape, {result}, MakeAttrs({{"newshape", shape}}))};
}


// Trilu (opset 14): k from input 1 (default 0), the op's attribute when a constant. A k given at
// run time keeps the elements whose column minus k is at least their row (upper: j - i >= k) or
// at most (lower): where(cols - k >= rows, x, 0) over the last two axes, k clamped to 2^40 either
// way first (beyond the extents every element is kept or none, and cols - k cannot overflow).
Outputs Trilu(const NodeContext& c) {
  const int64_t upper = c.attr_int("upper", 1);
  if (!c.has_input(1) || c.IsConstant(1)) {
    // Past either end every element is kept or none: any |k| beyond 2^62 acts the same.
    double limit = std::ldexp(1.0, 62), value = c.has_input(1) ? c.ConstantScalar(1) : 0.0;
    if (std::isnan(value)) c.FailAt("input 1", "k is not a number");
    int64_t k = static_cast<int64_t>(std::min(std::max(value, -limit), limit));
    return {c.Op(kTrilu, {c.input(0)}, MakeAttrs({{"upper", upper}, {"k", k}}))};
  }
  const TensorType& x = c.input_type(0);
  const TensorType& k_type = c.input_type(1);
  if (x.ndim() < 2) c.FailAt("input 0", StrCat("must have at least 2 dimensions, it has ", x.ndim()));
  if (k_type.dtype != DLDataType{kDLInt, 64, 1} || k_type.NumElements() != 1) {
    c.FailAt("input 1", "k must be one int64 value");
  }
  const int64_t rows = x.shape[x.ndim() - 2], cols = x.shape[x.ndim() - 1], limit = int64_t{1} << 40;
  CheckConstantElements(c, rows, "the row indices");
  CheckConstantElements(c, cols, "the column indices");
  Ints row_values(static_cast<size_t>(rows)), col_values(static_cast<size_t>(cols));
  for (int64_t i = 0; i < rows; ++i) row_values[i] = i;
  for (int64_t j = 0; j < cols; ++j) col_values[j] = j;
  Expr row_index = c.Op(kReshape, {IntConstant(row_values)}, MakeAttrs({{"newshape", Ints{rows, 1}}}));
  Expr k = c.Op(kReshape, {c.input(1)}, MakeAttrs({{"newshape", Ints{1}}}));
  k = c.Op(kMaximum, {c.Op(kMinimum, {k, IntConstant({limit}, true)}), IntConstant({-limit}, true)});
  Expr shifted = c.Op(kSubtract, {IntConstant(col_values), k});  // [cols]: j - k
  Expr keep = c.Op(upper != 0 ? kGreaterEqual : kLessEqual, {shifted, row_index});
  return {c.Op(kWhere, {keep, c.input(0), ScalarLike(c.input(0), 0.0)})};
}

// CenterCropPad: each listed axis cropped or zero-padded about its center to the length `shape`
// gives (an odd difference puts the extra element at the end).
Outputs CenterCropPad(const NodeContext& c) {
  const TensorType& t = c.input_type(0);
  Ints axes;
  if (c.has_attr("axes")) {
    for (int64_t axis : c.attr_ints("axes")) axes.push_back(NormalizeAxis(axis, t.ndim(), c));
  } else {
    for (int64_t d = 0; d < t.ndim(); ++d) axes.push_back(d);
  }
  if (!c.IsConstant(1)) {  // lengths given at run time (ir/ops/run_time_sized.cc)
    if (c.input_type(1).NumElements() != static_cast<int64_t>(axes.size())) {
      c.FailAt("input 1", StrCat("holds ", c.input_type(1).NumElements(), " lengths for ", axes.size(), " axes"));
    }
    return {SizedAtRunTime(c, kDynCenterCropPadShape, kDynCenterCropPad, {c.input(0), c.input(1)}, {c.input(0)}, {},
                           MakeAttrs({{"axes", axes}}))};
  }
  Ints lengths = c.ConstantInts(1);
  if (lengths.size() != axes.size()) {
    c.FailAt("input 1", StrCat("holds ", lengths.size(), " lengths for ", axes.size(), " axes"));
  }
  Expr x = c.input(0);
  Ints width(2 * t.ndim(), 0);
  Ints begin, end, sliced;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t dim = t.shape[axes[i]], want = lengths[i];
    if (want < 0) c.FailAt("input 1", StrCat("length ", want, " must not be negative"));
    if (want < dim) {
      sliced.push_back(axes[i]);
      begin.push_back((dim - want) / 2);
      end.push_back((dim - want) / 2 + want);
    } else {
      width[2 * axes[i]] = (want - dim) / 2;
      width[2 * axes[i] + 1] = want - dim - (want - dim) / 2;
    }
  }
  if (!sliced.empty()) x = c.Op(kStridedSlice, {x}, MakeAttrs({{"begin", begin}, {"end", end}, {"axes", sliced}}));
  if (std::any_of(width.begin(), width.end(), [](int64_t w) { return w != 0; })) {
    x = c.Op(kPad, {x}, MakeAttrs({{"pad_width", width}}));
  }
  return {x};
}

// ReverseSequence: along the time axis, the first sequence_lens[b] elements of each batch entry b
// reversed, the rest kept: a GatherElements with indices t < len ? len - 1 - t : t.
Outputs ReverseSequence(const NodeContext& c) {
  const TensorType& t = c.input_type(0);
  if (t.ndim() < 2) c.FailAt("input 0", "must have a time axis and a batch axis");
  int64_t time = NormalizeAxis(c.attr_int("time_axis", 0), t.ndim(), c);
  int64_t batch = NormalizeAxis(c.attr_int("batch_axis", 1), t.ndim(), c);
  if (time == batch || time > 1 || batch > 1) c.Fail("time_axis and batch_axis must be 0 and 1 in some order");
  if (c.input_type(1).shape != Ints{t.shape[batch]}) {
    c.FailAt("input 1", StrCat("must hold one length per batch entry (", t.shape[batch], ")"));
  }
  Ints along(t.ndim(), 1);
  along[batch] = t.shape[batch];
  Expr lengths = c.Op(kReshape, {c.Op(kCast, {c.input(1)}, MakeAttrs({{"dtype", std::string("int64")}}))},
                      MakeAttrs({{"newshape", along}}));
  Ints steps_shape(t.ndim(), 1);
  steps_shape[time] = t.shape[time];
  CheckConstantElements(c, t.shape[time], "the time steps");
  runtime::NDArray steps = runtime::NDArray::Empty(steps_shape, DLDataType{kDLInt, 64, 1});
  for (int64_t i = 0; i < t.shape[time]; ++i) static_cast<int64_t*>(steps.data())[i] = i;
  Expr step = Constant(steps);
  Expr reversed = c.Op(kSubtract, {c.Op(kSubtract, {lengths, ScalarLike(lengths, 1.0)}), step});
  Expr index = c.Op(kWhere, {c.Op(kLess, {step, lengths}), reversed, step});
  index = c.Op(kBroadcastTo, {index}, MakeAttrs({{"shape", t.shape}}));
  return {c.Op(kGather, {c.input(0), index}, MakeAttrs({{"axis", time}}))};
}

// Hardmax: 1 at the first largest element along the axis, 0 elsewhere; before opset 13 along the
// input flattened to 2-D at the axis.
Outputs Hardmax(const NodeContext& c) {
  const TensorType& t = c.input_type(0);
  int64_t axis = NormalizeAxis(c.attr_int("axis", c.opset() >= 13 ? -1 : 1), t.ndim(), c);
  Expr x = c.input(0);
  if (c.opset() < 13) {
    int64_t rows = 1, cols = 1;
    for (int64_t d = 0; d < t.ndim(); ++d) {
      int64_t& part = d < axis ? rows : cols;
      if (__builtin_mul_overflow(part, t.shape[d], &part)) c.FailAt("input 0", "the flattened input is too large");
    }
    x = c.Op(kReshape, {x}, MakeAttrs({{"newshape", Ints{rows, cols}}}));
    axis = 1;
  }
  int64_t depth = x->type().tensor().shape[axis];
  Expr index = c.Op(kArgMax, {x}, MakeAttrs({{"axis", axis}, {"keepdims", int64_t{0}}}));
  Expr y = c.Op(kOneHot, {index, ScalarLike(c.input(0), 1.0), ScalarLike(c.input(0), 0.0)},
                MakeAttrs({{"depth", depth}, {"axis", axis}}));
  return {c.Op(kReshape, {y}, MakeAttrs({{"newshape", t.shape}}))};
}

// EyeLike: a matrix of the input's shape with ones on diagonal k, in the `dtype` attribute's type
// (the input's by default).
Outputs EyeLike(const NodeContext& c) {
  const TensorType& t = c.input_type(0);
  if (t.ndim() != 2) c.FailAt("input 0", StrCat("must be a matrix, it has ", t.ndim(), " dimensions"));
  DLDataType dtype = c.has_attr("dtype") ? OnnxDType(static_cast<int32_t>(c.attr_int("dtype"))) : t.dtype;
  int64_t k = c.attr_int("k", 0);
  CheckConstantElements(c, t.NumElements(), "the matrix");
  runtime::NDArray eye = runtime::NDArray::Empty(t.shape, DLDataType{kDLFloat, 64, 1});
  auto* values = static_cast<double*>(eye.data());
  for (int64_t e = 0; e < t.NumElements(); ++e) {  // by element: a [2^40, 0] matrix has none to visit
    values[e] = e % t.shape[1] - e / t.shape[1] == k ? 1.0 : 0.0;
  }
  return {c.Op(kCast, {Constant(eye)}, MakeAttrs({{"dtype", runtime::DTypeToString(dtype)}}))};
}

// ArgMax / ArgMin: select_last_index from opset 12 (before: the first index).
template <const OpRef& kOp>
Outputs ArgReduce(const NodeContext& c) {
  int64_t axis = NormalizeAxis(c.attr_int("axis", 0), c.input_type(0).ndim(), c);
  return {c.Op(kOp, {c.input(0)}, MakeAttrs({{"axis", axis}, {"keepdims", c.attr_int("keepdims", 1)},
                                             {"select_last_index", c.attr_int("select_last_index", 0)}}))};
}

}  // namespace

void AddTensorConverters(ConverterTable& table) {
  Register(table, "Reshape", Reshape);
  Register(table, "Transpose", Transpose);
  Register(table, "Concat", Concat);
  Register(table, "Unsqueeze", Unsqueeze);
  Register(table, "Squeeze", Squeeze);
  Register(table, "Slice", Slice);
  Register(table, "Gather", Gather);
  Register(table, "Shape", Shape);
  Register(table, "Size", Size);
  Register(table, "Constant", ConstantOp);
  Register(table, "ConstantOfShape", ConstantOfShape, 9);
  Register(table, "Range", Range);
  Register(table, "Expand", Expand);
  Register(table, "Split", Split);
  Register(table, "Pad", Pad);
  // The reductions are unchanged since opset 1 but for negative axes (11) and axes as an input.
  Register(table, "ReduceSum", Reduce<kSum, 13>, 1);
  Register(table, "ReduceMean", Reduce<kMean, 18>, 1);
  Register(table, "ReduceMax", Reduce<kMax, 18>, 1);
  Register(table, "ReduceMin", Reduce<kMin, 18>, 1);
  Register(table, "ReduceProd", Reduce<kProd, 18>, 1);
  Register(table, "Trilu", Trilu, 14);
  Register(table, "ArgMax", ArgReduce<kArgMax>, 1);
  Register(table, "Hardmax", Hardmax, 1);
  Register(table, "CenterCropPad", CenterCropPad, 18);
  Register(table, "ReverseSequence", ReverseSequence, 10);
  Register(table, "EyeLike", EyeLike, 9);
  Register(table, "ArgMin", ArgReduce<kArgMin>, 1);
  Register(table, "ReduceL1", ReduceComposite<Composite::kL1>, 1);
  Register(table, "ReduceL2", ReduceComposite<Composite::kL2>, 1);
  Register(table, "ReduceSumSquare", ReduceComposite<Composite::kSumSquare>, 1);
  Register(table, "ReduceLogSum", ReduceComposite<Composite::kLogSum>, 1);
  Register(table, "ReduceLogSumExp", ReduceComposite<Composite::kLogSumExp>, 1);
}

namespace {

void RegisterIn(ConverterTable& table, OpKey key, Converter converter, int64_t oldest_opset) {
  std::string name = key.domain.empty() ? key.type : key.domain + "." + key.type;
  runtime::CheckInternal(table.emplace(std::move(key), ConverterEntry{converter, oldest_opset}).second, "the ONNX op ",
                         name, " has two converters");
}

}  // namespace

void Register(ConverterTable& table, const std::string& op_type, Converter converter, int64_t oldest_opset) {
  RegisterIn(table, {"", op_type}, converter, oldest_opset);
}

// ONNX Runtime's contrib ops are all at version 1 of their domain.
void RegisterMicrosoft(ConverterTable& table, const std::string& op_type, Converter converter) {
  RegisterIn(table, {kMicrosoftDomain, op_type}, converter, 1);
}

OpKey KeyOf(const onnx::NodeProto& node) {
  return {node.domain() == "ai.onnx" ? std::string() : node.domain(), node.op_type()};
}

const ConverterEntry* FindConverter(const onnx::NodeProto& node) {
  auto it = Converters().find(KeyOf(node));
  return it == Converters().end() ? nullptr : &it->second;
}

const ConverterTable& Converters() {
  static const ConverterTable table = [] {
    ConverterTable t;
    AddMathConverters(t);
    AddNnConverters(t);
    AddTensorConverters(t);
    AddIndexingConverters(t);
    AddImageConverters(t);
    AddControlConverters(t);
    AddLossConverters(t);
    AddSignalConverters(t);
    AddDataDependentConverters(t);
    AddTextConverters(t);
    AddNormalizationConverters(t);
    AddRecurrentConverters(t);
    AddQuantizeConverters(t);
    AddEinsumConverters(t);
    AddContribTransformerConverters(t);
    AddContribFusedConverters(t);
    AddContribQuantizeConverters(t);
    return t;
  }();
  return table;
}

}  // namespace kiln::frontend
