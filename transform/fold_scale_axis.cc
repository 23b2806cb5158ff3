// FoldScaleAxis.
#include "transform/fold_scale_axis.h"

#include <unordered_map>

#include "runtime/error.h"

namespace kiln::transform {

using namespace ir;

namespace {

// The ops this pass makes.
const OpRef kMultiply("multiply");
const OpRef kReshape("reshape");

Attrs NewShape(std::vector<int64_t> shape) {
  Attrs attrs;
  attrs.Set("newshape", std::move(shape));
  return attrs;
}

// The channel count when `scale` is a constant that, broadcast against `out` (a layer result
// with channels on `axis`), varies only along that axis; otherwise -1.
int64_t ChannelScale(const Expr& scale, const TensorType& out, int axis) {
  if (scale->As<ConstantNode>() == nullptr) return -1;
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
bool PlainLayouts(const CallNode& layer) {
  if (layer.op->name == "nn.dense") return layer.attrs.GetString("weight_layout") == "NK";
  const std::string& out = layer.attrs.GetString("out_layout");
  return layer.attrs.GetString("data_layout") == "NCHW" && layer.attrs.GetString("kernel_layout") == "OIHW" &&
         (out.empty() || out == "NCHW");
}

}  // namespace

Expr FoldScaleAxis(const Expr& main, const PassEnvironment&) {
  const auto* f = main->As<FunctionNode>();
  std::unordered_map<const ExprNode*, int> uses;
  for (const Expr& e : PostOrder(f->body)) {
    for (const Expr& input : Inputs(e)) ++uses[input.get()];
  }
  ++uses[f->body.get()];
  Expr body = Rewrite(f->body, [&](const Expr& original, const std::vector<Expr>& inputs) -> Expr {
    const auto* mul = original->As<CallNode>();
    if (mul == nullptr || mul->op == nullptr || mul->op->name != "multiply") return WithInputs(original, inputs);
    // The layer result may be the first or the second operand.
    for (int side = 0; side < 2; ++side) {
      const Expr& layer_out_original = mul->args[side];
      const Expr& layer_out = inputs[side];
      const Expr& scale = inputs[1 - side];
      if (uses[layer_out_original.get()] != 1) continue;
      const auto* outer = layer_out->As<CallNode>();
      if (outer == nullptr || outer->op == nullptr) continue;
      const CallNode* layer = outer;
      const CallNode* bias_add = nullptr;
      if (outer->op->name == "nn.bias_add") {
        // The layer under the bias must have no other use either (checked on the original).
        const auto* original_bias = layer_out_original->As<CallNode>();
        if (original_bias == nullptr || uses[original_bias->args[0].get()] != 1) continue;
        bias_add = outer;
        layer = outer->args[0]->As<CallNode>();
        if (layer == nullptr || layer->op == nullptr) continue;
      }
      bool conv = layer->op->name == "nn.conv2d";
      if (!conv && layer->op->name != "nn.dense") continue;
      if (!PlainLayouts(*layer)) continue;  // the weight's output channels must come first, unblocked
      const TensorType& out = layer_out->type().tensor();
      if (original->type().tensor() != out) continue;  // the scale must not broadcast the result
      int axis = conv ? 1 : out.ndim() - 1;
      if (bias_add != nullptr && bias_add->attrs.GetInt("axis") != axis &&
          bias_add->attrs.GetInt("axis") != axis - out.ndim()) {
        continue;
      }
      int64_t channels = ChannelScale(scale, out, axis);
      if (channels < 0) continue;
      const Expr& weight = layer->args[1];
      std::vector<int64_t> weight_scale_shape(weight->type().tensor().ndim(), 1);
      weight_scale_shape[0] = channels;  // OIHW and [N, K] both have output channels first
      Expr w = Call(kMultiply, {weight, Call(kReshape, {scale}, NewShape(weight_scale_shape))});
      Expr scaled = Call(*layer->op, {layer->args[0], w}, layer->attrs);
      if (bias_add == nullptr) return scaled;
      Expr b = Call(kMultiply, {bias_add->args[1], Call(kReshape, {scale}, NewShape({channels}))});
      return Call(*bias_add->op, {scaled, b}, bias_add->attrs);
    }
    return WithInputs(original, inputs);
  });
  return Function(f->params, body, f->attrs);
}

}  // namespace kiln::transform
