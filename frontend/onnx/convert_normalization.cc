// ONNX normalizations: LayerNormalization (the IR's nn.layer_norm over the last axis, composed
// otherwise), ONNX Runtime's SimplifiedLayerNormalization (root mean square), and
// InstanceNormalization, GroupNormalization, LpNormalization and LRN composed of reductions,
// pooling and arithmetic. (BatchNormalization: convert_nn.cc.)
#include <algorithm>
#include <cstring>

#include "frontend/onnx/converter.h"
#include "runtime/error.h"

namespace kiln::frontend {

using namespace ir;
using runtime::StrCat;

namespace {

const OpRef kAbs("abs");
const OpRef kAdd("add");
const OpRef kAvgPool2d("nn.avg_pool2d");
const OpRef kDivide("divide");
const OpRef kLayerNorm("nn.layer_norm");
const OpRef kMean("mean");
const OpRef kMultiply("multiply");
const OpRef kPower("power");
const OpRef kReshape("reshape");
const OpRef kSqrt("sqrt");
const OpRef kSubtract("subtract");
const OpRef kSum("sum");

using Outputs = std::vector<Expr>;
using Ints = std::vector<int64_t>;

// x standardized over `axes`, with the mean and 1 / sqrt(variance + epsilon) it used (both with
// the axes kept as size 1).
struct Standardized {
  Expr y, mean, inverse_deviation;
};
Standardized StandardizeWithMoments(const NodeContext& c, const Expr& x, const Ints& axes, double epsilon) {
  Attrs over = MakeAttrs({{"axis", axes}, {"keepdims", int64_t{1}}});
  Expr mean = c.Op(kMean, {x}, over);
  Expr centered = c.Op(kSubtract, {x, mean});
  Expr variance = c.Op(kMean, {c.Op(kMultiply, {centered, centered})}, over);
  Expr inverse = c.Op(kDivide, {ScalarLike(x, 1.0), c.Op(kSqrt, {c.Op(kAdd, {variance, ScalarLike(x, epsilon)})})});
  return {c.Op(kMultiply, {centered, inverse}), mean, inverse};
}

Expr Standardize(const NodeContext& c, const Expr& x, const Ints& axes, double epsilon) {
  return StandardizeWithMoments(c, x, axes, epsilon).y;
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

// LayerNormalization: x standardized over the axes from `axis` on, * scale + B; outputs Y, and
// Mean and InvStdDev when asked for. ONNX Runtime runs it in the default domain below opset 17
// too, in the form ONNX made standard at 17.
Outputs LayerNormalization(const NodeContext& c) {
  int64_t axis = NormalizeAxis(c.attr_int("axis", -1), c.input_type(0).ndim(), c);
  Normalized n = LayerNormOf(c, c.input(0), c.input(1), c.has_input(2) ? c.input(2) : nullptr, axis,
                             c.attr_float("epsilon", 1e-5f), c.num_outputs() > 1);
  if (c.num_outputs() == 1) return {n.y};
  return {n.y, n.mean, n.inverse_deviation};
}

// SimplifiedLayerNormalization (ONNX Runtime's, in the default domain): x / sqrt(mean(x^2) +
// epsilon) * scale over the axes from `axis` on; outputs Y and InvStdDev.
Outputs SimplifiedLayerNormalization(const NodeContext& c) {
  int64_t axis = NormalizeAxis(c.attr_int("axis", -1), c.input_type(0).ndim(), c);
  Normalized n = RootMeanSquareNormOf(c, c.input(0), c.input(1), axis, c.attr_float("epsilon", 1e-5f));
  return {n.y, n.inverse_deviation};
}

// LpNormalization: x divided by its L1 or L2 norm along the axis.
// MeanVarianceNormalization: (x - mean) / (sqrt(mean(x^2) - mean^2) + 1e-9) over `axes`
// (default N, H, W), as ONNX's reference computes it.
Outputs MeanVarianceNormalization(const NodeContext& c) {
  Expr x = c.input(0);
  Ints axes;
  for (int64_t axis : c.attr_ints("axes", Ints{0, 2, 3})) axes.push_back(NormalizeAxis(axis, c.input_type(0).ndim(), c));
  Attrs along = MakeAttrs({{"axis", axes}, {"keepdims", int64_t{1}}});
  Expr mean = c.Op(kMean, {x}, along);
  Expr spread = c.Op(kSubtract, {c.Op(kMean, {c.Op(kMultiply, {x, x})}, along), c.Op(kMultiply, {mean, mean})});
  Expr deviation = c.Op(kAdd, {c.Op(kSqrt, {spread}), ScalarLike(x, 1e-9)});
  return {c.Op(kDivide, {c.Op(kSubtract, {x, mean}), deviation})};
}

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

// LRN: x / (bias + alpha / size * (sum of x^2 over `size` neighbouring channels))^beta; the sum is
// an average pool of x^2 (pads counted) over a [size, 1] window of x seen as [N, 1, C, D1 * ...].
Outputs LRN(const NodeContext& c) {
  const TensorType& x = c.input_type(0);
  RequireChannels(c, x);
  int64_t size = c.attr_int("size");
  if (size < 1) c.FailAt("attribute 'size'", StrCat("must be positive, got ", size));
  double alpha = c.attr_float("alpha", 1e-4f), beta = c.attr_float("beta", 0.75f), bias = c.attr_float("bias", 1.0f);
  Expr squares = Reshape(c, c.Op(kMultiply, {c.input(0), c.input(0)}),
                         {x.shape[0], 1, x.shape[1], x.NumElements() / std::max<int64_t>(1, x.shape[0] * x.shape[1])});
  Expr mean = c.Op(kAvgPool2d, {squares},
                   MakeAttrs({{"pool_size", Ints{size, 1}}, {"strides", Ints{1, 1}}, {"dilation", Ints{1, 1}},
                              {"padding", Ints{(size - 1) / 2, 0, size / 2, 0}}, {"count_include_pad", int64_t{1}}}));
  Expr base = c.Op(kAdd, {c.Op(kMultiply, {mean, ScalarLike(mean, alpha)}), ScalarLike(mean, bias)});
  Expr scale = Reshape(c, c.Op(kPower, {base, ScalarLike(mean, beta)}), x.shape);
  return {c.Op(kDivide, {c.input(0), scale})};
}

}  // namespace

Normalized LayerNormOf(const NodeContext& c, const Expr& x, const Expr& scale, const Expr& bias, int64_t axis,
                       double epsilon, bool want_moments) {
  const TensorType& t = x->type().tensor();
  bool vector_params = scale->type().tensor().ndim() == 1 && (bias == nullptr || bias->type().tensor().ndim() == 1);
  if (axis == t.ndim() - 1 && !want_moments && vector_params) {
    Expr beta = bias;
    if (beta == nullptr) {
      runtime::NDArray zeros = runtime::NDArray::Empty({t.shape.back()}, t.dtype);
      std::memset(zeros.data(), 0, zeros.NumBytes());
      beta = Constant(zeros);
    }
    return {c.Op(kLayerNorm, {x, scale, beta}, MakeAttrs({{"axis", axis}, {"epsilon", epsilon}})), nullptr, nullptr};
  }
  Ints axes;
  for (int64_t d = axis; d < t.ndim(); ++d) axes.push_back(d);
  Standardized s = StandardizeWithMoments(c, x, axes, epsilon);
  Expr y = c.Op(kMultiply, {s.y, scale});
  if (bias != nullptr) y = c.Op(kAdd, {y, bias});
  return {y, s.mean, s.inverse_deviation};
}

Normalized RootMeanSquareNormOf(const NodeContext& c, const Expr& x, const Expr& scale, int64_t axis, double epsilon) {
  Ints axes;
  for (int64_t d = axis; d < x->type().tensor().ndim(); ++d) axes.push_back(d);
  Expr mean_square = c.Op(kMean, {c.Op(kMultiply, {x, x})}, MakeAttrs({{"axis", axes}, {"keepdims", int64_t{1}}}));
  Expr inverse = c.Op(kDivide, {ScalarLike(x, 1.0), c.Op(kSqrt, {c.Op(kAdd, {mean_square, ScalarLike(x, epsilon)})})});
  return {c.Op(kMultiply, {c.Op(kMultiply, {x, inverse}), scale}), nullptr, inverse};
}

void AddNormalizationConverters(ConverterTable& table) {
  Register(table, "LayerNormalization", LayerNormalization, 1);
  Register(table, "SimplifiedLayerNormalization", SimplifiedLayerNormalization, 1);
  Register(table, "InstanceNormalization", InstanceNormalization, 6);
  Register(table, "GroupNormalization", GroupNormalization, 18);
  Register(table, "LpNormalization", LpNormalization, 1);
  Register(table, "MeanVarianceNormalization", MeanVarianceNormalization, 9);
  Register(table, "LRN", LRN, 1);
}

}  // namespace kiln::frontend
