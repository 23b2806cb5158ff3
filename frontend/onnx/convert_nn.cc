// ONNX neural-network ops: Conv, ConvTranspose, BatchNormalization, pooling, Gemm, MatMul, Flatten.
#include <algorithm>
#include <numeric>
#include <optional>

#include <cstring>

#include "frontend/onnx/converter.h"
#include "ir/ops/infer_util.h"
#include "runtime/error.h"

namespace kiln::frontend {

using namespace ir;
using runtime::StrCat;

namespace {

// The IR ops these converters make.
const OpRef kAbs("abs");
const OpRef kAdd("add");
const OpRef kAvgPool2d("nn.avg_pool2d");
const OpRef kBatchMatmul("nn.batch_matmul");
const OpRef kBatchNorm("nn.batch_norm");
const OpRef kBiasAdd("nn.bias_add");
const OpRef kBroadcastTo("broadcast_to");
const OpRef kCast("cast");
const OpRef kConcatenate("concatenate");
const OpRef kConv2d("nn.conv2d");
const OpRef kConv2dTranspose("nn.conv2d_transpose");
const OpRef kConv3dTranspose("nn.conv3d_transpose");
const OpRef kDense("nn.dense");
const OpRef kGlobalAvgPool2d("nn.global_avg_pool2d");
const OpRef kMax("max");
const OpRef kMaxPool2d("nn.max_pool2d");
const OpRef kMaxPool2dWithIndices("nn.max_pool2d_with_indices");
const OpRef kMean("mean");
const OpRef kMultiply("multiply");
const OpRef kPad("nn.pad");
const OpRef kPower("power");
const OpRef kReshape("reshape");
const OpRef kScatterElements("scatter_elements");
const OpRef kStridedSlice("strided_slice");
const OpRef kTake("take");
const OpRef kTranspose("transpose");

using Outputs = std::vector<Expr>;
using Ints = std::vector<int64_t>;

// Padding [top, left, bottom, right] from pads or auto_pad, for a 2-D window.
// The pads of a window over `in` (one value per spatial axis): all begins, then all ends.
Ints Padding(const NodeContext& c, const Ints& in, const Ints& window, const Ints& strides, const Ints& dilations) {
  size_t axes = in.size();
  std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    Ints pads = c.attr_ints("pads", Ints(2 * axes, 0));
    if (pads.size() != 2 * axes) c.Fail(StrCat("pads must have ", 2 * axes, " values for a ", axes, "-D window, got ", pads.size()));
    return pads;
  }
  if (auto_pad == "VALID") return Ints(2 * axes, 0);
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") c.Fail("auto_pad '" + auto_pad + "' is not known");
  Ints pads(2 * axes);
  for (size_t d = 0; d < axes; ++d) {
    // Bounded first: a zero-sized tensor can have any other dim, and the sums below must not overflow.
    if (in[d] > (int64_t{1} << 40) || strides[d] < 1 || strides[d] > (1 << 20) || dilations[d] < 1 ||
        dilations[d] > (1 << 20) || window[d] < 1 || window[d] > (1 << 20)) {
      c.Fail("auto_pad SAME needs strides, dilations and the window in [1, 2^20] and spatial dims up to 2^40");
    }
    int64_t out = (in[d] + strides[d] - 1) / strides[d];
    int64_t total = std::max<int64_t>((out - 1) * strides[d] + (window[d] - 1) * dilations[d] + 1 - in[d], 0);
    int64_t small = total / 2, large = total - small;
    pads[d] = auto_pad == "SAME_UPPER" ? small : large;
    pads[axes + d] = total - pads[d];
  }
  return pads;
}

// A per-axis attribute of a window over `axes` axes.
Ints AxisValues(const NodeContext& c, const char* name, size_t axes, std::optional<Ints> fallback = std::nullopt) {
  Ints v = c.attr_ints(name, fallback);
  if (v.size() != axes) {
    c.FailAt(StrCat("attribute '", name, "'"), StrCat("needs ", axes, " values for a ", axes, "-D window, got ", v.size()));
  }
  return v;
}

Expr Reshape(const NodeContext& c, const Expr& x, Ints shape) {
  if (x->type().tensor().shape == shape) return x;
  return c.Op(kReshape, {x}, MakeAttrs({{"newshape", shape}}));
}

// An int32 convolution as matrix products, exact: per group, the padded input's patches gathered
// into columns [N, C/G * KH * KW, OH * OW] (one strided slice per kernel tap) times the weight
// [OC/G, C/G * KH * KW], on the int32 product kernel.
Expr IntegerConv2D(const NodeContext& c, const Expr& data, const Expr& weight, const Ints& strides,
                   const Ints& dilations, const Ints& padding, int64_t groups) {
  const Ints& in = data->type().tensor().shape;
  const Ints& w = weight->type().tensor().shape;
  int64_t n = in[0], oc = w[0], cg = w[1], kh = w[2], kw = w[3];
  for (int64_t v : {strides[0], strides[1], dilations[0], dilations[1]}) {
    if (v < 1 || v > (1 << 20)) c.Fail("strides and dilations must be in [1, 2^20]");
  }
  for (int64_t v : padding) {
    if (v < 0 || v > (1 << 20)) c.Fail("pads must be in [0, 2^20]");
  }
  // Each group gathers one strided slice per tap (IR nodes made at import): bounded.
  if (groups < 1 || groups > (1 << 16) || kh < 1 || kw < 1 || kh > 4096 || kw > 4096 || groups * kh * kw > 4096) {
    c.Fail(StrCat(groups, " groups of ", kh, " x ", kw, " taps are more than kiln's integer convolution gathers (4096)"));
  }
  if (in[1] != cg * groups || oc % groups != 0) {
    c.Fail(StrCat("the weight ", ShapeText(w), " does not fit ", in[1], " input channels in ", groups, " groups"));
  }
  Expr x = c.Op(kPad, {data}, MakeAttrs({{"pad_width", Ints{0, 0, 0, 0, padding[0], padding[2], padding[1], padding[3]}}}));
  int64_t oh = (in[2] + padding[0] + padding[2] - (kh - 1) * dilations[0] - 1) / strides[0] + 1;
  int64_t ow = (in[3] + padding[1] + padding[3] - (kw - 1) * dilations[1] - 1) / strides[1] + 1;
  if (oh <= 0 || ow <= 0) c.Fail(StrCat("the window is larger than the padded input ", ShapeText(in)));
  int64_t ocg = oc / groups;
  Outputs per_group;
  for (int64_t g = 0; g < groups; ++g) {
    Expr xg = groups == 1 ? x : c.Op(kStridedSlice, {x}, MakeAttrs({{"begin", Ints{g * cg}}, {"end", Ints{(g + 1) * cg}},
                                                                    {"axes", Ints{1}}}));
    Outputs taps;
    for (int64_t i = 0; i < kh; ++i) {
      for (int64_t j = 0; j < kw; ++j) {
        Ints begin = {i * dilations[0], j * dilations[1]};
        Ints end = {begin[0] + (oh - 1) * strides[0] + 1, begin[1] + (ow - 1) * strides[1] + 1};
        Expr tap = c.Op(kStridedSlice, {xg}, MakeAttrs({{"begin", begin}, {"end", end}, {"strides", strides},
                                                        {"axes", Ints{2, 3}}}));
        taps.push_back(Reshape(c, tap, {n, cg, 1, oh * ow}));
      }
    }
    Expr columns = taps.size() == 1 ? taps[0] : c.Op(kConcatenate, taps, MakeAttrs({{"axis", int64_t{2}}}));
    columns = Reshape(c, columns, {n, cg * kh * kw, oh * ow});
    Expr wg = groups == 1 ? weight : c.Op(kStridedSlice, {weight}, MakeAttrs({{"begin", Ints{g * ocg}},
                                                                             {"end", Ints{(g + 1) * ocg}},
                                                                             {"axes", Ints{0}}}));
    per_group.push_back(c.Op(kBatchMatmul, {Reshape(c, wg, {1, ocg, cg * kh * kw}), columns}));
  }
  Expr y = per_group.size() == 1 ? per_group[0] : c.Op(kConcatenate, per_group, MakeAttrs({{"axis", int64_t{1}}}));
  return Reshape(c, y, {n, oc, oh, ow});
}

// nn.conv2d on float32, IntegerConv2D on int32.
Expr Conv2DCall(const NodeContext& c, const Expr& data, const Expr& weight, const Ints& strides, const Ints& dilations,
                const Ints& padding, int64_t groups) {
  if (data->type().tensor().dtype == DLDataType{kDLInt, 32, 1}) {
    return IntegerConv2D(c, data, weight, strides, dilations, padding, groups);
  }
  return c.Op(kConv2d, {data, weight},
              MakeAttrs({{"strides", strides}, {"dilation", dilations}, {"padding", padding}, {"groups", groups}}));
}

// A 3-D convolution as a 2-D one: for each output depth, the KD input slices its window reads
// become channels (channel c * KD + kd, so that each group's channels stay together), the images
// of every output depth one batch, and the weight [O, C / groups, KD, KH, KW] is already the 2-D
// weight [O, C / groups * KD, KH, KW]. The 2-D kernels then do the products; the gathered input is
// KD / stride_d times the input.
Expr Conv3DAs2D(const NodeContext& c, Expr x, const Expr& weight, const Ints& strides, const Ints& dilations,
                const Ints& pads, int64_t groups) {
  const Ints& in = x->type().tensor().shape;  // [N, C, D, H, W]
  const Ints& w = weight->type().tensor().shape;
  int64_t n = in[0], channels = in[1], kd = w[2];
  for (int64_t v : {strides[0], dilations[0]}) {
    if (v < 1 || v > (1 << 20)) c.Fail("strides and dilations must be in [1, 2^20]");
  }
  if (pads[0] < 0 || pads[3] < 0 || pads[0] > (1 << 20) || pads[3] > (1 << 20)) c.Fail("pads must be in [0, 2^20]");
  if (kd < 1 || kd > 4096) c.FailAt("input 1", StrCat("a window depth of ", kd, " is more than kiln gathers (4096)"));
  if (pads[0] != 0 || pads[3] != 0) {
    x = c.Op(kPad, {x}, MakeAttrs({{"pad_width", Ints{0, 0, 0, 0, pads[0], pads[3], 0, 0, 0, 0}}}));
  }
  int64_t depth = in[2] + pads[0] + pads[3], reach = (kd - 1) * dilations[0] + 1;
  if (depth < reach) c.Fail(StrCat("the window is deeper than the padded input ", ShapeText(in)));
  int64_t out_depth = (depth - reach) / strides[0] + 1;
  Outputs slices;
  for (int64_t k = 0; k < kd; ++k) {
    int64_t begin = k * dilations[0];
    Expr slice = c.Op(kStridedSlice, {x}, MakeAttrs({{"begin", Ints{begin}},
                                                     {"end", Ints{begin + (out_depth - 1) * strides[0] + 1}},
                                                     {"strides", Ints{strides[0]}}, {"axes", Ints{2}}}));
    slices.push_back(Reshape(c, slice, {n, channels, 1, out_depth, in[3], in[4]}));
  }
  Expr taps = slices.size() == 1 ? slices[0] : c.Op(kConcatenate, slices, MakeAttrs({{"axis", int64_t{2}}}));
  taps = c.Op(kTranspose, {taps}, MakeAttrs({{"axes", Ints{0, 3, 1, 2, 4, 5}}}));  // [N, OD, C, KD, H, W]
  taps = Reshape(c, taps, {n * out_depth, channels * kd, in[3], in[4]});
  Expr w2 = Reshape(c, weight, {w[0], w[1] * kd, w[3], w[4]});
  Expr y = Conv2DCall(c, taps, w2, {strides[1], strides[2]}, {dilations[1], dilations[2]},
                      {pads[1], pads[2], pads[4], pads[5]}, groups);
  const Ints& plane = y->type().tensor().shape;  // [N * OD, O, OH, OW]
  y = Reshape(c, y, {n, out_depth, plane[1], plane[2], plane[3]});
  return c.Op(kTranspose, {y}, MakeAttrs({{"axes", Ints{0, 2, 1, 3, 4}}}));
}

}  // namespace

