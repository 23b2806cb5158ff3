// FoldScaleAxis.
#include "transform/fold_scale_axis.h"

#include "transform/pattern.h"

namespace kiln::transform {

using namespace ir;

namespace {

const OpRef kBiasAdd("nn.bias_add");
const OpRef kConv2D("nn.conv2d");
const OpRef kDense("nn.dense");
const OpRef kMultiply("multiply");
const OpRef kReshape("reshape");
Attrs NewShape(std::vector<int64_t> shape) {
  Attrs attrs;
  attrs.Set("newshape", std::move(shape));
  return attrs;
}

// The channel count when `scale`, broadcast against `out` (a value with channels on `axis`),
// varies only along that axis; otherwise -1.
int64_t ChannelScale(const Expr& scale, const TensorType& out, int axis) {
  if (!scale->type().is_tensor()) return -1;
  const TensorType& s = scale->type().tensor();
  if (s.ndim() > out.ndim()) return -1;
  int offset = out.ndim() - s.ndim();
  for (int d = 0; d < s.ndim(); ++d) {
    int od = d + offset;
    if (od == axis) {
      if (s.shape[d] != out.shape[axis]) return -1;
    } else if (s.shape[d] != 1) {
      return -1;
    }
  }
  return axis >= offset ? out.shape[axis] : -1;
}

// A convolution in NCHW / OIHW or a dense layer with an [N, K] weight (not blocked or packed by
// AlterOpLayout).
bool PlainLayouts(const Expr& e) {
  const CallNode& layer = *e->As<CallNode>();
  if (kDense.Is(layer.op)) return layer.attrs.GetString("weight_layout") == "NK";
  const std::string& out = layer.attrs.GetString("out_layout");
  return layer.attrs.GetString("data_layout") == "NCHW" && layer.attrs.GetString("kernel_layout") == "OIHW" &&
         (out.empty() || out == "NCHW");
}

// multiply(layer(data, weight), scale) or multiply(bias_add(layer(...), bias), scale), either
// operand order, for a conv2d or dense layer whose result only the multiply (through the bias)
// reads: the scale moves into the weight and the bias.
PatternRewrite ScaleIntoLayer() {
  Pattern data = Wildcard(), weight = Wildcard(), bias = Wildcard(), scale = IsConstant();
  Pattern conv = IsOp(kConv2D, {data, weight});
  Pattern layer = (conv | IsOp(kDense, {data, weight})).Where(PlainLayouts);
  Pattern biased = IsOp(kBiasAdd, {layer, bias});
  Pattern pattern = IsOp(kMultiply, {biased | layer, scale}).Commutative();
  return {pattern, [=](const Match& m, const Rewritten& rewritten) -> Expr {
            const CallNode& layer_call = *m[layer]->As<CallNode>();
            const TensorType& out = (m[biased] != nullptr ? m[biased] : m[layer])->type().tensor();
            if (m.root()->type().tensor() != out) return nullptr;  // the scale must not broadcast the result
            int axis = m[conv] != nullptr ? 1 : out.ndim() - 1;
            if (m[biased] != nullptr) {
              int64_t bias_axis = m[biased]->As<CallNode>()->attrs.GetInt("axis");
              if (bias_axis != axis && bias_axis != axis - out.ndim()) return nullptr;
            }
            int64_t channels = m[scale]->As<ConstantNode>() != nullptr ? ChannelScale(m[scale], out, axis) : -1;
            if (channels < 0) return nullptr;
            std::vector<int64_t> weight_scale_shape(m[weight]->type().tensor().ndim(), 1);
            weight_scale_shape[0] = channels;  // OIHW and [N, K] both have output channels first
            Expr w = Call(kMultiply, {rewritten(m[weight]), Call(kReshape, {m[scale]}, NewShape(weight_scale_shape))});
            Expr scaled = Call(*layer_call.op, {rewritten(m[data]), w}, layer_call.attrs);
            if (m[biased] == nullptr) return scaled;
            Expr b = Call(kMultiply, {rewritten(m[bias]), Call(kReshape, {m[scale]}, NewShape({channels}))});
            return Call(kBiasAdd, {scaled, b}, m[biased]->As<CallNode>()->attrs);
          }};
}

// conv2d(multiply(x, scale), weight), either operand order, with a scale per input channel that
// only the convolution reads (squeeze-and-excitation's gate before the block's projection): the
// scale moves into the weight, conv2d(x, weight * scale), so that no pass over x multiplies it.
// A scale computed at run time makes the weight one too, multiplied and laid out at each run;
// that is worth it only when the weight has no more elements than x per input channel (out
// channels x taps <= positions: EfficientNet-B0's projections on planes of 112x112 to 14x14, one
// core 11.6-12.0 -> 11.2-11.3 ms; folding only where the weight is half as large was no faster),
// and it is legal only when every image of the batch has the same scale, so not when the batch
// is decided at run time (the library is compiled for one image, each with its own scale). With
// shape dimensions the positions are known at run time only: the scale stays on x.
PatternRewrite ScaleIntoNextConv(bool batch_at_run_time, bool sizes_vary) {
  Pattern data = Wildcard(), scale = Wildcard(), weight = Wildcard();
  Pattern scaled = IsOp(kMultiply, {data, scale}).Commutative();
  Pattern conv = IsOp(kConv2D, {scaled, weight}).Where(PlainLayouts);
  return {conv, [=](const Match& m, const Rewritten& rewritten) -> Expr {
            const CallNode& conv_call = *m.root()->As<CallNode>();
            const TensorType& in = m[scaled]->type().tensor();
            if (conv_call.attrs.GetInt("groups") != 1 || !m[data]->type().is_tensor() ||
                m[data]->type().tensor() != in || in.ndim() != 4) {
              return nullptr;  // the scale must not broadcast the data
            }
            int64_t channels = ChannelScale(m[scale], in, 1);
            if (channels < 0) return nullptr;
            if (m[scale]->As<ConstantNode>() == nullptr) {
              const TensorType& w = m[weight]->type().tensor();
              if (batch_at_run_time || sizes_vary || w.shape[0] * w.shape[2] * w.shape[3] > in.shape[2] * in.shape[3]) {
                return nullptr;
              }
            }
            Expr scale_per_input = Call(kReshape, {rewritten(m[scale])}, NewShape({1, channels, 1, 1}));
            Expr w = Call(kMultiply, {rewritten(m[weight]), scale_per_input});
            return Call(kConv2D, {rewritten(m[data]), w}, conv_call.attrs);
          }};
}

}  // namespace

Expr FoldScaleAxis(const Expr& main, const PassEnvironment&) {
  const auto* f = main->As<FunctionNode>();
  bool batch_at_run_time = f->attrs.Has(attr::kBatchDim), sizes_vary = f->attrs.Has(attr::kShapeDims);
  return Function(f->params, RewritePatterns(f->body, {ScaleIntoLayer(), ScaleIntoNextConv(batch_at_run_time, sizes_vary)}),
                  f->attrs);
}

}  // namespace kiln::transform
