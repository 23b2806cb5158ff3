// Dense, batched matmul, pooling, softmax, layer norm, topk, unique, non-maximum suppression, det
// and grid sampling as calls of the kernel library: which kernel, and its parameters from the
// call's shapes and attributes.
#include <algorithm>

#include "backend/codegen/lowering.h"
#include "ir/layout.h"
#include "runtime/error.h"
#include "target/kernel_choice.h"

namespace kiln::backend {
namespace {

const ir::OpRef kAvgPool2D("nn.avg_pool2d");

}  // namespace

void RequireFloat32(const KernelOperands& o) {
  for (const ir::TensorType& t : o.input_types) {
    runtime::Check(t.dtype == runtime::kFloat32, o.call.op->name, " on ", runtime::DTypeToString(t.dtype),
                   " is not supported by the host code generator (float32 only)");
  }
}

std::vector<KernelArg> WindowParams(const ir::Attrs& attrs, bool all_pads) {
  const auto& strides = attrs.GetInts("strides");
  const auto& dilation = attrs.GetInts("dilation");
  const auto& padding = attrs.GetInts("padding");
  std::vector<KernelArg> params = {Int("stride_h", strides[0]),    Int("stride_w", strides[1]),
                                   Int("dilation_h", dilation[0]), Int("dilation_w", dilation[1]),
                                   Int("pad_top", padding[0]),     Int("pad_left", padding[1])};
  if (all_pads) {
    params.push_back(Int("pad_bottom", padding[2]));
    params.push_back(Int("pad_right", padding[3]));
  }
  return params;
}

// The weight is [N, K] ("NK") or packed by AlterOpLayout ("NK16n").
KernelCall PlanDense(const KernelOperands& o) {
  RequireFloat32(o);
  const std::string& layout = o.call.attrs.GetString("weight_layout");
  int64_t k = o.input_types[0].shape.back(), n = o.output_types[0].shape.back();
  int64_t m = o.input_types[0].NumElements() / k;
  target::DenseKernel kernel = target::DenseKernelFor(layout);
  KernelCall call;
  if (kernel == target::DenseKernel::kGemmPacked) {
    call.kernel = "GemmPacked";
    call.args = {Int("m", m),
                 Int("n", n),
                 Int("k", k),
                 Buffer("a", o.inputs[0]),
                 Int("lda", k),
                 Buffer("b_packed", o.inputs[1]),
                 Buffer("c", o.outputs[0]),
                 Int("ldc", n)};
    return call;
  }
  runtime::Check(kernel == target::DenseKernel::kGemm, "nn.dense with weight layout ", layout,
                 " is not supported by the host code generator (NK or NK16n)");
  call.kernel = "Gemm";
  call.args = {Int("m", m),
               Int("n", n),
               Int("k", k),
               Buffer("a", o.inputs[0]),
               Int("lda", k),
               Flag("a_transposed", false),
               Buffer("b", o.inputs[1]),
               Int("ldb", k),
               Flag("b_transposed", true),
               Buffer("c", o.outputs[0]),
               Int("ldc", n)};
  return call;
}

// nn.batch_matmul on float32 (BatchGemm), int32 (BatchGemmInt32) or float64 (BatchGemmFloat64).
KernelCall PlanBatchMatmul(const KernelOperands& o) {
  DLDataType dtype = o.input_types[0].dtype;
  bool int32 = dtype == DLDataType{kDLInt, 32, 1}, float64 = dtype == DLDataType{kDLFloat, 64, 1};
  if (!int32 && !float64) RequireFloat32(o);
  const auto& a = o.input_types[0].shape;
  const auto& b = o.input_types[1].shape;
  bool ta = o.call.attrs.GetInt("transpose_a") != 0, tb = o.call.attrs.GetInt("transpose_b") != 0;
  int64_t m = ta ? a[2] : a[1], k = ta ? a[1] : a[2], n = tb ? b[1] : b[2];
  KernelCall call;
  call.kernel = int32 ? "BatchGemmInt32" : float64 ? "BatchGemmFloat64" : "BatchGemm";
  call.args = {Int("batch", o.output_types[0].shape[0]),
               Int("m", m),
               Int("n", n),
               Int("k", k),
               Buffer("a", o.inputs[0]),
               Int("lda", a[2]),
               Int("a_stride", a[0] == 1 ? 0 : a[1] * a[2]),
               Flag("a_transposed", ta),
               Buffer("b", o.inputs[1]),
               Int("ldb", b[2]),
               Int("b_stride", b[0] == 1 ? 0 : b[1] * b[2]),
               Flag("b_transposed", tb),
               Buffer("c", o.outputs[0]),
               Int("ldc", n),
               Int("c_stride", m * n)};
  return call;
}

// NCHW, or NCHW[x]c with the planes of a channel block pooled together.
KernelCall PlanPool2D(const KernelOperands& o) {
  RequireFloat32(o);
  const ir::Attrs& attrs = o.call.attrs;
  int64_t block = ir::ChannelBlock(attrs.GetString("layout"));
  const auto& data = o.input_types[0].shape;
  const auto& out = o.output_types[0].shape;
  const auto& pool = attrs.GetInts("pool_size");
  bool average = kAvgPool2D.Is(o.call.op);
  KernelCall call;
  call.kernel = std::string(average ? "AvgPool2D" : "MaxPool2D") + (block == 0 ? "" : "NCHWc");
  call.params_type = "Pool2DParams";
  call.params = {Int("batch_channels", data[0] * data[1]),
                 Int("in_height", data[2]),
                 Int("in_width", data[3]),
                 Int("out_height", out[2]),
                 Int("out_width", out[3]),
                 Int("pool_h", pool[0]),
                 Int("pool_w", pool[1]),
                 Flag("count_include_pad", average && attrs.GetInt("count_include_pad") != 0)};
  for (KernelArg& field : WindowParams(attrs, /*all_pads=*/true)) call.params.push_back(std::move(field));
  if (block != 0) call.args.push_back(Int("block", block));
  call.args.push_back(Buffer("data", o.inputs[0]));
  call.args.push_back(Buffer("out", o.outputs[0]));
  call.returns_status = false;
  return call;
}

KernelCall PlanSoftmax(const KernelOperands& o) {
  RequireFloat32(o);
  const auto& shape = o.input_types[0].shape;
  auto [axis, outer, inner] = ViewAroundAxis(o.call, shape);
  KernelCall call;
  call.kernel = "Softmax";
  call.args = {Int("outer", outer), Int("axis_size", shape[axis]), Int("inner", inner), Buffer("data", o.inputs[0]),
               Buffer("out", o.outputs[0])};
  call.returns_status = false;
  return call;
}

KernelCall PlanLayerNorm(const KernelOperands& o) {
  RequireFloat32(o);
  const auto& shape = o.input_types[0].shape;
  int axis = ViewAroundAxis(o.call, shape).axis;
  runtime::Check(axis == static_cast<int>(shape.size()) - 1, "nn.layer_norm over axis ", axis,
                 " (not the last) is not supported by the host code generator");
  int64_t size = shape.back(), rows = o.input_types[0].NumElements() / std::max<int64_t>(size, 1);
  KernelCall call;
  call.kernel = "LayerNorm";
  call.args = {Int("rows", rows),
               Int("size", size),
               Float("epsilon", static_cast<float>(o.call.attrs.GetFloat("epsilon"))),
               Buffer("data", o.inputs[0]),
               Buffer("gamma", o.inputs[1]),
               Buffer("beta", o.inputs[2]),
               Buffer("out", o.outputs[0])};
  call.returns_status = false;
  return call;
}

KernelCall PlanTopk(const KernelOperands& o) {
  const auto& shape = o.input_types[0].shape;
  auto [axis, outer, inner] = ViewAroundAxis(o.call, shape);
  KernelCall call;
  call.kernel = "TopK";
  call.params_type = "TopKShape";
  call.params = {Int("outer", outer), Int("axis_size", shape[axis]), Int("inner", inner),
                 Int("k", o.call.attrs.GetInt("k")), Flag("smallest", o.call.attrs.GetInt("is_ascend") != 0)};
  call.args = {Buffer("data", o.inputs[0]), Buffer("values", o.outputs[0]), Buffer("indices", o.outputs[1])};
  call.returns_status = false;
  return call;
}

// unique: the kernel's overloads take float32/64 and integers of 8 to 64 bits (bool as uint8).
KernelCall PlanUnique(const KernelOperands& o) {
  const ir::TensorType& data = o.input_types[0];
  runtime::Check(data.dtype.code != kDLFloat || data.dtype.bits >= 32, "unique on ",
                 runtime::DTypeToString(data.dtype), " is not supported by the host code generator");
  auto [axis, outer, inner] = ViewAroundAxis(o.call, data.shape);
  KernelCall call;
  call.kernel = "Unique";
  call.params_type = "UniqueShape";
  call.params = {Int("outer", outer), Int("axis_size", data.shape[axis]), Int("inner", inner),
                 Flag("sorted", o.call.attrs.GetInt("sorted") != 0)};
  call.args = {Buffer("data", o.inputs[0]),    Buffer("y", o.outputs[0]),      Buffer("indices", o.outputs[1]),
               Buffer("inverse", o.outputs[2]), Buffer("counts", o.outputs[3]), Buffer("count", o.outputs[4])};
  call.returns_status = false;
  return call;
}

KernelCall PlanNonMaxSuppression(const KernelOperands& o) {
  const auto& boxes = o.input_types[0].shape;
  const ir::Attrs& attrs = o.call.attrs;
  int64_t batches = boxes[0], classes = o.input_types[1].shape[1];
  KernelCall call;
  call.kernel = "NonMaxSuppression";
  call.params_type = "NonMaxSuppressionShape";
  call.params = {Int("batches", batches), Int("classes", classes), Int("boxes", boxes[1]),
                 Int("max_per_class", batches * classes == 0 ? 0 : o.output_types[0].shape[0] / (batches * classes)),
                 Flag("center_point_box", attrs.GetInt("center_point_box") != 0),
                 Flag("use_score_threshold", attrs.GetInt("use_score_threshold") != 0)};
  call.args = {Buffer("boxes", o.inputs[0]),
               Buffer("scores", o.inputs[1]),
               Buffer("max_output_boxes_per_class", o.inputs[2]),
               Buffer("iou_threshold", o.inputs[3]),
               Buffer("score_threshold", o.inputs[4]),
               Buffer("selected", o.outputs[0]),
               Buffer("count", o.outputs[1])};
  call.returns_status = false;
  return call;
}

KernelCall PlanRoiAlign(const KernelOperands& o) {
  const auto& data = o.input_types[0].shape;
  const ir::Attrs& attrs = o.call.attrs;
  const auto& pooled = attrs.GetInts("pooled_size");
  KernelCall call;
  call.kernel = "RoiAlign";
  call.params_type = "RoiAlignShape";
  call.params = {Int("batch", data[0]), Int("channels", data[1]), Int("height", data[2]), Int("width", data[3]),
                 Int("rois", o.input_types[1].shape[0]), Int("out_height", pooled[0]), Int("out_width", pooled[1]),
                 Int("sampling_ratio", attrs.GetInt("sample_ratio")),
                 Float("spatial_scale", static_cast<float>(attrs.GetFloat("spatial_scale"))),
                 Flag("max_mode", attrs.GetString("mode") == "max"), Flag("half_pixel", attrs.GetInt("aligned") != 0)};
  call.args = {Buffer("data", o.inputs[0]), Buffer("rois", o.inputs[1]), Buffer("batch_indices", o.inputs[2]),
               Buffer("out", o.outputs[0])};
  return call;
}

// det: float32 or float64 (the kernel's overloads).
KernelCall PlanDet(const KernelOperands& o) {
  const auto& shape = o.input_types[0].shape;
  int64_t n = shape.back();
  KernelCall call;
  call.kernel = "Det";
  call.args = {Int("count", o.output_types[0].NumElements()), Int("n", n), Buffer("data", o.inputs[0]),
               Buffer("out", o.outputs[0])};
  call.returns_status = false;
  return call;
}

// image.grid_sample: float32 or float64 (the kernel's overloads).
KernelCall PlanGridSample(const KernelOperands& o) {
  const auto& in = o.input_types[0].shape;
  const auto& out = o.output_types[0].shape;
  const ir::Attrs& attrs = o.call.attrs;
  const std::string& method = attrs.GetString("method");
  const std::string& padding = attrs.GetString("padding_mode");
  KernelCall call;
  call.kernel = "GridSample";
  call.params_type = "GridSampleShape";
  call.params = {Int("batch", in[0]), Int("channels", in[1]), Int("in_height", in[2]), Int("in_width", in[3]),
                 Int("out_height", out[2]), Int("out_width", out[3]),
                 Int("mode", method == "nearest" ? 0 : method == "bilinear" ? 1 : 2),
                 Int("padding_mode", padding == "zeros" ? 0 : padding == "border" ? 1 : 2),
                 Flag("align_corners", attrs.GetInt("align_corners") != 0)};
  call.args = {Buffer("data", o.inputs[0]), Buffer("grid", o.inputs[1]), Buffer("out", o.outputs[0])};
  call.returns_status = false;
  return call;
}

}  // namespace kiln::backend