Expr ConvOf(const NodeContext& c, const Expr& data_expr, const Expr& weight_expr) {
  const TensorType& data = data_expr->type().tensor();
  const TensorType& weight = weight_expr->type().tensor();
  int64_t rank = data.ndim();
  if (rank < 3 || rank > 5) c.Fail(StrCat("only 1-D, 2-D and 3-D data (N, C, spatial...) is supported, got rank ", rank));
  if (weight.ndim() != rank) {
    c.FailAt("input 1", StrCat("the weight must have rank ", rank, " for ", rank - 2, "-D data, got ", weight.ndim()));
  }
  auto axes = static_cast<size_t>(rank - 2);
  Ints window(weight.shape.begin() + 2, weight.shape.end());
  Ints strides = AxisValues(c, "strides", axes, Ints(axes, 1));
  Ints dilations = AxisValues(c, "dilations", axes, Ints(axes, 1));
  Ints pads = Padding(c, Ints(data.shape.begin() + 2, data.shape.end()), window, strides, dilations);
  int64_t groups = c.attr_int("group", 1);
  if (axes == 2) return Conv2DCall(c, data_expr, weight_expr, strides, dilations, pads, groups);
  if (axes == 3) return Conv3DAs2D(c, data_expr, weight_expr, strides, dilations, pads, groups);
  // 1-D as 2-D of height 1.
  Expr x = Reshape(c, data_expr, {data.shape[0], data.shape[1], 1, data.shape[2]});
  Expr w = Reshape(c, weight_expr, {weight.shape[0], weight.shape[1], 1, weight.shape[2]});
  Expr y = Conv2DCall(c, x, w, {1, strides[0]}, {1, dilations[0]}, {0, pads[0], 0, pads[1]}, groups);
  const Ints& shape = y->type().tensor().shape;
  return Reshape(c, y, {shape[0], shape[1], shape[3]});
}

