// Blocked layouts in generated code: nn.conv2d in NCHW[x]c as a call of the blocked direct
// convolution (kernels/conv2d_nchwc.cc) that applies the elementwise ops following it in the
// primitive function (bias, scale, residual add, relu, clip, x * sigmoid(x)) as its fused
// epilogue, and layout_transform as loops over the destination.
#include "backend/codegen/emitter.h"
#include "ir/layout.h"
#include "runtime/error.h"

namespace kiln::backend {
namespace {

using ir::Layout;
using ir::TensorType;

std::string I(int64_t v) { return std::to_string(v) + "LL"; }

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
  std::string kernel_layout = "OIHW" + std::to_string(blocks->depthwise ? 1 : blocks->in_block) + "i" +
                              std::to_string(out_block) + "o";
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

// How the kernel reads the other operand of a binary epilogue op (EpilogueStep::Operand), or
// null when it cannot: a tensor of the output's shape, a single value, or one value per channel
// (right-aligned to the output, [1, O / ob, 1, 1, ob]).
const char* OperandKind(const TensorType& operand, const TensorType& out) {
  if (!IsFloat32(operand) || operand.ndim() > 5) return nullptr;
  if (operand.shape == out.shape) return "kTensor";
  if (operand.NumElements() == 1) return "kScalar";
  std::vector<int64_t> channel = {1, out.shape[1], 1, 1, out.shape[4]};
  for (int d = 0; d < operand.ndim(); ++d) {
    if (operand.shape[d] != channel[5 - operand.ndim() + d]) return nullptr;
  }
  return operand.ndim() >= 4 ? "kChannel" : nullptr;
}

// The kernel's EpilogueStep::Op for `op`, or null when the kernel cannot apply it.
const char* StepOp(const FusedOp& op) {
  if (op.swish) return "kSwish";
  const Lowering* lowering = FindLowering(*op.call->op);
  const char* step = lowering != nullptr ? lowering->epilogue_step : nullptr;
  if (step != nullptr && op.operand_first && std::string(step) == "kSubtract") return "kReverseSubtract";
  return step;
}

}  // namespace

bool IsBlockedConv(const ir::CallNode& call) {
  const std::string& out_layout = call.attrs.GetString("out_layout");
  return call.attrs.GetString("data_layout") != "NCHW" || call.attrs.GetString("kernel_layout") != "OIHW" ||
         (!out_layout.empty() && out_layout != "NCHW");
}

size_t FusedEpilogueLength(const ir::CallNode& anchor, const std::vector<TensorType>& anchor_inputs,
                           const std::vector<FusedOp>& chain) {
  ConvBlocks blocks;
  std::string why;
  if (anchor.op->name != "nn.conv2d" || !IsBlockedConv(anchor)) return 0;
  if (!BlockedConvForm(anchor, anchor_inputs, &blocks, &why)) return 0;
  const TensorType& out = anchor.type().tensor();
  size_t length = 0;
  for (const FusedOp& op : chain) {
    if (StepOp(op) == nullptr || !op.call->type().is_tensor() || op.call->type().tensor() != out) break;
    if (!op.operand.empty() && OperandKind(op.operand_type, out) == nullptr) break;
    ++length;
  }
  return length;
}

void EmitConv2DNCHWc(EmitContext& c) {
  for (const TensorType& t : c.input_types) {
    runtime::Check(IsFloat32(t), "nn.conv2d on ", runtime::DTypeToString(t.dtype),
                   " is not supported by the host code generator (float32 only)");
  }
  ConvBlocks blocks;
  std::string why;
  const ir::Attrs& attrs = c.call.attrs;
  runtime::Check(BlockedConvForm(c.call, c.input_types, &blocks, &why), "nn.conv2d with data layout ",
                 attrs.GetString("data_layout"), ", kernel layout ", attrs.GetString("kernel_layout"),
                 " and output layout ", attrs.GetString("out_layout"),
                 " is not supported by the host code generator: ", why);
  std::vector<int64_t> data = Layout::Parse(attrs.GetString("data_layout")).ToPrimal(c.input_types[0].shape);
  std::vector<int64_t> weight = Layout::Parse(attrs.GetString("kernel_layout")).ToPrimal(c.input_types[1].shape);
  const TensorType& out = c.output_types[0];
  const auto& strides = attrs.GetInts("strides");
  const auto& dilation = attrs.GetInts("dilation");
  const auto& padding = attrs.GetInts("padding");
  std::string p = c.code.Fresh("conv");
  c.code.Line("static const kiln::kernels::Conv2DNCHWcParams " + p + " = {" + I(data[0]) + ", " + I(data[1]) + ", " +
              I(data[2]) + ", " + I(data[3]) + ", " + I(blocks.in_block) + ", " + I(weight[0]) + ", " +
              I(blocks.out_block) + ", " + I(weight[2]) + ", " + I(weight[3]) + ", " + I(out.shape[2]) + ", " +
              I(out.shape[3]) + ", " + I(strides[0]) + ", " + I(strides[1]) + ", " + I(dilation[0]) + ", " +
              I(dilation[1]) + ", " + I(padding[0]) + ", " + I(padding[1]) + ", " +
              (blocks.depthwise ? "true" : "false") + "};");
  std::string steps = "nullptr";
  if (!c.epilogue.empty()) {
    steps = p + "_steps";
    std::string list;
    for (const FusedOp& op : c.epilogue) {
      std::string kind = op.operand.empty() ? "kNone" : OperandKind(op.operand_type, out);
      std::string data_pointer = op.operand.empty() ? "nullptr" : op.operand;
      std::string lo = "0.0f", hi = "0.0f";
      if (std::string(StepOp(op)) == "kClip") {
        lo = "static_cast<float>(" + FloatLiteral(op.call->attrs.GetFloat("a_min")) + ")";
        hi = "static_cast<float>(" + FloatLiteral(op.call->attrs.GetFloat("a_max")) + ")";
      }
      list += std::string(list.empty() ? "" : ", ") + "{kiln::kernels::EpilogueStep::" + StepOp(op) +
              ", kiln::kernels::EpilogueStep::" + kind + ", " + data_pointer + ", " + lo + ", " + hi + "}";
    }
    c.code.Line("const kiln::kernels::EpilogueStep " + steps + "[] = {" + list + "};");
  }
  c.code.Line("if (kiln::kernels::Conv2DNCHWc(" + p + ", " + c.inputs[0] + ", " + c.inputs[1] + ", " + c.outputs[0] +
              ", " + steps + ", " + std::to_string(c.epilogue.size()) + ") != 0) return -1;");
}

// Loops over the destination; each source index from the primal coordinates.
void EmitLayoutTransform(EmitContext& c) {
  Layout src = Layout::Parse(c.call.attrs.GetString("src_layout"));
  Layout dst = Layout::Parse(c.call.attrs.GetString("dst_layout"));
  const auto& dst_shape = c.output_types[0].shape;
  std::vector<int64_t> src_strides = Strides(c.input_types[0].shape);
  // The primal coordinate of each axis letter, in destination loop indices.
  auto coordinate = [&](char letter) {
    std::string text;
    for (int d = 0; d < dst.ndim(); ++d) {
      const Layout::Axis& a = dst.axes()[d];
      if (a.name == letter) {
        int64_t block = dst.BlockOf(letter);
        text = block == 0 ? "i" + std::to_string(d) : "i" + std::to_string(d) + " * " + I(block);
      }
    }
    for (int d = 0; d < dst.ndim(); ++d) {
      const Layout::Axis& a = dst.axes()[d];
      if (a.factor != 0 && a.name == static_cast<char>(letter - 'A' + 'a')) text = "(" + text + " + i" + std::to_string(d) + ")";
    }
    return text;
  };
  std::string index;
  for (int d = 0; d < src.ndim(); ++d) {
    const Layout::Axis& a = src.axes()[d];
    char letter = a.factor != 0 ? static_cast<char>(a.name - 'a' + 'A') : a.name;
    int64_t block = a.factor != 0 ? a.factor : src.BlockOf(letter);
    std::string term = coordinate(letter);
    if (a.factor != 0) term = "(" + term + " % " + I(block) + ")";
    else if (block != 0) term = "(" + term + " / " + I(block) + ")";
    index += (index.empty() ? "" : " + ") + term + " * " + I(src_strides[d]);
  }
  std::string counter = c.code.Fresh("o");
  c.code.Line("int64_t " + counter + " = 0;");
  for (size_t d = 0; d < dst_shape.size(); ++d) {
    std::string i = "i" + std::to_string(d);
    c.code.Open("for (int64_t " + i + " = 0; " + i + " < " + I(dst_shape[d]) + "; ++" + i + ")");
  }
  c.code.Line(c.outputs[0] + "[" + counter + "++] = " + c.inputs[0] + "[" + index + "];");
  for (size_t d = 0; d < dst_shape.size(); ++d) c.code.Close();
}

}  // namespace kiln::backend
