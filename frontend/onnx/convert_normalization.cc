// ONNX normalizations composed of reductions and arithmetic: InstanceNormalization,
// GroupNormalization and LpNormalization. (BatchNormalization and LayerNormalization have IR ops
// of their own: convert_nn.cc.)
#include <algorithm>

#include "frontend/onnx/converter.h"
#include "runtime/error.h"

namespace kiln::frontend {

using namespace ir;
using runtime::StrCat;

namespace {

const OpRef kAbs("abs");
const OpRef kAdd("add");
const OpRef kDivide("divide");
const OpRef kMean("mean");
const OpRef kMultiply("multiply");
const OpRef kReshape("reshape");
const OpRef kSqrt("sqrt");
const OpRef kSubtract("subtract");
const OpRef kSum("sum");

using Outputs = std::vector<Expr>;
using Ints = std::vector<int64_t>;

// (x - mean) / sqrt(var + epsilon) with mean and variance over `axes` (kept as size 1).
Expr Standardize(const NodeContext& c, const Expr& x, const Ints& axes, double epsilon) {
  Attrs over = MakeAttrs({{"axis", axes}, {"keepdims", int64_t{1}}});
  Expr centered = c.Op(kSubtract, {x, c.Op(kMean, {x}, over)});
  Expr variance = c.Op(kMean, {c.Op(kMultiply, {centered, centered})}, over);
  return c.Op(kDivide, {centered, c.Op(kSqrt, {c.Op(kAdd, {variance, ScalarLike(x, epsilon)})})});
}

Expr Reshape(const NodeContext& c, const Expr& x, const Ints& shape) {
  return c.Op(kReshape, {x}, MakeAttrs({{"newshape", shape}}));
}

// Input i, a vector of `length` values, reshaped to lie along axis 1 of a rank-`rank` tensor.
Expr AlongAxis1(const NodeContext& c, size_t i, int64_t length, int64_t rank) {
  if (c.input_type(i).NumElements() != length || c.input_type(i).ndim() != 1) {
    c.FailAt(StrCat("input ", i), StrCat("must be a vector of ", length, " values"));
  }
  Ints shape(rank, 1);
  shape[1] = length;
  return Reshape(c, c.input(i), shape);
}

void RequireChannels(const NodeContext& c, const TensorType& x) {
  if (x.ndim() < 3) c.FailAt("input 0", StrCat("must be [N, C, D1, ...], got rank ", x.ndim()));
}

// InstanceNormalization: each (n, c) plane standardized, then * scale[c] + B[c].
Outputs InstanceNormalization(const NodeContext& c) {
  const TensorType& x = c.input_type(0);
  RequireChannels(c, x);
  Ints spatial;
  for (int64_t d = 2; d < x.ndim(); ++d) spatial.push_back(d);
  Expr y = Standardize(c, c.input(0), spatial, c.attr_float("epsilon", 1e-5f));
  y = c.Op(kMultiply, {y, AlongAxis1(c, 1, x.shape[1], x.ndim())});
  return {c.Op(kAdd, {y, AlongAxis1(c, 2, x.shape[1], x.ndim())})};
}

// GroupNormalization: the channels in num_groups groups, each group of a sample standardized; then
// scale and bias per group (opset 18) or per channel (21).
Outputs GroupNormalization(const NodeContext& c) {
  const TensorType& x = c.input_type(0);
  RequireChannels(c, x);
  int64_t groups = c.attr_int("num_groups"), channels = x.shape[1];
  if (groups < 1 || channels % groups != 0) {
    c.FailAt("attribute 'num_groups'", StrCat(groups, " groups do not divide ", channels, " channels"));
  }
  Expr grouped = Reshape(c, c.input(0), {x.shape[0], groups, x.NumElements() / std::max<int64_t>(1, x.shape[0] * groups)});
  Expr y = Standardize(c, grouped, {2}, c.attr_float("epsilon", 1e-5f));
  if (c.opset() < 21) {
    y = c.Op(kAdd, {c.Op(kMultiply, {y, AlongAxis1(c, 1, groups, 3)}), AlongAxis1(c, 2, groups, 3)});
    return {Reshape(c, y, x.shape)};
  }
  y = Reshape(c, y, x.shape);
  return {c.Op(kAdd, {c.Op(kMultiply, {y, AlongAxis1(c, 1, channels, x.ndim())}), AlongAxis1(c, 2, channels, x.ndim())})};
}

// LpNormalization: x divided by its L1 or L2 norm along the axis.
Outputs LpNormalization(const NodeContext& c) {
  Expr x = c.input(0);
  int64_t axis = NormalizeAxis(c.attr_int("axis", -1), c.input_type(0).ndim(), c), p = c.attr_int("p", 2);
  Attrs along = MakeAttrs({{"axis", Ints{axis}}, {"keepdims", int64_t{1}}});
  Expr norm;
  if (p == 1) {
    norm = c.Op(kSum, {c.Op(kAbs, {x})}, along);
  } else if (p == 2) {
    norm = c.Op(kSqrt, {c.Op(kSum, {c.Op(kMultiply, {x, x})}, along)});
  } else {
    c.FailAt("attribute 'p'", StrCat("must be 1 or 2, got ", p));
  }
  return {c.Op(kDivide, {x, norm})};
}

}  // namespace

void AddNormalizationConverters(ConverterTable& table) {
  Register(table, "InstanceNormalization", InstanceNormalization, 6);
  Register(table, "GroupNormalization", GroupNormalization, 18);
  Register(table, "LpNormalization", LpNormalization, 1);
}

}  // namespace kiln::frontend
