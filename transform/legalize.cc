// Legalize.
#include "transform/legalize.h"

#include <algorithm>

namespace kiln::transform {

using namespace ir;

namespace {

using Ints = std::vector<int64_t>;

// The ops this pass rewrites and makes.
const OpRef kConv2DTranspose("nn.conv2d_transpose");
const OpRef kConv2D("nn.conv2d");
const OpRef kPad("nn.pad");
const OpRef kReshape("reshape");
const OpRef kStridedSlice("strided_slice");
const OpRef kTranspose("transpose");

Expr Reshape(const Expr& x, const Ints& shape) {
  Attrs attrs;
  attrs.Set("newshape", shape);
  return Call(kReshape, {x}, attrs);
}

Expr Slice(const Expr& x, const Ints& begin, const Ints& end, const Ints& strides, const Ints& axes) {
  Attrs attrs;
  attrs.Set("begin", begin);
  attrs.Set("end", end);
  attrs.Set("strides", strides);
  attrs.Set("axes", axes);
  return Call(kStridedSlice, {x}, attrs);
}

Expr Conv2DTransposeAsConv2D(const CallNode& call, const std::vector<Expr>& in) {
  const Ints& data = in[0]->type().tensor().shape;    // [N, C, H, W]
  const Ints& weight = in[1]->type().tensor().shape;  // [C, M / groups, kh, kw]
  const Ints& strides = call.attrs.GetInts("strides");
  const Ints& dilation = call.attrs.GetInts("dilation");
  const Ints& padding = call.attrs.GetInts("padding");
  const Ints& output_padding = call.attrs.GetInts("output_padding");
  int64_t groups = call.attrs.GetInt("groups");
  int64_t n = data[0], channels = data[1], out_per_group = weight[1];
  // The padding of the zero-stuffed input, per axis: negative crops.
  Ints begin(2), end(2);
  for (int d = 0; d < 2; ++d) {
    int64_t extent = (weight[2 + d] - 1) * dilation[d];
    begin[d] = extent - padding[d];
    // The stuffed input is in * s long: s - 1 zeros follow its last element too.
    end[d] = extent - padding[2 + d] + output_padding[d] - (strides[d] - 1);
  }
  Expr x = in[0];
  Ints stuffed = {data[2] * strides[0], data[3] * strides[1]};
  if (strides[0] != 1 || strides[1] != 1) {
    // [N, C, H, 1, W, 1] padded to [N, C, H, sh, W, sw].
    x = Reshape(x, {n, channels, data[2], 1, data[3], 1});
    Attrs pad;
    pad.Set("pad_width", Ints{0, 0, 0, 0, 0, 0, 0, strides[0] - 1, 0, 0, 0, strides[1] - 1});
    x = Reshape(Call(kPad, {x}, pad), {n, channels, stuffed[0], stuffed[1]});
  }
  if (begin[0] < 0 || begin[1] < 0 || end[0] < 0 || end[1] < 0) {
    Ints from = {std::max<int64_t>(0, -begin[0]), std::max<int64_t>(0, -begin[1])};
    Ints to = {stuffed[0] - std::max<int64_t>(0, -end[0]), stuffed[1] - std::max<int64_t>(0, -end[1])};
    x = Slice(x, from, to, {1, 1}, {2, 3});
  }
  // [C, M/g, kh, kw] -> [M, C/g, kh, kw], flipped along kh and kw.
  Expr w = Reshape(in[1], {groups, channels / groups, out_per_group, weight[2], weight[3]});
  Attrs axes;
  axes.Set("axes", Ints{0, 2, 1, 3, 4});
  w = Reshape(Call(kTranspose, {w}, axes), {groups * out_per_group, channels / groups, weight[2], weight[3]});
  w = Slice(w, {-1, -1}, {-(int64_t{1} << 62), -(int64_t{1} << 62)}, {-1, -1}, {2, 3});
  Attrs conv;
  conv.Set("strides", Ints{1, 1});
  conv.Set("dilation", dilation);
  conv.Set("padding", Ints{std::max<int64_t>(0, begin[0]), std::max<int64_t>(0, begin[1]),
                           std::max<int64_t>(0, end[0]), std::max<int64_t>(0, end[1])});
  conv.Set("groups", groups);
  return Call(kConv2D, {x, w}, conv);
}

}  // namespace

bool Legalizes(const std::string& op) { return op == kConv2DTranspose.name(); }

Expr Legalize(const Expr& main, const PassEnvironment&) {
  const auto* f = main->As<FunctionNode>();
  Expr body = Rewrite(f->body, [](const Expr& original, const std::vector<Expr>& inputs) -> Expr {
    const auto* call = original->As<CallNode>();
    if (call != nullptr && kConv2DTranspose.Is(call->op)) return Conv2DTransposeAsConv2D(*call, inputs);
    return WithInputs(original, inputs);
  });
  return body == f->body ? main : Function(f->params, body, f->attrs);
}

}  // namespace kiln::transform
