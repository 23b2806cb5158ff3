// nn.conv2d as a kernel call: the plain convolution for NCHW / OIHW, and for blocked layouts
// (NCHW[x]c data, packed OIHW{i}i{o}o weights) the blocked direct convolution
// (kernels/conv/conv2d_nchwc.cc), which applies the elementwise ops following it (bias, scale,
// residual add, relu, clip, x * sigmoid(x)) as its fused epilogue.
#include "backend/codegen/lowering.h"
#include "ir/layout.h"
#include "runtime/error.h"
#include "target/kernel_choice.h"

namespace kiln::backend {
namespace {

using ir::Layout;
using ir::TensorType;
using Step = kernels::EpilogueStep;

bool IsBlockedConv(const ir::CallNode& call) {
  const ir::Attrs& attrs = call.attrs;
  return target::ConvKernelFor(attrs.GetString("data_layout"), attrs.GetString("kernel_layout"),
                               attrs.GetString("out_layout")) == target::ConvKernel::kBlocked;
}

// The blocks of a convolution the blocked kernel computes, read from its layouts.
struct ConvBlocks {
  int64_t in_block = 0;  // 1 for NCHW data
  int64_t out_block = 0;
  bool depthwise = false;
};

// The blocks of `call` when it is a convolution in a form the blocked kernel computes (see
// kernels.h); `why` says what does not fit otherwise.
bool BlockedConvForm(const ir::CallNode& call, const std::vector<TensorType>& inputs, ConvBlocks* blocks,
                     std::string* why) {
  const ir::Attrs& attrs = call.attrs;
  std::string out_layout = attrs.GetString("out_layout");
  if (out_layout.empty()) out_layout = attrs.GetString("data_layout");
  int64_t in_block = ir::ChannelBlock(attrs.GetString("data_layout"));
  int64_t out_block = ir::ChannelBlock(out_layout);
  int64_t channels = Layout::Parse(attrs.GetString("data_layout")).ToPrimal(inputs[0].shape)[1];
  int64_t groups = attrs.GetInt("groups");
  blocks->in_block = in_block == 0 ? 1 : in_block;
  blocks->out_block = out_block;
  blocks->depthwise = groups > 1;
  std::string kernel_layout =
      "OIHW" + std::to_string(blocks->depthwise ? 1 : blocks->in_block) + "i" + std::to_string(out_block) + "o";
  if (out_block != 8 && out_block != 16) {
    *why = "the output block must be 8 or 16";
  } else if (attrs.GetString("kernel_layout") != kernel_layout) {
    *why = "the kernel layout must be " + kernel_layout;
  } else if (blocks->depthwise && (groups != channels || blocks->in_block != out_block)) {
    *why = "grouped convolutions must be depthwise with equal data and output blocks";
  } else {
    return true;
  }
  return false;
}

bool IsFloat32(const TensorType& t) { return t.dtype == runtime::kFloat32; }

// How the kernel reads the other operand of a binary epilogue op, or nothing when it cannot: a
// tensor of the output's shape, a single value, or one value per channel (right-aligned to the
// output, [1, O / ob, 1, 1, ob]).
std::optional<Step::Operand> OperandKind(const TensorType& operand, const TensorType& out) {
  if (!IsFloat32(operand) || operand.ndim() > 5) return std::nullopt;
  if (operand.shape == out.shape) return Step::kTensor;
  if (operand.NumElements() == 1) return Step::kScalar;
  std::vector<int64_t> channel = {1, out.shape[1], 1, 1, out.shape[4]};
  for (int d = 0; d < operand.ndim(); ++d) {
    if (operand.shape[d] != channel[5 - operand.ndim() + d]) return std::nullopt;
  }
  if (operand.ndim() < 4) return std::nullopt;
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

KernelCall PlanConv2DNCHWc(const KernelOperands& o) {
  RequireFloat32(o);
  ConvBlocks blocks;
  std::string why;
  const ir::Attrs& attrs = o.call.attrs;
  runtime::Check(BlockedConvForm(o.call, o.input_types, &blocks, &why), "nn.conv2d with data layout ",
                 attrs.GetString("data_layout"), ", kernel layout ", attrs.GetString("kernel_layout"),
                 " and output layout ", attrs.GetString("out_layout"),
                 " is not supported by the host code generator: ", why);
  std::vector<int64_t> data = Layout::Parse(attrs.GetString("data_layout")).ToPrimal(o.input_types[0].shape);
  std::vector<int64_t> weight = Layout::Parse(attrs.GetString("kernel_layout")).ToPrimal(o.input_types[1].shape);
  const TensorType& out = o.output_types[0];
  KernelCall k;
  k.kernel = "Conv2DNCHWc";
  k.params_type = "Conv2DNCHWcParams";
  k.params = {Int("batch", data[0]),
              Int("in_channels", data[1]),
              Int("in_height", data[2]),
              Int("in_width", data[3]),
              Int("in_block", blocks.in_block),
              Int("out_channels", weight[0]),
              Int("out_block", blocks.out_block),
              Int("kernel_height", weight[2]),
              Int("kernel_width", weight[3]),
              Int("out_height", out.shape[2]),
              Int("out_width", out.shape[3]),
              Flag("depthwise", blocks.depthwise)};
  for (KernelArg& field : WindowParams(attrs, /*all_pads=*/false)) k.params.push_back(std::move(field));
  k.args = {Buffer("data", o.inputs[0]), Buffer("weight", o.inputs[1]), Buffer("out", o.outputs[0])};
  k.takes_epilogue = true;
  for (const FusedOp& op : o.epilogue) {
    EpilogueOp step{*StepOp(op), op.operand ? *OperandKind(op.operand_type, out) : Step::kNone, op.operand};
    if (step.op == Step::kClip) {
      step.lo = static_cast<float>(op.call->attrs.GetFloat("a_min"));
      step.hi = static_cast<float>(op.call->attrs.GetFloat("a_max"));
    }
    k.epilogue.push_back(step);
  }
  return k;
}

}  // namespace

size_t Conv2DEpilogueLength(const ir::CallNode& anchor, const std::vector<TensorType>& anchor_inputs,
                            const std::vector<FusedOp>& chain) {
  ConvBlocks blocks;
  std::string why;
  if (!IsBlockedConv(anchor) || !BlockedConvForm(anchor, anchor_inputs, &blocks, &why)) return 0;
  const TensorType& out = anchor.type().tensor();
  size_t length = 0;
  for (const FusedOp& op : chain) {
    if (!StepOp(op) || !op.call->type().is_tensor() || op.call->type().tensor() != out) break;
    if (op.operand && !OperandKind(op.operand_type, out)) break;
    ++length;
  }
  return length;
}

KernelCall PlanConv2D(const KernelOperands& o) {
  if (IsBlockedConv(o.call)) return PlanConv2DNCHWc(o);
  RequireFloat32(o);
  const auto& data = o.input_types[0].shape;
  const auto& weight = o.input_types[1].shape;
  const auto& out = o.output_types[0].shape;
  const ir::Attrs& attrs = o.call.attrs;
  KernelCall k;
  k.kernel = "Conv2D";
  k.params_type = "Conv2DParams";
  k.params = {Int("batch", data[0]),          Int("in_channels", data[1]),
              Int("in_height", data[2]),      Int("in_width", data[3]),
              Int("out_channels", weight[0]), Int("kernel_height", weight[2]),
              Int("kernel_width", weight[3]), Int("out_height", out[2]),
              Int("out_width", out[3]),       Int("groups", attrs.GetInt("groups"))};
  for (KernelArg& field : WindowParams(attrs, /*all_pads=*/false)) k.params.push_back(std::move(field));
  k.args = {Buffer("data", o.inputs[0]), Buffer("weight", o.inputs[1]), Buffer("out", o.outputs[0])};
  return k;
}

}  // namespace kiln::backend