namespace {

Outputs Conv(const NodeContext& c) {
  Expr out = ConvOf(c, c.input(0), c.input(1));
  if (c.has_input(2)) out = c.Op(kBiasAdd, {out, c.input(2)}, MakeAttrs({{"axis", int64_t{1}}}));
  return {out};
}

// ConvTranspose as nn.conv2d_transpose (1-D as 2-D with a height of 1) or nn.conv3d_transpose.
// Pads that come out negative (an output_shape larger than the input and kernel make) grow the
// output with zeros, as ONNX's reference does: the op pads by what is positive and nn.pad adds
// the rest before the bias.
Outputs ConvTranspose(const NodeContext& c) {
  const TensorType& data = c.input_type(0);
  const TensorType& weight = c.input_type(1);
  int64_t rank = data.ndim();
  if (rank < 3 || rank > 5 || weight.ndim() != rank) {
    c.Fail(StrCat("only 1-D, 2-D and 3-D data (rank 3 to 5, with a weight of that rank) is supported, got rank ", rank));
  }
  int64_t spatial = rank - 2, groups = c.attr_int("group", 1);
  int64_t channels = data.shape[1];
  if (groups < 1 || channels % groups != 0 || weight.shape[0] != channels) {
    c.Fail(StrCat("weight ", ShapeText(weight.shape), " and group ", groups, " do not fit ", channels, " channels"));
  }
  // Each integer attribute within +-2^20, so that the sizes below cannot overflow.
  auto ints = [&](const char* name, size_t count, int64_t fallback) {
    Ints v = c.attr_ints(name, Ints(count, fallback));
    if (count != 0 && v.size() != count) {
      c.FailAt(StrCat("attribute '", name, "'"), StrCat("needs ", count, " values, it has ", v.size()));
    }
    for (int64_t x : v) {
      if (x > (int64_t{1} << 20) || x < -(int64_t{1} << 20)) c.FailAt(StrCat("attribute '", name, "'"), "is too large");
    }
    return v;
  };
  Ints strides = ints("strides", spatial, 1), dilations = ints("dilations", spatial, 1);
  Ints output_padding = ints("output_padding", spatial, 0), pads = ints("pads", 2 * spatial, 0);
  std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  Ints output_shape = ints("output_shape", 0, 0);
  if (output_shape.size() > static_cast<size_t>(spatial)) output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  // Per axis of the op (1-D data is 2-D with height 1): the op's pads, and the zeros added after it.
  int64_t axes = std::max<int64_t>(spatial, 2);
  Ints op_strides(axes, 1), op_dilations(axes, 1), op_output_padding(axes, 0), padding(2 * axes, 0);
  Ints grow(2 * (axes + 2), 0);
  for (int64_t d = 0; d < spatial; ++d) {
    int64_t in = data.shape[2 + d], k = weight.shape[2 + d], s = strides[d], dil = dilations[d];
    if (s < 1 || dil < 1) c.Fail("strides and dilations must be positive");
    if (output_padding[d] < 0) c.FailAt("attribute 'output_padding'", "must not be negative");
    int64_t full = s * (in - 1) + output_padding[d] + (k - 1) * dil + 1;  // the output with no pads
    int64_t b = pads[d], e = pads[d + spatial];
    bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
    if (auto_pad == "VALID") {
      b = e = 0;
    } else if (!output_shape.empty() || same) {
      if (!output_shape.empty() && static_cast<int64_t>(output_shape.size()) != spatial) {
        c.FailAt("attribute 'output_shape'", "needs one value per axis");
      }
      // Negative when output_shape is larger than the input and kernel make. Halves round down,
      // as ONNX's reference does.
      int64_t total = full - (output_shape.empty() ? in * s : output_shape[d]);
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      b = auto_pad == "SAME_UPPER" ? half : total - half;
      e = total - b;
    } else if (auto_pad != "NOTSET") {
      c.FailAt("attribute 'auto_pad'", "'" + auto_pad + "' is not known");
    }
    if (full - b - e < 1) c.Fail("the pads leave an empty output");
    int64_t at = axes - spatial + d;
    op_strides[at] = s;
    op_dilations[at] = dil;
    op_output_padding[at] = output_padding[d];
    padding[at] = std::max<int64_t>(0, b);
    padding[at + axes] = std::max<int64_t>(0, e);
    grow[2 * (2 + at)] = padding[at] - b;
    grow[2 * (2 + at) + 1] = padding[at + axes] - e;
  }
  Expr x = c.input(0), w = c.input(1);
  if (spatial == 1) {
    x = Reshape(c, x, {data.shape[0], channels, 1, data.shape[2]});
    w = Reshape(c, w, {weight.shape[0], weight.shape[1], 1, weight.shape[2]});
  }
  Expr out = c.Op(spatial == 3 ? kConv3dTranspose : kConv2dTranspose, {x, w},
                  MakeAttrs({{"strides", op_strides}, {"dilation", op_dilations}, {"padding", padding},
                             {"output_padding", op_output_padding}, {"groups", groups}}));
  if (std::any_of(grow.begin(), grow.end(), [](int64_t g) { return g != 0; })) {
    out = c.Op(kPad, {out}, MakeAttrs({{"pad_width", grow}}));
  }
  if (c.has_input(2)) out = c.Op(kBiasAdd, {out, c.input(2)}, MakeAttrs({{"axis", int64_t{1}}}));
  if (spatial == 1) {
    const Ints& shape = out->type().tensor().shape;
    out = Reshape(c, out, {shape[0], shape[1], shape[3]});
  }
  return {out};
}

Outputs BatchNormalization(const NodeContext& c) {
  if (c.attr_int("training_mode", 0) != 0 || c.num_outputs() > 1) {
    c.Fail("training mode (or the running statistics outputs) is not supported");
  }
  return {c.Op(kBatchNorm, {c.input(0), c.input(1), c.input(2), c.input(3), c.input(4)},
               MakeAttrs({{"epsilon", double{c.attr_float("epsilon", 1e-5f)}}, {"axis", int64_t{1}}}))};
}

// A pooling window over 1 to 3 spatial axes; pads: all begins, then all ends.
struct Window {
  Ints window, strides, dilations, pads;
};

// The window of a MaxPool, AveragePool or LpPool over data [N, C, spatial...].
Window WindowOf(const NodeContext& c, const TensorType& data) {
  size_t axes = data.ndim() >= 3 ? data.ndim() - 2 : 0;
  if (axes < 1 || axes > 3) c.Fail(StrCat("only 1-D, 2-D and 3-D data (N, C, spatial...) is supported, got rank ", data.ndim()));
  Window w;
  w.window = AxisValues(c, "kernel_shape", axes);
  w.strides = AxisValues(c, "strides", axes, Ints(axes, 1));
  w.dilations = AxisValues(c, "dilations", axes, Ints(axes, 1));
  w.pads = Padding(c, Ints(data.shape.begin() + 2, data.shape.end()), w.window, w.strides, w.dilations);
  return w;
}

Expr Pool2D(const NodeContext& c, const Expr& x, bool average, int64_t count_include_pad, const Window& w) {
  Attrs attrs = MakeAttrs({{"pool_size", w.window}, {"strides", w.strides}, {"dilation", w.dilations},
                           {"padding", w.pads}, {"ceil_mode", c.attr_int("ceil_mode", 0)}});
  if (average) attrs.Set("count_include_pad", count_include_pad);
  return c.Op(average ? kAvgPool2d : kMaxPool2d, {x}, attrs);
}

// Max or average pooling of float32 data over 1 to 3 spatial axes on the 2-D pooling kernels:
// 1-D as 2-D of height 1; 3-D as a 2-D pooling over H and W of each depth slice, then one over D
// (a box window factors over its axes: its padding, and the count an average divides by, are
// products of per-axis parts).
Expr PoolOf(const NodeContext& c, Expr x, bool average, int64_t count_include_pad, const Window& w) {
  const Ints& shape = x->type().tensor().shape;
  int64_t n = shape[0], channels = shape[1];
  const Ints &k = w.window, &s = w.strides, &d = w.dilations, &p = w.pads;
  if (k.size() == 2) return Pool2D(c, x, average, count_include_pad, w);
  if (k.size() == 1) {
    x = Reshape(c, x, {n, channels, 1, shape[2]});
    Expr y = Pool2D(c, x, average, count_include_pad, {{1, k[0]}, {1, s[0]}, {1, d[0]}, {0, p[0], 0, p[1]}});
    return Reshape(c, y, {n, channels, y->type().tensor().shape[3]});
  }
  int64_t depth = shape[2];
  x = Reshape(c, x, {n, channels * depth, shape[3], shape[4]});
  x = Pool2D(c, x, average, count_include_pad, {{k[1], k[2]}, {s[1], s[2]}, {d[1], d[2]}, {p[1], p[2], p[4], p[5]}});
  Ints plane = {x->type().tensor().shape[2], x->type().tensor().shape[3]};
  x = Reshape(c, x, {n, channels, depth, plane[0] * plane[1]});
  Expr y = Pool2D(c, x, average, count_include_pad, {{k[0], 1}, {s[0], 1}, {d[0], 1}, {p[0], 0, p[3], 0}});
  return Reshape(c, y, {n, channels, y->type().tensor().shape[2], plane[0], plane[1]});
}

// The max pooling of 2-D data and the index of each chosen element in the flattened input.
Outputs MaxPool2DWithIndices(const NodeContext& c, const Expr& x, const Window& w, int64_t storage_order) {
  Attrs attrs = MakeAttrs({{"pool_size", w.window}, {"strides", w.strides}, {"dilation", w.dilations},
                           {"padding", w.pads}, {"ceil_mode", c.attr_int("ceil_mode", 0)},
                           {"storage_order", storage_order}});
  Expr both = c.Op(kMaxPool2dWithIndices, {x}, attrs);
  return {TupleGetItem(both, 0), TupleGetItem(both, 1)};
}

// MaxPool with its Indices output over 1 to 3 spatial axes. 1-D is 2-D of height 1 (a flat index
// is the same in both, in either storage order). 3-D pools each depth slice over H and W, whose
// flat indices are already those of the 3-D input, then over D: the first largest of the slices'
// maxima, and the slice's index taken from where it lies (ties go to the first element in
// row-major order, as with one 3-D window).
Outputs MaxPoolWithIndices(const NodeContext& c, Expr x, const Window& w) {
  const Ints& shape = x->type().tensor().shape;
  int64_t n = shape[0], channels = shape[1], storage_order = c.attr_int("storage_order", 0);
  const Ints &k = w.window, &s = w.strides, &d = w.dilations, &p = w.pads;
  if (k.size() == 2) return MaxPool2DWithIndices(c, x, w, storage_order);
  if (k.size() == 1) {
    x = Reshape(c, x, {n, channels, 1, shape[2]});
    Outputs both = MaxPool2DWithIndices(c, x, {{1, k[0]}, {1, s[0]}, {1, d[0]}, {0, p[0], 0, p[1]}}, 0);
    Ints out = {n, channels, both[0]->type().tensor().shape[3]};
    return {Reshape(c, both[0], out), Reshape(c, both[1], out)};
  }
  if (storage_order != 0) c.Fail("column-major indices (storage_order 1) of 3-D data are not supported");
  int64_t depth = shape[2];
  x = Reshape(c, x, {n, channels * depth, shape[3], shape[4]});
  Outputs slices = MaxPool2DWithIndices(c, x, {{k[1], k[2]}, {s[1], s[2]}, {d[1], d[2]}, {p[1], p[2], p[4], p[5]}}, 0);
  Ints plane = {slices[0]->type().tensor().shape[2], slices[0]->type().tensor().shape[3]};
  Expr maxima = Reshape(c, slices[0], {n, channels, depth, plane[0] * plane[1]});
  Outputs deep = MaxPool2DWithIndices(c, maxima, {{k[0], 1}, {s[0], 1}, {d[0], 1}, {p[0], 0, p[3], 0}}, 0);
  Ints out = {n, channels, deep[0]->type().tensor().shape[2], plane[0], plane[1]};
  Expr flat = Reshape(c, slices[1], {slices[1]->type().tensor().NumElements()});
  Expr indices = c.Op(kTake, {flat, deep[1]}, MakeAttrs({{"axis", int64_t{0}}}));
  return {Reshape(c, deep[0], out), Reshape(c, indices, out)};
}

// MaxPool and AveragePool; MaxPool of 8-bit integers runs on their float32 values (exact) and
// casts back.
Outputs Pool(const NodeContext& c, bool average) {
  const TensorType& data = c.input_type(0);
  Window w = WindowOf(c, data);
  if (c.num_outputs() > 1 && !c.node().output(1).empty()) {  // MaxPool's Indices
    if (data.dtype.code != kDLFloat) c.Fail("the Indices output of MaxPool is supported on float data only");
    return MaxPoolWithIndices(c, c.input(0), w);
  }
  Expr x = c.input(0);
  DLDataType dtype = data.dtype;
  bool small_int = !average && (dtype.code == kDLInt || dtype.code == kDLUInt) && dtype.bits <= 16;
  if (small_int) x = c.Op(kCast, {x}, MakeAttrs({{"dtype", std::string("float32")}}));
  Expr y = PoolOf(c, x, average, c.attr_int("count_include_pad", 0), w);
  if (small_int) y = c.Op(kCast, {y}, MakeAttrs({{"dtype", runtime::DTypeToString(dtype)}}));
  return {y};
}

// LpPool: (sum over the window of |x|^p)^(1/p), as an average pool (padding counted) of |x|^p
// times the window's size.
Outputs LpPool(const NodeContext& c) {
  Window w = WindowOf(c, c.input_type(0));
  int64_t p = c.attr_int("p", 2);
  if (p < 1) c.FailAt("attribute 'p'", StrCat("must be positive, got ", p));
  Expr x = c.Op(kAbs, {c.input(0)});
  Expr powered = p == 1 ? x : c.Op(kPower, {x, ScalarLike(x, static_cast<double>(p))});
  Expr average = PoolOf(c, powered, true, 1, w);
  double size = 1;
  for (int64_t k : w.window) size *= static_cast<double>(k);
  Expr sum = c.Op(kMultiply, {average, ScalarLike(average, size)});
  return {p == 1 ? sum : c.Op(kPower, {sum, ScalarLike(sum, 1.0 / static_cast<double>(p))})};
}

// MaxUnpool: zeros of the output's shape with each input value written at its index (MaxPool's
// Indices: flat over the whole output), as a scatter on the flattened output.
Outputs MaxUnpool(const NodeContext& c) {
  const TensorType& x = c.input_type(0);
  if (c.input_type(1).shape != x.shape) c.FailAt("input 1", "the indices must have the shape of the values");
  if (x.ndim() < 3) c.FailAt("input 0", "must be [N, C, spatial...]");
  auto spatial = static_cast<size_t>(x.ndim() - 2);
  Ints out;
  if (c.has_input(2)) {
    out = c.ConstantInts(2);
    if (out.size() != static_cast<size_t>(x.ndim())) c.FailAt("input 2", "the output shape must give every dimension");
  } else {
    Ints kernel = c.attr_ints("kernel_shape"), strides = c.attr_ints("strides", Ints(spatial, 1));
    Ints pads = c.attr_ints("pads", Ints(2 * spatial, 0));
    if (kernel.size() != spatial || strides.size() != spatial || pads.size() != 2 * spatial) {
      c.Fail(StrCat("kernel_shape, strides and pads must give each of the ", spatial, " spatial axes"));
    }
    out = {x.shape[0], x.shape[1]};
    for (int64_t v : kernel) if (v < 1 || v > (1 << 20)) c.FailAt("attribute 'kernel_shape'", "values must be in [1, 2^20]");
    for (int64_t v : strides) if (v < 1 || v > (1 << 20)) c.FailAt("attribute 'strides'", "values must be in [1, 2^20]");
    for (int64_t v : pads) if (v < 0 || v > (1 << 20)) c.FailAt("attribute 'pads'", "values must be in [0, 2^20]");
    for (size_t d = 0; d < spatial; ++d) {
      int64_t length = 0;
      if (__builtin_mul_overflow(x.shape[2 + d] - 1, strides[d], &length) || length > (int64_t{1} << 40)) {
        c.FailAt("input 0", StrCat("the unpooled axis of ", x.shape[2 + d], " x stride ", strides[d], " is too long"));
      }
      out.push_back(length + kernel[d] - pads[d] - pads[spatial + d]);
    }
  }
  int64_t total = 1;
  for (int64_t d : out) {
    if (d < 0) c.Fail(StrCat("the output shape ", ShapeText(out), " is negative"));
    if (__builtin_mul_overflow(total, d, &total)) c.Fail(StrCat("the output shape ", ShapeText(out), " is too large"));
  }
  CheckConstantElements(c, total, "the output's zeros");
  runtime::NDArray zeros = runtime::NDArray::Empty({total}, x.dtype);
  std::memset(zeros.data(), 0, static_cast<size_t>(zeros.NumBytes()));
  Expr indices = c.Op(kCast, {c.input(1)}, MakeAttrs({{"dtype", std::string("int64")}}));
  Expr y = c.Op(kScatterElements, {Constant(zeros), Reshape(c, indices, {x.NumElements()}),
                                   Reshape(c, c.input(0), {x.NumElements()})},
                MakeAttrs({{"axis", int64_t{0}}}));
  return {Reshape(c, y, out)};
}

Outputs MaxPool(const NodeContext& c) { return Pool(c, false); }
Outputs AveragePool(const NodeContext& c) { return Pool(c, true); }

// The spatial axes of data [N, C, spatial...] of 1 to 3 of them.
Ints SpatialAxes(const NodeContext& c) {
  int64_t rank = c.input_type(0).ndim();
  if (rank < 3 || rank > 5) c.Fail(StrCat("only 1-D, 2-D and 3-D data (N, C, spatial...) is supported, got rank ", rank));
  Ints axes;
  for (int64_t a = 2; a < rank; ++a) axes.push_back(a);
  return axes;
}

// 2-D as nn.global_avg_pool2d (which AlterOpLayout lays out with the convolutions), 1-D and 3-D as
// a mean over the spatial axes.
Outputs GlobalAveragePool(const NodeContext& c) {
  Ints axes = SpatialAxes(c);
  if (axes.size() == 2) return {c.Op(kGlobalAvgPool2d, {c.input(0)})};
  return {c.Op(kMean, {c.input(0)}, MakeAttrs({{"axis", axes}, {"keepdims", int64_t{1}}}))};
}

Outputs GlobalMaxPool(const NodeContext& c) {
  return {c.Op(kMax, {c.input(0)}, MakeAttrs({{"axis", SpatialAxes(c)}, {"keepdims", int64_t{1}}}))};
}

Expr Scale(const NodeContext& c, const Expr& x, double factor) {
  if (factor == 1.0) return x;
  runtime::NDArray s = runtime::NDArray::Empty({}, runtime::kFloat32);
  *static_cast<float*>(s.data()) = static_cast<float>(factor);
  return c.Op(kMultiply, {x, Constant(s)});
}

Outputs Gemm(const NodeContext& c) {
  Expr a = c.input(0), b = c.input(1);
  if (c.attr_int("transA", 0) != 0) a = c.Op(kTranspose, {a}, MakeAttrs({{"axes", Ints{1, 0}}}));
  if (c.attr_int("transB", 0) == 0) b = c.Op(kTranspose, {b}, MakeAttrs({{"axes", Ints{1, 0}}}));  // to [N, K]
  Expr y = Scale(c, c.Op(kDense, {a, b}), c.attr_float("alpha", 1.0f));
  if (c.has_input(2)) y = c.Op(kAdd, {y, Scale(c, c.input(2), c.attr_float("beta", 1.0f))});
  return {y};
}

int64_t Product(const Ints& v, size_t begin, size_t end) {
  return std::accumulate(v.begin() + begin, v.begin() + end, int64_t{1}, std::multiplies<int64_t>());
}

}  // namespace

