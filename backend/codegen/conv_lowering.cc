// nn.conv2d as a kernel call of the implementation the kernel selection names for it
// (strategy/conv2d.h): the plain convolution for NCHW / OIHW (depthwise ones with a fused
// epilogue, kernels/conv/depthwise_conv2d.cc), and for blocked layouts (NCHW[x]c
// data, packed OIHW{i}i{o}o weights) the blocked direct convolution
// (kernels/conv/conv2d_nchwc.cc), which applies the elementwise ops following it (bias, scale,
// residual add, relu, clip, x * sigmoid(x), hard swish, sigmoid) as its fused epilogue.
// nn.conv2d_winograd (written by AlterOpLayout for conv2d.nchwc_winograd) as a call of the Winograd convolution
// (kernels/conv/conv2d_winograd.cc), with the same epilogue; nn.conv2d_pointwise_depthwise
// (FusePointwiseDepthwise's) as a call of Conv2DPointwiseDepthwise, likewise. nn.conv2d_transpose and
// nn.conv3d_transpose as calls of the transposed convolution (kernels/conv/conv_transpose.cc).
#include <algorithm>
#include <array>

#include "backend/codegen/lowering.h"
#include "kernels/conv/winograd.h"
#include "runtime/error.h"
#include "strategy/conv2d.h"

