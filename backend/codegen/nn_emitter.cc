// Heavy ops as calls of the kernel library: convolution, dense, batched matmul, pooling,
// softmax and layer norm.
#include <algorithm>

#include "backend/codegen/emitter.h"
#include "ir/layout.h"
#include "runtime/error.h"

namespace kiln::backend {
namespace {

void RequireFloat32(const EmitContext& c) {
  for (const ir::TensorType& t : c.input_types) {
    runtime::Check(t.dtype == runtime::kFloat32, c.call.op->name, " on ", runtime::DTypeToString(t.dtype),
                   " is not supported by the host code generator (float32 only)");
  }
}

std::string I(int64_t v) { return std::to_string(v) + "LL"; }

}  // namespace

void EmitConv2D(EmitContext& c) {
  if (IsBlockedConv(c.call)) return EmitConv2DNCHWc(c);
  RequireFloat32(c);
  const auto& data = c.input_types[0].shape;
  const auto& weight = c.input_types[1].shape;
  const auto& out = c.output_types[0].shape;
  const auto& strides = c.call.attrs.GetInts("strides");
  const auto& dilation = c.call.attrs.GetInts("dilation");
  const auto& padding = c.call.attrs.GetInts("padding");
  std::string p = c.code.Fresh("conv");
  c.code.Line("static const kiln::kernels::Conv2DParams " + p + " = {" + I(data[0]) + ", " + I(data[1]) + ", " +
              I(data[2]) + ", " + I(data[3]) + ", " + I(weight[0]) + ", " + I(weight[2]) + ", " + I(weight[3]) + ", " +
              I(out[2]) + ", " + I(out[3]) + ", " + I(strides[0]) + ", " + I(strides[1]) + ", " + I(dilation[0]) + ", " +
              I(dilation[1]) + ", " + I(padding[0]) + ", " + I(padding[1]) + ", " + I(c.call.attrs.GetInt("groups")) + "};");
  c.code.Line("if (kiln::kernels::Conv2D(" + p + ", " + c.inputs[0] + ", " + c.inputs[1] + ", " + c.outputs[0] +
              ") != 0) return -1;");
}

// The weight is [N, K] ("NK") or packed by AlterOpLayout ("NK16n").
void EmitDense(EmitContext& c) {
  RequireFloat32(c);
  const std::string& layout = c.call.attrs.GetString("weight_layout");
  int64_t k = c.input_types[0].shape.back(), n = c.output_types[0].shape.back();
  int64_t m = c.input_types[0].NumElements() / k;
  if (layout == "NK16n") {
    c.code.Line("if (kiln::kernels::GemmPacked(" + I(m) + ", " + I(n) + ", " + I(k) + ", " + c.inputs[0] + ", " + I(k) +
                ", " + c.inputs[1] + ", " + c.outputs[0] + ", " + I(n) + ") != 0) return -1;");
    return;
  }
  runtime::Check(layout == "NK", "nn.dense with weight layout ", layout,
                 " is not supported by the host code generator (NK or NK16n)");
  c.code.Line("if (kiln::kernels::Gemm(" + I(m) + ", " + I(n) + ", " + I(k) + ", " + c.inputs[0] + ", " + I(k) + ", false, " +
              c.inputs[1] + ", " + I(k) + ", true, " + c.outputs[0] + ", " + I(n) + ") != 0) return -1;");
}

void EmitBatchMatmul(EmitContext& c) {
  RequireFloat32(c);
  const auto& a = c.input_types[0].shape;
  const auto& b = c.input_types[1].shape;
  bool ta = c.call.attrs.GetInt("transpose_a") != 0, tb = c.call.attrs.GetInt("transpose_b") != 0;
  int64_t m = ta ? a[2] : a[1], k = ta ? a[1] : a[2], n = tb ? b[1] : b[2];
  int64_t batch = c.output_types[0].shape[0];
  std::string a_stride = a[0] == 1 ? "0" : I(a[1] * a[2]);
  std::string b_stride = b[0] == 1 ? "0" : I(b[1] * b[2]);
  c.code.Line("if (kiln::kernels::BatchGemm(" + I(batch) + ", " + I(m) + ", " + I(n) + ", " + I(k) + ", " +
              c.inputs[0] + ", " + I(a[2]) + ", " + a_stride + ", " + (ta ? "true" : "false") + ", " + c.inputs[1] +
              ", " + I(b[2]) + ", " + b_stride + ", " + (tb ? "true" : "false") + ", " + c.outputs[0] + ", " + I(n) +
              ", " + I(m * n) + ") != 0) return -1;");
}

// NCHW, or NCHW[x]c with the planes of a channel block pooled together.
void EmitPool2D(EmitContext& c) {
  RequireFloat32(c);
  int64_t block = ir::ChannelBlock(c.call.attrs.GetString("layout"));
  const auto& data = c.input_types[0].shape;
  const auto& out = c.output_types[0].shape;
  const ir::Attrs& attrs = c.call.attrs;
  const auto& pool = attrs.GetInts("pool_size");
  const auto& strides = attrs.GetInts("strides");
  const auto& dilation = attrs.GetInts("dilation");
  const auto& padding = attrs.GetInts("padding");
  bool average = c.call.op->name == "nn.avg_pool2d";
  bool include_pad = average && attrs.GetInt("count_include_pad") != 0;
  std::string p = c.code.Fresh("pool");
  c.code.Line("static const kiln::kernels::Pool2DParams " + p + " = {" + I(data[0] * data[1]) + ", " + I(data[2]) + ", " +
              I(data[3]) + ", " + I(out[2]) + ", " + I(out[3]) + ", " + I(pool[0]) + ", " + I(pool[1]) + ", " +
              I(strides[0]) + ", " + I(strides[1]) + ", " + I(dilation[0]) + ", " + I(dilation[1]) + ", " +
              I(padding[0]) + ", " + I(padding[1]) + ", " + I(padding[2]) + ", " + I(padding[3]) + ", " +
              (include_pad ? "true" : "false") + "};");
  std::string kernel = std::string(average ? "AvgPool2D" : "MaxPool2D") + (block == 0 ? "(" : "NCHWc(");
  std::string block_arg = block == 0 ? "" : I(block) + ", ";
  c.code.Line("kiln::kernels::" + kernel + p + ", " + block_arg + c.inputs[0] + ", " + c.outputs[0] + ");");
}

// Sums in double per channel; in NCHW[x]c the `block` channels of a plane side by side.
void EmitGlobalAvgPool2D(EmitContext& c) {
  RequireFloat32(c);
  const auto& data = c.input_types[0].shape;
  int64_t block = std::max<int64_t>(1, ir::ChannelBlock(c.call.attrs.GetString("layout")));
  int64_t planes = data[0] * data[1], size = data[2] * data[3];
  std::string i = c.code.Fresh("plane");
  c.code.Open("for (int64_t " + i + " = 0; " + i + " < " + I(planes) + "; ++" + i + ")");
  c.code.Line("double sum[" + I(block) + "] = {};");
  c.code.Open("for (int64_t j = 0; j < " + I(size) + "; ++j)");
  c.code.Line("for (int64_t k = 0; k < " + I(block) + "; ++k) sum[k] += " + c.inputs[0] + "[(" + i + " * " + I(size) +
              " + j) * " + I(block) + " + k];");
  c.code.Close();
  c.code.Line("for (int64_t k = 0; k < " + I(block) + "; ++k) " + c.outputs[0] + "[" + i + " * " + I(block) +
              " + k] = static_cast<float>(sum[k] / " + I(size) + ");");
  c.code.Close();
}

void EmitSoftmax(EmitContext& c) {
  RequireFloat32(c);
  const auto& shape = c.input_types[0].shape;
  int axis = static_cast<int>(c.call.attrs.GetInt("axis"));
  if (axis < 0) axis += static_cast<int>(shape.size());
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  c.code.Line("kiln::kernels::Softmax(" + I(outer) + ", " + I(shape[axis]) + ", " + I(inner) + ", " + c.inputs[0] + ", " +
              c.outputs[0] + ");");
}

void EmitLayerNorm(EmitContext& c) {
  RequireFloat32(c);
  const auto& shape = c.input_types[0].shape;
  int axis = static_cast<int>(c.call.attrs.GetInt("axis"));
  if (axis < 0) axis += static_cast<int>(shape.size());
  runtime::Check(axis == static_cast<int>(shape.size()) - 1, "nn.layer_norm over axis ", axis,
                 " (not the last) is not supported by the host code generator");
  int64_t size = shape.back(), rows = c.input_types[0].NumElements() / std::max<int64_t>(size, 1);
  c.code.Line("kiln::kernels::LayerNorm(" + I(rows) + ", " + I(size) + ", " +
              FloatLiteral(c.call.attrs.GetFloat("epsilon")) + "f, " + c.inputs[0] + ", " + c.inputs[1] + ", " +
              c.inputs[2] + ", " + c.outputs[0] + ");");
}

}  // namespace kiln::backend