Expr MatMulOf(const NodeContext& c, Expr a, Expr b) {
  Ints as = a->type().tensor().shape, bs = b->type().tensor().shape;
  if (as.empty() || bs.empty()) c.Fail("MatMul of a scalar");
  bool a_vector = as.size() == 1, b_vector = bs.size() == 1;
  if (a_vector) {
    as.insert(as.begin(), 1);
    a = Reshape(c, a, as);
  }
  if (b_vector) {
    bs.push_back(1);
    b = Reshape(c, b, bs);
  }
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k) c.Fail(StrCat("inner dimensions differ: ", k, " and ", bs[bs.size() - 2]));
  Ints batch_a(as.begin(), as.end() - 2), batch_b(bs.begin(), bs.end() - 2);
  Ints out_shape;
  Expr y;
  if (batch_b.empty() && a->type().tensor().dtype == runtime::kFloat32) {
    // [..., M, K] x [K, N]: a dense layer with weight [N, K] (folded when b is a constant).
    y = c.Op(kDense, {a, c.Op(kTranspose, {b}, MakeAttrs({{"axes", Ints{1, 0}}}))});
    out_shape = as;
    out_shape.back() = n;
  } else {
    Ints batch = BroadcastShapes(batch_a, batch_b);
    int64_t count = Product(batch, 0, batch.size());
    auto to_3d = [&](Expr x, const Ints& shape, const Ints& x_batch, int64_t rows, int64_t cols) {
      if (Product(x_batch, 0, x_batch.size()) == 1) return Reshape(c, x, {1, rows, cols});
      if (x_batch != batch) {
        Ints full = batch;
        full.push_back(rows);
        full.push_back(cols);
        x = c.Op(kBroadcastTo, {x}, MakeAttrs({{"shape", full}}));
      }
      (void)shape;
      return Reshape(c, x, {count, rows, cols});
    };
    Expr a3 = to_3d(a, as, batch_a, m, k), b3 = to_3d(b, bs, batch_b, k, n);
    y = c.Op(kBatchMatmul, {a3, b3});
    out_shape = batch;
    out_shape.push_back(m);
    out_shape.push_back(n);
    y = Reshape(c, y, out_shape);
  }
  if (a_vector) out_shape.erase(out_shape.end() - 2);
  if (b_vector) out_shape.pop_back();
  return Reshape(c, y, out_shape);
}