namespace kiln::backend {
namespace {

using ir::TensorType;
using Step = kernels::EpilogueStep;

const ir::OpRef kBiasAdd("nn.bias_add");

bool IsFloat32(const TensorType& t) { return t.dtype == runtime::kFloat32; }

// How the kernel reads the other operand of a binary epilogue op, or nothing when it cannot: a
// tensor of the output's shape, a single value, or one value per channel (right-aligned to the
// output: [1, O / ob, 1, 1, ob] blocked, [1, O, 1, 1] plain, leading ones optional; with channels
// last, a dense layer's output features, [N] or [1, ..., N]).
std::optional<Step::Operand> OperandKind(const TensorType& operand, const TensorType& out, bool channels_last) {
  if (!IsFloat32(operand) || operand.ndim() > out.ndim()) return std::nullopt;
  if (operand.shape == out.shape) return Step::kTensor;
  if (operand.NumElements() == 1) return Step::kScalar;
  std::vector<int64_t> channel(out.ndim(), 1);
  if (channels_last) {
    channel.back() = out.shape.back();
  } else {
    channel[1] = out.shape[1];
    if (out.ndim() == 5) channel[4] = out.shape[4];
  }
  int64_t first = out.ndim() - operand.ndim();
  if (!channels_last && first > 1) return std::nullopt;  // the channel axis must be there
  for (int d = 0; d < operand.ndim(); ++d) {
    if (operand.shape[d] != channel[first + d]) return std::nullopt;
  }
  return Step::kChannel;
}

// The kernel's epilogue step for `op`, or nothing when the kernel cannot apply it.
std::optional<Step::Op> StepOp(const FusedOp& op) {
  if (op.swish) return Step::kSwish;
  const Lowering* lowering = FindLowering(*op.call->op);
  std::optional<Step::Op> step = lowering != nullptr ? lowering->epilogue_step : std::nullopt;
  if (step == Step::kSubtract && op.operand_first) return Step::kReverseSubtract;
  return step;
}

bool Blocked(const strategy::Conv2DImplementation& implementation) {
  return implementation.kernel == strategy::Conv2DKernel::kConv2DNCHWc ||
         implementation.kernel == strategy::Conv2DKernel::kConv2DNCHWcDepthwise;
}

// The kernel's step for epilogue op `op` on the kernel's output `out`, or nothing when the
// kernel cannot apply it: an op of the output's type whose other operand it reads (OperandKind);
// nn.bias_add along the channels (axis 1 of a plain convolution's output, the last of a dense
// layer's) as an add of one value per channel.
std::optional<EpilogueOp> EpilogueStepFor(const FusedOp& op, const TensorType& out, bool channels_last) {
  if (!op.call->type().is_tensor() || op.call->type().tensor() != out) return std::nullopt;
  if (kBiasAdd.Is(op.call->op)) {
    int64_t axis = op.call->attrs.GetInt("axis"), rank = out.ndim();
    int64_t channel_axis = channels_last ? rank - 1 : 1;
    bool along_channels = (channels_last || rank == 4) && (axis == channel_axis || axis == channel_axis - rank) &&
                          IsFloat32(op.operand_type) &&
                          op.operand_type.shape == std::vector<int64_t>{out.shape[channel_axis]};
    if (!along_channels) return std::nullopt;
    return EpilogueOp{Step::kAdd, Step::kChannel, op.operand};
  }
  std::optional<Step::Op> kind = StepOp(op);
  if (!kind) return std::nullopt;
  EpilogueOp step{*kind, Step::kNone, op.operand};
  if (op.operand) {
    std::optional<Step::Operand> operand = OperandKind(op.operand_type, out, channels_last);
    if (!operand) return std::nullopt;
    step.operand = *operand;
  }
  if (step.op == Step::kClip) {
    step.lo = static_cast<float>(op.call->attrs.GetFloat("a_min"));
    step.hi = static_cast<float>(op.call->attrs.GetFloat("a_max"));
  }
  return step;
}

}  // namespace

std::vector<EpilogueOp> EpilogueOf(const KernelOperands& o, bool channels_last) {
  std::vector<EpilogueOp> steps;
  for (const FusedOp& op : o.epilogue) steps.push_back(*EpilogueStepFor(op, o.output_types[0], channels_last));
  return steps;
}

size_t EpilogueChainLength(const ir::CallNode& anchor, const std::vector<FusedOp>& chain, bool channels_last) {
  const TensorType& out = anchor.type().tensor();
  size_t length = 0;
  while (length < chain.size() && EpilogueStepFor(chain[length], out, channels_last)) ++length;
  return length;
}

namespace {

// The instance of Conv2DNCHWc that computes `p` on a target of `config`.
std::string Conv2DNCHWcKernel(const kernels::Conv2DNCHWcParams& p, const kernels::KernelConfig& config) {
  kernels::Conv2DNCHWcVariant v = kernels::Conv2DNCHWcVariantOf(p, config);
  return "Conv2DNCHWc<" + std::to_string(v.out_block) + ", " + std::to_string(v.local_group) + ", " +
         std::to_string(v.in_block) + ", " + std::to_string(v.stride) + ", " + std::to_string(v.lanes) + ">";
}

KernelCall PlanConv2DNCHWc(const KernelOperands& o, const strategy::Conv2DImplementation& implementation) {
  KernelCall k;
  kernels::Conv2DNCHWcParams params = strategy::Conv2DNCHWcKernelParams(o.call, implementation, o.config);
  k.kernel = Conv2DNCHWcKernel(params, o.config);
  k.implementation = implementation.name;
  k.params = TypedParams("Conv2DNCHWcParams", params);
  k.args = {Buffer("data", o.inputs[0]), Buffer("weight", o.inputs[1]), Buffer("out", o.outputs[0])};
  k.takes_epilogue = true;
  k.epilogue = EpilogueOf(o, false);
  return k;
}

}  // namespace

// Inputs other than float32: none (planning says why).
// Every convolution kernel applies its fused epilogue: the blocked ones on their tiles, the plain
// one in its matrix product's tiles, the plain depthwise one on each plane, the transposed one on
// each output row.
size_t Conv2DEpilogueLength(const ir::CallNode& anchor, const std::vector<TensorType>& anchor_inputs,
                            const std::vector<FusedOp>& chain) {
  return AllFloat32(anchor_inputs) ? EpilogueChainLength(anchor, chain, false) : 0;
}

// A transposed convolution's output is plain NCHW (rank 4) or NCDHW (rank 5): only the first is
// fused, since a rank-5 result reads as blocked to OperandKind.
size_t ConvTransposeEpilogueLength(const ir::CallNode& anchor, const std::vector<TensorType>& anchor_inputs,
                                   const std::vector<FusedOp>& chain) {
  return anchor.type().tensor().ndim() == 4 ? Conv2DEpilogueLength(anchor, anchor_inputs, chain) : 0;
}

KernelCall PlanConv2DWinograd(const KernelOperands& o) {
  RequireFloat32(o);
  KernelCall k;
  k.kernel = "Conv2DWinograd";
  k.implementation = strategy::kConv2DWinogradName;
  kernels::Conv2DWinogradParams params = strategy::Conv2DWinogradKernelParams(o.call);
  k.params = TypedParams("Conv2DWinogradParams", params);
  k.inner_kernel = Conv2DNCHWcKernel(kernels::Conv2DWinogradProduct(params), o.config);
  k.args = {Buffer("data", o.inputs[0]), Buffer("weight", o.inputs[1]), Buffer("out", o.outputs[0])};
  k.takes_epilogue = true;
  k.epilogue = EpilogueOf(o, false);
  return k;
}

KernelCall PlanConv2DPointwiseDepthwise(const KernelOperands& o) {
  RequireFloat32(o);
  KernelCall k;
  kernels::Conv2DPointwiseDepthwiseParams params = strategy::Conv2DPointwiseDepthwiseKernelParams(o.call);
  runtime::Check(kernels::PointwiseDepthwiseComputes(params, o.config), o.call.op->name,
                 ": the target does not compute this form (it needs AVX-512, an input block of 8 or 16, expanded "
                 "channels in blocks of 16, a depthwise window 3 or 5 wide at stride 1 or 2 along the row and no "
                 "dilation there)");
  k.kernel = "Conv2DPointwiseDepthwise<" + std::to_string(params.in_block) + ">";
  k.implementation = strategy::kConv2DPointwiseDepthwiseName;
  k.params = TypedParams("Conv2DPointwiseDepthwiseParams", params);
  k.args = {Buffer("data", o.inputs[0]), Buffer("pointwise_weight", o.inputs[1]),
            Buffer("pointwise_bias", o.inputs[2]), Buffer("depthwise_weight", o.inputs[3]),
            Buffer("out", o.outputs[0])};
  k.takes_epilogue = true;
  k.epilogue = EpilogueOf(o, false);
  return k;
}

KernelCall PlanConv2D(const KernelOperands& o) {
  RequireFloat32(o);
  const strategy::Conv2DImplementation& implementation = strategy::Conv2DImplementationOf(o.call);
  if (Blocked(implementation)) return PlanConv2DNCHWc(o, implementation);
  KernelCall k;
  bool depthwise = implementation.kernel == strategy::Conv2DKernel::kConv2DDepthwise;
  k.kernel = depthwise ? "DepthwiseConv2D" : "Conv2D";
  k.implementation = implementation.name;
  k.params = TypedParams("Conv2DParams", strategy::Conv2DKernelParams(o.call, implementation));
  k.args = {Buffer("data", o.inputs[0]), Buffer("weight", o.inputs[1]), Buffer("out", o.outputs[0])};
  k.takes_epilogue = true;
  k.epilogue = EpilogueOf(o, false);
  return k;
}

// nn.conv2d_transpose and nn.conv3d_transpose: 2-D as 3-D with a depth of 1.
KernelCall PlanConvTranspose(const KernelOperands& o) {
  RequireFloat32(o);
  const auto& data = o.input_types[0].shape;    // [N, C, (D,) H, W]
  const auto& weight = o.input_types[1].shape;  // [C, O / groups, (KD,) KH, KW]
  const auto& out = o.output_types[0].shape;    // [N, O, (OD,) OH, OW]
  const auto& strides = o.call.attrs.GetInts("strides");
  const auto& dilation = o.call.attrs.GetInts("dilation");
  const auto& padding = o.call.attrs.GetInts("padding");  // begins, then ends
  const size_t spatial = data.size() - 2;
  // Per axis (depth, height, width); 2-D data has a depth of 1.
  auto three = [&](const std::vector<int64_t>& v, size_t first, int64_t depth) {
    std::array<int64_t, 3> a{depth, depth, depth};
    std::copy(v.begin() + first, v.begin() + first + spatial, a.end() - spatial);
    return a;
  };
  auto in = three(data, 2, 1), extent = three(out, 2, 1), window = three(weight, 2, 1);
  auto stride = three(strides, 0, 1), dilate = three(dilation, 0, 1), pad = three(padding, 0, 0);
  kernels::ConvTransposeParams params{data[0],   data[1],   out[1],    o.call.attrs.GetInt("groups"),
                                      in[0],     in[1],     in[2],     extent[0],
                                      extent[1], extent[2], window[0], window[1],
                                      window[2], stride[0], stride[1], stride[2],
                                      dilate[0], dilate[1], dilate[2], pad[0],
                                      pad[1],    pad[2]};
  KernelCall k;
  k.kernel = "ConvTranspose";
  k.implementation = spatial == 2 ? "conv2d_transpose.gemm_scatter" : "conv3d_transpose.gemm_scatter";
  k.params = TypedParams("ConvTransposeParams", params);
  k.args = {Buffer("data", o.inputs[0]), Buffer("weight", o.inputs[1]), Buffer("out", o.outputs[0])};
  k.takes_epilogue = true;
  k.epilogue = EpilogueOf(o, false);
  return k;
}

}  // namespace kiln::backend
