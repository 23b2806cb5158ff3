// Dense, batched matmul, pooling, softmax, layer norm, topk, unique, non-maximum suppression, det
// and grid sampling as calls of the kernel library: which kernel, and its parameters from the
// call's shapes and attributes.
#include <algorithm>

#include "backend/codegen/lowering.h"
#include "ir/layout.h"
#include "runtime/error.h"
#include "strategy/dense.h"

namespace kiln::backend {
namespace {

const ir::OpRef kAvgPool2D("nn.avg_pool2d");

}  // namespace

bool AllFloat32(const std::vector<ir::TensorType>& types) {
  return std::all_of(types.begin(), types.end(), [](const ir::TensorType& t) { return t.dtype == runtime::kFloat32; });
}

void RequireFloat32(const KernelOperands& o) {
  for (const ir::TensorType& t : o.input_types) {
    runtime::Check(t.dtype == runtime::kFloat32, o.call.op->name, " on ", runtime::DTypeToString(t.dtype),
                   " is not supported by the host code generator (float32 only)");
  }
}

// The weight is [N, K] ("NK") or packed by AlterOpLayout ("NK16n"), as its implementation wants.
KernelCall PlanDense(const KernelOperands& o) {
  RequireFloat32(o);
  const strategy::DenseImplementation& implementation = strategy::DenseImplementationOf(o.call);
  int64_t k = o.input_types[0].shape.back(), n = o.output_types[0].shape.back();
  int64_t m = o.input_types[0].NumElements() / k;
  KernelCall call;
  call.implementation = implementation.name;
  if (implementation.kernel == strategy::DenseKernel::kGemmPacked) {
    call.kernel = "GemmPacked";
    call.args = {Int("m", m),
                 Int("n", n),
                 Int("k", k),
                 Buffer("a", o.inputs[0]),
                 Int("lda", k),
                 Buffer("b_packed", o.inputs[1]),
                 Buffer("c", o.outputs[0]),
                 Int("ldc", n)};
    call.takes_epilogue = true;
    call.epilogue = EpilogueOf(o, true);
    return call;
  }
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

// A dense layer in packed panels applies the ops after it (its bias, a residual, relu, ...) to
// each tile of its result while the tile is in cache; one passed as a matrix product does not.
size_t DenseEpilogueLength(const ir::CallNode& anchor, const std::vector<ir::TensorType>& anchor_inputs,
                           const std::vector<FusedOp>& chain) {
  bool packed = strategy::DenseImplementationOf(anchor).kernel == strategy::DenseKernel::kGemmPacked;
  return AllFloat32(anchor_inputs) && packed ? EpilogueChainLength(anchor, chain, true) : 0;
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
  const auto& strides = attrs.GetInts("strides");
  const auto& dilation = attrs.GetInts("dilation");
  const auto& padding = attrs.GetInts("padding");
  call.params = TypedParams(
      "Pool2DParams",
      kernels::Pool2DParams{data[0] * data[1], data[2], data[3], out[2], out[3], pool[0], pool[1], strides[0],
                            strides[1], dilation[0], dilation[1], padding[0], padding[1], padding[2], padding[3],
                            average && attrs.GetInt("count_include_pad") != 0});
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

// nn.attention's views (transform/combine_attention.cc) as AttentionParams, with a bias
// (AttentionWithBias) or without (Attention); q, k and v may be one buffer (the heads of a packed
// projection).
KernelCall PlanAttention(const KernelOperands& o) {
  RequireFloat32(o);
  const ir::Attrs& attrs = o.call.attrs;
  const std::vector<int64_t>& n = attrs.GetInts("sizes");
  const std::vector<int64_t>& q = attrs.GetInts("q_view");
  const std::vector<int64_t>& k = attrs.GetInts("k_view");
  const std::vector<int64_t>& v = attrs.GetInts("v_view");
  const std::vector<int64_t>& out = attrs.GetInts("out_view");
  const bool has_bias = o.inputs.size() == 4;
  const std::vector<int64_t> bias = has_bias ? attrs.GetInts("bias_view") : std::vector<int64_t>(5, 0);
  KernelCall call;
  call.kernel = has_bias ? "AttentionWithBias" : "Attention";
  const float scale = static_cast<float>(attrs.GetFloat("scale"));
  call.params = TypedParams("AttentionParams",
                            kernels::AttentionParams{n[0],    n[1],    n[2],    n[3],    n[4],    n[5],    scale,
                                                     q[0],    q[1],    q[2],    q[3],    q[4],    k[0],    k[1],
                                                     k[2],    k[3],    k[4],    v[0],    v[1],    v[2],    v[3],
                                                     v[4],    bias[0], bias[1], bias[2], bias[3], bias[4], out[0],
                                                     out[1],  out[2],  out[3],  out[4]});
  call.args = {Buffer("q", o.inputs[0]), Buffer("k", o.inputs[1]), Buffer("v", o.inputs[2])};
  if (has_bias) call.args.push_back(Buffer("bias", o.inputs[3]));
  call.args.push_back(Buffer("out", o.outputs[0]));
  return call;
}

KernelCall PlanTopk(const KernelOperands& o) {
  const auto& shape = o.input_types[0].shape;
  auto [axis, outer, inner] = ViewAroundAxis(o.call, shape);
  KernelCall call;
  call.kernel = "TopK";
  call.params = TypedParams("TopKShape", kernels::TopKShape{outer, shape[axis], inner, o.call.attrs.GetInt("k"),
                                                            o.call.attrs.GetInt("is_ascend") != 0});
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
  call.params = TypedParams("UniqueShape",
                            kernels::UniqueShape{outer, data.shape[axis], inner, o.call.attrs.GetInt("sorted") != 0});
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
  int64_t max_per_class = batches * classes == 0 ? 0 : o.output_types[0].shape[0] / (batches * classes);
  call.params = TypedParams("NonMaxSuppressionShape",
                            kernels::NonMaxSuppressionShape{batches, classes, boxes[1], max_per_class,
                                                            attrs.GetInt("center_point_box") != 0,
                                                            attrs.GetInt("use_score_threshold") != 0});
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
  call.params = TypedParams(
      "RoiAlignShape",
      kernels::RoiAlignShape{data[0], data[1], data[2], data[3], o.input_types[1].shape[0], pooled[0], pooled[1],
                             attrs.GetInt("sample_ratio"), static_cast<float>(attrs.GetFloat("spatial_scale")),
                             attrs.GetString("mode") == "max", attrs.GetInt("aligned") != 0});
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
  int64_t mode = method == "nearest" ? 0 : method == "bilinear" ? 1 : 2;
  int64_t padding_mode = padding == "zeros" ? 0 : padding == "border" ? 1 : 2;
  call.params = TypedParams("GridSampleShape",
                            kernels::GridSampleShape{in[0], in[1], in[2], in[3], out[2], out[3], mode, padding_mode,
                                                     attrs.GetInt("align_corners") != 0});
  call.args = {Buffer("data", o.inputs[0]), Buffer("grid", o.inputs[1]), Buffer("out", o.outputs[0])};
  call.returns_status = false;
  return call;
}

}  // namespace kiln::backend