namespace {

Outputs MatMul(const NodeContext& c) { return {MatMulOf(c, c.input(0), c.input(1))}; }

Outputs Flatten(const NodeContext& c) {
  const Ints& shape = c.input_type(0).shape;
  int64_t axis = c.attr_int("axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(shape.size());
  if (axis < 0 || axis > static_cast<int64_t>(shape.size())) c.Fail(StrCat("axis ", axis, " is out of range"));
  return {Reshape(c, c.input(0), {Product(shape, 0, axis), Product(shape, axis, shape.size())})};
}

}  // namespace

void AddNnConverters(ConverterTable& table) {
  Register(table, "Conv", Conv);
  Register(table, "ConvTranspose", ConvTranspose);
  Register(table, "BatchNormalization", BatchNormalization);
  Register(table, "MaxPool", MaxPool);
  Register(table, "AveragePool", AveragePool);
  Register(table, "LpPool", LpPool, 11);
  Register(table, "MaxUnpool", MaxUnpool, 11);
  Register(table, "GlobalAveragePool", GlobalAveragePool, 1);
  Register(table, "GlobalMaxPool", GlobalMaxPool, 1);
  Register(table, "Gemm", Gemm);
  Register(table, "MatMul", MatMul);
  Register(table, "Flatten", Flatten);
}

}  // namespace kiln::frontend
