// FusePointwiseDepthwise.
#include "transform/fuse_pointwise_depthwise.h"

#include <cmath>
#include <limits>

#include "kernels/kernels.h"
#include "strategy/config.h"
#include "strategy/conv2d.h"
#include "transform/pattern.h"

namespace kiln::transform {

using namespace ir;

namespace {

const OpRef kAdd("add");
const OpRef kClip("clip");
const OpRef kConv2D("nn.conv2d");
const OpRef kPointwiseDepthwise("nn.conv2d_pointwise_depthwise");
const OpRef kMultiply("multiply");
const OpRef kRelu("nn.relu");
const OpRef kSigmoid("sigmoid");

// Expansions of more input channels stay apart: their pointwise work outweighs the expanded
// tensor's trip through memory (EfficientNet-B0's expansions of 80 to 192 channels on 14x14 and
// 7x7 planes ran slower fused on a Zen 5 core; those of 16 to 64 channels, MobileNetV2's and
// EfficientNet's, are the ones that gain).
constexpr int64_t kMaxInputChannels = 64;

bool Implements(const Expr& e, const char* implementation) {
  return e->As<CallNode>()->attrs.GetString("implementation") == implementation;
}

// A blocked 1x1 convolution at stride 1 without padding from 8- or 16-channel blocks into
// 16-channel blocks (a layer of fewer than 16 plain input channels reads them unblocked).
bool IsPointwise(const Expr& e) {
  const Attrs& attrs = e->As<CallNode>()->attrs;
  return Implements(e, "conv2d.nchwc_1x1") && attrs.GetInts("strides") == std::vector<int64_t>{1, 1} &&
         attrs.GetInts("padding") == std::vector<int64_t>{0, 0, 0, 0} && attrs.GetInt("groups") == 1 &&
         attrs.GetString("out_layout") == "NCHW16c" &&
         (attrs.GetString("data_layout") == "NCHW8c" || attrs.GetString("data_layout") == "NCHW16c");
}

// One value per channel of `conv`'s blocked result: [1, E / 16, 1, 1, 16], or E values.
bool IsChannelBias(const Expr& bias, const Expr& conv) {
  const TensorType& b = bias->type().tensor();
  const TensorType& out = conv->type().tensor();
  return b.dtype == runtime::kFloat32 && out.ndim() == 5 && b.NumElements() == out.shape[1] * out.shape[4] &&
         (b.shape == std::vector<int64_t>{1, out.shape[1], 1, 1, out.shape[4]} ||
          b.shape == std::vector<int64_t>{out.shape[1] * out.shape[4]});
}

PatternRewrite PointwiseThenDepthwise(const kernels::KernelConfig& config) {
  Pattern x = Wildcard(), pointwise_weight = IsConstant(), bias = IsConstant(), depthwise_weight = IsConstant();
  Pattern pointwise = IsOp(kConv2D, {x, pointwise_weight}).Where(IsPointwise);
  Pattern biased = IsOp(kAdd, {pointwise, bias}).Commutative();
  Pattern clip = IsOp(kClip, {biased}), relu = IsOp(kRelu, {biased});
  Pattern swish = IsOp(kMultiply, {biased, IsOp(kSigmoid, {biased})}).Commutative();
  Pattern depthwise = IsOp(kConv2D, {clip | relu | swish, depthwise_weight}).Where([](const Expr& e) {
    return Implements(e, "conv2d.nchwc_depthwise");
  });
  return {depthwise, [=](const Match& m, const Rewritten& rewritten) -> Expr {
            if (!IsChannelBias(m[bias], m[pointwise])) return nullptr;
            const CallNode& dw = *m.root()->As<CallNode>();
            if (dw.attrs.GetString("data_layout") != "NCHW16c" || dw.attrs.GetString("out_layout") != "NCHW16c") {
              return nullptr;
            }
            Attrs attrs;
            attrs.Set("strides", dw.attrs.GetInts("strides"));
            attrs.Set("padding", dw.attrs.GetInts("padding"));
            attrs.Set("dilation", dw.attrs.GetInts("dilation"));
            attrs.Set("data_layout", m[pointwise]->As<CallNode>()->attrs.GetString("data_layout"));
            attrs.Set("activation", std::string(m[swish] != nullptr ? "swish" : "clip"));
            if (m[clip] != nullptr) {
              attrs.Set("a_min", m[clip]->As<CallNode>()->attrs.GetFloat("a_min"));
              attrs.Set("a_max", m[clip]->As<CallNode>()->attrs.GetFloat("a_max"));
            } else {
              attrs.Set("a_min", 0.0);
              attrs.Set("a_max", std::numeric_limits<double>::infinity());
            }
            Expr fused = Call(kPointwiseDepthwise,
                              {rewritten(m[x]), rewritten(m[pointwise_weight]), rewritten(m[bias]),
                               rewritten(m[depthwise_weight])},
                              attrs);
            const CallNode& call = *fused->As<CallNode>();
            if (call.type().tensor() != dw.type().tensor()) return nullptr;
            const kernels::Conv2DPointwiseDepthwiseParams params = strategy::Conv2DPointwiseDepthwiseKernelParams(call);
            if (params.in_channels > kMaxInputChannels || !kernels::PointwiseDepthwiseComputes(params, config)) {
              return nullptr;
            }
            return fused;
          }};
}

}  // namespace

Expr FusePointwiseDepthwise(const Expr& main, const PassEnvironment& environment) {
  const auto* f = main->As<FunctionNode>();
  const PatternRewrite fuse = PointwiseThenDepthwise(strategy::ConfigFor(environment.target));
  Expr body = RewritePatterns(f->body, {fuse});
  return body == f->body ? main : Function(f->params, body, f->attrs);
}

}  // namespace kiln::transform
