// Neural-network ops: convolution and transposed convolution, dense and batched matmul, pooling,
// normalization, softmax, padding and bias.
#include "ir/layout.h"
#include "ir/op.h"
#include "ir/ops/infer_util.h"
#include "kernels/conv/winograd.h"

namespace kiln::ir {
namespace {

using runtime::Check;

int64_t PooledSize(int64_t in, int64_t pad_before, int64_t pad_after, int64_t window, int64_t stride,
                   int64_t dilation, bool ceil_mode) {
  Check(window >= 1 && stride >= 1 && dilation >= 1, "the window (", window, "), stride (", stride, ") and dilation (",
        dilation, ") must be positive");
  int64_t effective = 0, padded = 0, span = 0;
  Check(!__builtin_mul_overflow(window - 1, dilation, &effective) && !__builtin_add_overflow(effective, 1, &effective) &&
            !__builtin_add_overflow(in, pad_before, &padded) && !__builtin_add_overflow(padded, pad_after, &padded) &&
            !__builtin_sub_overflow(padded, effective, &span),
        "the window (", window, ", dilation ", dilation, ") or the padding (", pad_before, ", ", pad_after,
        ") overflows a 64-bit size");
  Check(span >= 0, "the window (", effective, ") is larger than the padded input (", padded, ")");
  int64_t out = span / stride + (ceil_mode && span % stride != 0 ? 1 : 0) + 1;
  // With ceil_mode the last window must start inside the input or its leading padding.
  if (ceil_mode && (out - 1) * stride >= in + pad_before) --out;
  return out;
}

void CheckPositive(const std::vector<int64_t>& values, size_t count, const char* what) {
  Check(values.size() == count, what, " needs ", count, " values, got ", AttrValueText(values));
  for (int64_t v : values) Check(v > 0, what, " must be positive, got ", AttrValueText(values));
}

void CheckPadding(const std::vector<int64_t>& padding) {
  Check(padding.size() == 4, "padding needs 4 values (top, left, bottom, right), got ", AttrValueText(padding));
  for (int64_t v : padding) Check(v >= 0, "padding must not be negative, got ", AttrValueText(padding));
}

// The primal (NCHW, OIHW or NK) shape of an argument given in `layout_text`, whose primal axes must
// be `primal`.
std::vector<int64_t> PrimalShape(const TensorType& t, const std::string& layout_text, const char* primal,
                                 const char* what) {
  Layout layout = Layout::Parse(layout_text);
  Check(layout.primal() == primal, what, " layout ", layout_text, " must have the primal axes ", primal);
  return layout.ToPrimal(t.shape);
}

// The output type of a data-layout op: `primal_shape` laid out as `layout_text`.
Type InLayout(const std::vector<int64_t>& primal_shape, const std::string& layout_text, DLDataType dtype) {
  Layout layout = Layout::Parse(layout_text);
  Check(layout.primal() == "NCHW", "layout ", layout_text, " must have the primal axes NCHW");
  return Type::Tensor(layout.FromPrimal(primal_shape), dtype);
}

// Layouts: data "NCHW" or blocked "NCHW16c"; weights "OIHW" or blocked "OIHW16i16o"; the output
// in out_layout (empty: the data layout). Shapes are checked on the primal NCHW / OIHW shapes.
Type Conv2D(const std::vector<Type>& args, const Attrs& attrs) {
  CheckSameDType(args);
  const std::string& data_layout = attrs.GetString("data_layout");
  const std::string& out_layout = attrs.GetString("out_layout");
  std::vector<int64_t> data = PrimalShape(TensorArg(args, 0), data_layout, "NCHW", "data");
  std::vector<int64_t> weight = PrimalShape(TensorArg(args, 1), attrs.GetString("kernel_layout"), "OIHW", "kernel");
  const auto& strides = attrs.GetInts("strides");
  const auto& dilation = attrs.GetInts("dilation");
  const auto& padding = attrs.GetInts("padding");
  int64_t groups = attrs.GetInt("groups");
  CheckPositive(strides, 2, "strides");
  CheckPositive(dilation, 2, "dilation");
  CheckPadding(padding);
  Check(groups >= 1 && data[1] % groups == 0 && weight[0] % groups == 0,
        "groups ", groups, " must divide the input channels ", data[1], " and output channels ", weight[0]);
  Check(weight[1] * groups == data[1], "weight has ", weight[1], " input channels per group but the data has ",
        data[1], " channels in ", groups, " groups");
  int64_t oh = PooledSize(data[2], padding[0], padding[2], weight[2], strides[0], dilation[0], false);
  int64_t ow = PooledSize(data[3], padding[1], padding[3], weight[3], strides[1], dilation[1], false);
  return InLayout({data[0], weight[0], oh, ow}, out_layout.empty() ? data_layout : out_layout,
                  TensorArg(args, 0).dtype);
}

// A 3x3 convolution at stride 1 whose weight is already in Winograd's domain
// (kernels/conv/winograd.h: [36, O / ob, C / ib, ib, ob], ib the data's block, ob the output's).
Type Conv2DWinograd(const std::vector<Type>& args, const Attrs& attrs) {
  CheckSameDType(args);
  const std::string& data_layout = attrs.GetString("data_layout");
  const std::string& out_layout = attrs.GetString("out_layout");
  std::vector<int64_t> data = PrimalShape(TensorArg(args, 0), data_layout, "NCHW", "data");
  int64_t in_block = ChannelBlock(data_layout), out_block = ChannelBlock(out_layout);
  auto blocked = [](int64_t block, const std::string& layout) {
    return (block == 8 || block == 16) && layout == BlockedDataLayout(block);
  };
  Check(blocked(in_block, data_layout) && blocked(out_block, out_layout),
        "data and output layouts must be NCHW8c or NCHW16c, got ", data_layout, " and ", out_layout);
  const std::vector<int64_t>& weight = TensorArg(args, 1).shape;
  Check(data[1] >= 1 && weight.size() == 5 && weight[0] == kernels::kWinogradPoints && weight[1] >= 1 &&
            weight[2] * in_block == data[1] && weight[3] == in_block && weight[4] == out_block,
        "the weight must be [", kernels::kWinogradPoints, ", O / ", out_block, ", ", data[1] / in_block, ", ", in_block,
        ", ", out_block, "] (a 3x3 weight in Winograd's domain), got ", ShapeText(weight));
  const auto& padding = attrs.GetInts("padding");
  CheckPadding(padding);
  int64_t oh = PooledSize(data[2], padding[0], padding[2], 3, 1, 1, false);
  int64_t ow = PooledSize(data[3], padding[1], padding[3], 3, 1, 1, false);
  return InLayout({data[0], weight[1] * out_block, oh, ow}, out_layout, TensorArg(args, 0).dtype);
}

// A pointwise convolution with its bias and activation and the depthwise convolution reading it
// (FusePointwiseDepthwise writes it): data [N, C / ib, H, W, ib], pointwise weight
// [E / 16, C / ib, 1, 1, ib, 16], pointwise bias of E values (any shape), depthwise weight
// [E / 16, 1, KH, KW, 1, 16]; the result [N, E / 16, OH, OW, 16].
Type Conv2DPointwiseDepthwise(const std::vector<Type>& args, const Attrs& attrs) {
  CheckSameDType(args);
  const std::string& data_layout = attrs.GetString("data_layout");
  std::vector<int64_t> data = PrimalShape(TensorArg(args, 0), data_layout, "NCHW", "data");
  const int64_t in_block = ChannelBlock(data_layout);
  Check((in_block == 8 || in_block == 16) && data_layout == BlockedDataLayout(in_block),
        "the data layout must be NCHW8c or NCHW16c, got ", data_layout);
  const std::vector<int64_t>& pointwise = TensorArg(args, 1).shape;
  const std::vector<int64_t>& depthwise = TensorArg(args, 3).shape;
  Check(pointwise.size() == 6 && pointwise[0] >= 1 && pointwise[1] * in_block == data[1] && pointwise[2] == 1 &&
            pointwise[3] == 1 && pointwise[4] == in_block && pointwise[5] == 16,
        "the pointwise weight must be [E / 16, ", data[1] / in_block, ", 1, 1, ", in_block, ", 16], got ",
        ShapeText(pointwise));
  const int64_t expanded = pointwise[0] * 16;
  Check(TensorArg(args, 2).NumElements() == expanded, "the pointwise bias must have ", expanded, " values, got ",
        ShapeText(TensorArg(args, 2).shape));
  Check(depthwise.size() == 6 && depthwise[0] * 16 == expanded && depthwise[1] == 1 && depthwise[2] >= 1 &&
            depthwise[3] >= 1 && depthwise[4] == 1 && depthwise[5] == 16,
        "the depthwise weight must be [", expanded / 16, ", 1, KH, KW, 1, 16], got ", ShapeText(depthwise));
  const std::string& activation = attrs.GetString("activation");
  Check(activation == "clip" || activation == "swish", "activation must be clip or swish, got ", activation);
  const auto& strides = attrs.GetInts("strides");
  const auto& dilation = attrs.GetInts("dilation");
  const auto& padding = attrs.GetInts("padding");
  CheckPositive(strides, 2, "strides");
  CheckPositive(dilation, 2, "dilation");
  CheckPadding(padding);
  int64_t oh = PooledSize(data[2], padding[0], padding[2], depthwise[2], strides[0], dilation[0], false);
  int64_t ow = PooledSize(data[3], padding[1], padding[3], depthwise[3], strides[1], dilation[1], false);
  return InLayout({data[0], expanded, oh, ow}, BlockedDataLayout(16), TensorArg(args, 0).dtype);
}

// The extent of a transposed convolution's output along one axis.
int64_t TransposedSize(int64_t in, int64_t pad_before, int64_t pad_after, int64_t window, int64_t stride,
                       int64_t dilation, int64_t output_padding) {
  Check(in >= 1, "the data must not be empty along a spatial axis");
  int64_t strided = 0, effective = 0, out = 0;
  Check(!__builtin_mul_overflow(in - 1, stride, &strided) && !__builtin_mul_overflow(window - 1, dilation, &effective) &&
            !__builtin_add_overflow(strided, effective, &out) && !__builtin_add_overflow(out, output_padding + 1, &out),
        "the output size overflows a 64-bit size");
  out -= pad_before + pad_after;
  Check(out >= 1, "the padding (", pad_before, ", ", pad_after, ") leaves an empty output");
  return out;
}

// Data N, C, spatial... (NCHW or NCDHW), weight I, O, window... ([C_in, C_out / groups, k...], ONNX's
// layout and Relay's default), the output in the data's layout: output_padding adds elements at the
// end of each spatial axis.
Type TransposedConvolution(const std::vector<Type>& args, const Attrs& attrs, size_t spatial) {
  CheckSameDType(args);
  const std::string data_layout = spatial == 2 ? "NCHW" : "NCDHW", kernel_layout = spatial == 2 ? "IOHW" : "IODHW";
  Check(attrs.GetString("data_layout") == data_layout && attrs.GetString("kernel_layout") == kernel_layout &&
            (attrs.GetString("out_layout").empty() || attrs.GetString("out_layout") == data_layout),
        "takes ", data_layout, " data and an ", kernel_layout, " weight only");
  const TensorType& data = TensorArg(args, 0);
  const TensorType& weight = TensorArg(args, 1);
  auto rank = static_cast<int64_t>(spatial + 2);
  Check(data.ndim() == rank && weight.ndim() == rank, "expects ", rank, "-D data and weight, got ",
        ShapeText(data.shape), " and ", ShapeText(weight.shape));
  const auto& strides = attrs.GetInts("strides");
  const auto& dilation = attrs.GetInts("dilation");
  const auto& padding = attrs.GetInts("padding");
  const auto& output_padding = attrs.GetInts("output_padding");
  int64_t groups = attrs.GetInt("groups");
  CheckPositive(strides, spatial, "strides");
  CheckPositive(dilation, spatial, "dilation");
  Check(padding.size() == 2 * spatial, "padding needs ", 2 * spatial, " values (all begins, then all ends), got ",
        AttrValueText(padding));
  for (int64_t v : padding) Check(v >= 0, "padding must not be negative, got ", AttrValueText(padding));
  Check(output_padding.size() == spatial, "output_padding needs ", spatial, " values, got ",
        AttrValueText(output_padding));
  for (int64_t v : output_padding) Check(v >= 0, "output_padding must not be negative, got ", AttrValueText(output_padding));
  Check(groups >= 1 && data.shape[1] % groups == 0, "groups ", groups, " must divide the input channels ",
        data.shape[1]);
  Check(weight.shape[0] == data.shape[1], "weight has ", weight.shape[0], " input channels but the data has ",
        data.shape[1]);
  std::vector<int64_t> out = {data.shape[0], weight.shape[1] * groups};
  for (size_t d = 0; d < spatial; ++d) {
    out.push_back(TransposedSize(data.shape[2 + d], padding[d], padding[spatial + d], weight.shape[2 + d], strides[d],
                                 dilation[d], output_padding[d]));
  }
  return Type::Tensor(out, data.dtype);
}

Type Conv2DTranspose(const std::vector<Type>& args, const Attrs& attrs) { return TransposedConvolution(args, attrs, 2); }
Type Conv3DTranspose(const std::vector<Type>& args, const Attrs& attrs) { return TransposedConvolution(args, attrs, 3); }

// The weight is [N, K] ("NK") or blocked, as "NK16n" ([N / 16, K, 16]) for the packed kernel.
Type Dense(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  const TensorType& weight_type = TensorArg(args, 1);
  CheckSameDType(args);
  Check(data.ndim() >= 1 && weight_type.ndim() >= 2, "expects data [..., K] and weight [N, K], got ",
        ShapeText(data.shape), " and ", ShapeText(weight_type.shape));
  std::vector<int64_t> weight = PrimalShape(weight_type, attrs.GetString("weight_layout"), "NK", "weight");
  Check(data.shape.back() == weight[1], "data has K = ", data.shape.back(), " but weight has K = ", weight[1]);
  std::vector<int64_t> shape = data.shape;
  shape.back() = weight[0];
  return Type::Tensor(shape, data.dtype);
}

Type BatchMatmul(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& a = TensorArg(args, 0);
  const TensorType& b = TensorArg(args, 1);
  CheckSameDType(args);
  Check(a.ndim() == 3 && b.ndim() == 3, "expects 3-D operands, got ", ShapeText(a.shape), " and ", ShapeText(b.shape));
  bool ta = attrs.GetInt("transpose_a") != 0, tb = attrs.GetInt("transpose_b") != 0;
  int64_t m = ta ? a.shape[2] : a.shape[1], ka = ta ? a.shape[1] : a.shape[2];
  int64_t kb = tb ? b.shape[2] : b.shape[1], n = tb ? b.shape[1] : b.shape[2];
  Check(ka == kb, "inner dimensions differ: ", ka, " and ", kb);
  Check(a.shape[0] == b.shape[0] || a.shape[0] == 1 || b.shape[0] == 1, "batch sizes ", a.shape[0], " and ",
        b.shape[0], " do not broadcast");
  return Type::Tensor({std::max(a.shape[0], b.shape[0]), m, n}, a.dtype);
}

Type BiasAdd(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  const TensorType& bias = TensorArg(args, 1);
  CheckSameDType(args);
  int axis = NormalizeAxis(attrs.GetInt("axis"), data.ndim());
  Check(bias.ndim() == 1 && bias.shape[0] == data.shape[axis], "bias ", ShapeText(bias.shape),
        " does not match axis ", axis, " of ", ShapeText(data.shape));
  return Type::Tensor(data);
}

Type BatchNorm(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  CheckSameDType(args);
  int axis = NormalizeAxis(attrs.GetInt("axis"), data.ndim());
  for (size_t i = 1; i < 5; ++i) {
    const TensorType& p = TensorArg(args, i);
    Check(p.ndim() == 1 && p.shape[0] == data.shape[axis], "argument ", i, " ", ShapeText(p.shape),
          " does not match channel axis ", axis, " of ", ShapeText(data.shape));
  }
  return Type::Tensor(data);
}

Type LayerNorm(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  CheckSameDType(args);
  int axis = NormalizeAxis(attrs.GetInt("axis"), data.ndim());
  for (size_t i = 1; i < 3; ++i) {
    const TensorType& p = TensorArg(args, i);
    Check(p.ndim() == 1 && p.shape[0] == data.shape[axis], "argument ", i, " ", ShapeText(p.shape),
          " does not match axis ", axis, " of ", ShapeText(data.shape));
  }
  return Type::Tensor(data);
}

// Fused attention (transform/combine_attention.cc): each operand read through a view [offset,
// stride of b, n, row, column] of its tensor (kernels.h, AttentionParams), the output written through
// one into a tensor of shape out_shape that the view covers exactly.
Type Attention(const std::vector<Type>& args, const Attrs& attrs) {
  const std::vector<int64_t>& sizes = attrs.GetInts("sizes");
  Check(sizes.size() == 6, "sizes must be [batch, heads, queries, keys, head size, value size], it is ",
        AttrValueText(sizes));
  for (int64_t size : sizes) Check(size >= 0, "sizes ", AttrValueText(sizes), " must not be negative");
  const int64_t batch = sizes[0], heads = sizes[1], queries = sizes[2], keys = sizes[3];
  // The last element a view reaches must lie in its tensor; `what` names the view.
  auto check_view = [&](const char* what, const std::vector<int64_t>& view, int64_t rows, int64_t columns,
                        int64_t elements) {
    Check(view.size() == 5, what, " must be [offset, batch, head, row and column strides], it is ", AttrValueText(view));
    for (int64_t x : view) Check(x >= 0, what, " ", AttrValueText(view), " must not be negative");
    if (batch == 0 || heads == 0 || rows == 0 || columns == 0) return;
    // Term by term in 128 bits (attributes from IR text may be any 64-bit numbers).
    const int64_t counts[5] = {1, batch, heads, rows, columns};
    __int128 last = 0;
    for (int d = 0; d < 5 && last < elements; ++d) last += static_cast<__int128>(counts[d] - (d > 0)) * view[d];
    Check(last < elements, what, " ", AttrValueText(view), " reaches past the ", elements, " elements of its tensor");
  };
  const std::vector<std::string> names = {"q_view", "k_view", "v_view", "bias_view"};
  const std::vector<int64_t> rows = {queries, keys, keys, queries}, columns = {sizes[4], sizes[4], sizes[5], keys};
  Check(args.size() == 3 || args.size() == 4, "takes q, k, v and an optional bias");
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorType& t = TensorArg(args, i);
    Check(t.dtype == runtime::kFloat32, "argument ", i, " is ", runtime::DTypeToString(t.dtype), ", not float32");
    check_view(names[i].c_str(), attrs.GetInts(names[i]), rows[i], columns[i], t.NumElements());
  }
  TensorType out{attrs.GetInts("out_shape"), runtime::kFloat32};
  for (int64_t d : out.shape) Check(d >= 0, "out_shape ", ShapeText(out.shape), " must not be negative");
  int64_t results = 0;
  Check(!__builtin_mul_overflow(batch, heads, &results) && !__builtin_mul_overflow(results, queries, &results) &&
            !__builtin_mul_overflow(results, sizes[5], &results) && out.NumElements() == results,
        "out_shape ", ShapeText(out.shape), " holds ", out.NumElements(),
        " elements, not batch x heads x queries x value size");
  const std::vector<int64_t>& out_view = attrs.GetInts("out_view");
  check_view("out_view", out_view, queries, sizes[5], out.NumElements());
  Check(out_view[4] == 1, "out_view ", AttrValueText(out_view), " must write each row's values contiguously");
  return Type::Tensor(out);
}

// Layout "NCHW" or blocked "NCHW16c"; shapes are checked on the primal NCHW shape.
Type Pool2D(const std::vector<Type>& args, const Attrs& attrs) {
  const std::string& layout = attrs.GetString("layout");
  std::vector<int64_t> data = PrimalShape(TensorArg(args, 0), layout, "NCHW", "data");
  const auto& pool = attrs.GetInts("pool_size");
  const auto& strides = attrs.GetInts("strides");
  const auto& dilation = attrs.GetInts("dilation");
  const auto& padding = attrs.GetInts("padding");
  CheckPositive(pool, 2, "pool_size");
  CheckPositive(strides, 2, "strides");
  CheckPositive(dilation, 2, "dilation");
  CheckPadding(padding);
  Check(padding[0] < (pool[0] - 1) * dilation[0] + 1 && padding[1] < (pool[1] - 1) * dilation[1] + 1,
        "padding must be smaller than the window");
  bool ceil_mode = attrs.GetInt("ceil_mode") != 0;
  int64_t oh = PooledSize(data[2], padding[0], padding[2], pool[0], strides[0], dilation[0], ceil_mode);
  int64_t ow = PooledSize(data[3], padding[1], padding[3], pool[1], strides[1], dilation[1], ceil_mode);
  return InLayout({data[0], data[1], oh, ow}, layout, TensorArg(args, 0).dtype);
}

// (the max pooling, int64 indices of the chosen elements in the flattened input), NCHW only.
Type MaxPool2DWithIndices(const std::vector<Type>& args, const Attrs& attrs) {
  Check(attrs.GetString("layout") == "NCHW", "takes NCHW data only");
  Type values = Pool2D(args, attrs);
  return Type::Tuple({values, Type::Tensor(values.tensor().shape, DLDataType{kDLInt, 64, 1})});
}

Type GlobalPool2D(const std::vector<Type>& args, const Attrs& attrs) {
  const std::string& layout = attrs.GetString("layout");
  std::vector<int64_t> data = PrimalShape(TensorArg(args, 0), layout, "NCHW", "data");
  return InLayout({data[0], data[1], 1, 1}, layout, TensorArg(args, 0).dtype);
}

Type Softmax(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  NormalizeAxis(attrs.GetInt("axis"), data.ndim());
  Check(data.dtype.code == kDLFloat, "expects a float tensor");
  return Type::Tensor(data);
}

Type Pad(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  const auto& pad = attrs.GetInts("pad_width");
  Check(pad.size() == 2 * data.shape.size(), "pad_width needs 2 values per dimension (", 2 * data.shape.size(),
        "), got ", AttrValueText(pad));
  Check(attrs.GetString("pad_mode") == "constant" || attrs.GetString("pad_mode") == "edge" ||
            attrs.GetString("pad_mode") == "reflect" || attrs.GetString("pad_mode") == "wrap",
        "pad_mode must be constant, edge, reflect or wrap");
  std::vector<int64_t> shape = data.shape;
  for (size_t i = 0; i < shape.size(); ++i) {
    Check(attrs.GetString("pad_mode") == "constant" || data.shape[i] > 0 || pad[2 * i] + pad[2 * i + 1] == 0,
          attrs.GetString("pad_mode"), " padding of the empty axis ", i, " has nothing to repeat");
    Check(pad[2 * i] >= 0 && pad[2 * i + 1] >= 0, "negative padding ", AttrValueText(pad));
    Check(!__builtin_add_overflow(shape[i], pad[2 * i], &shape[i]) &&
              !__builtin_add_overflow(shape[i], pad[2 * i + 1], &shape[i]),
          "padding ", AttrValueText(pad), " overflows a 64-bit size");
  }
  return Type::Tensor(shape, data.dtype);
}

std::vector<AttrSchema> PoolAttrs(bool average) {
  std::vector<AttrSchema> attrs = {
      {"pool_size", AttrKind::kInts, {}, "window height, width"},
      {"strides", AttrKind::kInts, std::vector<int64_t>{1, 1}, "stride height, width"},
      {"dilation", AttrKind::kInts, std::vector<int64_t>{1, 1}, "dilation height, width"},
      {"padding", AttrKind::kInts, std::vector<int64_t>{0, 0, 0, 0}, "top, left, bottom, right"},
      {"ceil_mode", AttrKind::kInt, int64_t{0}, "round the output size up"},
      {"layout", AttrKind::kString, std::string("NCHW"), "data layout: NCHW or blocked NCHW16c"}};
  if (average) attrs.push_back({"count_include_pad", AttrKind::kInt, int64_t{0}, "divide by the full window"});
  return attrs;
}

void Add(OpTable& table, OpDef op) { table[op.name] = std::move(op); }

}  // namespace

void RegisterNnOps(OpTable& table) {
  Add(table, {"nn.conv2d", 2, 2,
              {{"strides", AttrKind::kInts, std::vector<int64_t>{1, 1}, "stride height, width"},
               {"padding", AttrKind::kInts, std::vector<int64_t>{0, 0, 0, 0}, "top, left, bottom, right"},
               {"dilation", AttrKind::kInts, std::vector<int64_t>{1, 1}, "dilation height, width"},
               {"groups", AttrKind::kInt, int64_t{1}, "channel groups"},
               {"data_layout", AttrKind::kString, std::string("NCHW"), "data layout"},
               {"kernel_layout", AttrKind::kString, std::string("OIHW"), "weight layout"},
               {"out_layout", AttrKind::kString, std::string(""), "output layout; empty: the data layout"},
               {"implementation", AttrKind::kString, std::string(""),
                "the implementation chosen (strategy/conv2d.h); empty: the first that computes the layouts"}},
              OpPattern::kOutEWiseFusable, Conv2D, "2-D convolution", nullptr, LayoutRule::kConvolution});
  Add(table, {"nn.conv2d_winograd", 2, 2,
              {{"padding", AttrKind::kInts, std::vector<int64_t>{0, 0, 0, 0}, "top, left, bottom, right"},
               {"data_layout", AttrKind::kString, std::string("NCHW16c"), "data layout, blocked"},
               {"out_layout", AttrKind::kString, std::string("NCHW16c"), "output layout, blocked"}},
              OpPattern::kOutEWiseFusable, Conv2DWinograd,
              "3x3 convolution at stride 1 by Winograd's F(4x4, 3x3), the weight transformed at build time "
              "(AlterOpLayout writes it for implementation conv2d.nchwc_winograd)"});
  Add(table, {"nn.conv2d_pointwise_depthwise", 4, 4,
              {{"strides", AttrKind::kInts, std::vector<int64_t>{1, 1}, "the depthwise stride height, width"},
               {"padding", AttrKind::kInts, std::vector<int64_t>{0, 0, 0, 0}, "the depthwise top, left, bottom, right"},
               {"dilation", AttrKind::kInts, std::vector<int64_t>{1, 1}, "the depthwise dilation height, width"},
               {"activation", AttrKind::kString, std::string("clip"),
                "the pointwise result's activation: clip (a_min, a_max) or swish (x * sigmoid(x))"},
               {"a_min", AttrKind::kFloat, 0.0, "the pointwise result's clip, below"},
               {"a_max", AttrKind::kFloat, 6.0, "the pointwise result's clip, above"},
               {"data_layout", AttrKind::kString, std::string("NCHW16c"), "data layout, blocked"}},
              OpPattern::kOutEWiseFusable, Conv2DPointwiseDepthwise,
              "a pointwise convolution (data, weight), its bias and clip or swish, then a depthwise convolution "
              "(FusePointwiseDepthwise writes it; the result NCHW16c)"});
  Add(table, {"nn.conv2d_transpose", 2, 2,
              {{"strides", AttrKind::kInts, std::vector<int64_t>{1, 1}, "stride height, width"},
               {"padding", AttrKind::kInts, std::vector<int64_t>{0, 0, 0, 0}, "top, left, bottom, right"},
               {"output_padding", AttrKind::kInts, std::vector<int64_t>{0, 0}, "added at the bottom, right"},
               {"dilation", AttrKind::kInts, std::vector<int64_t>{1, 1}, "dilation height, width"},
               {"groups", AttrKind::kInt, int64_t{1}, "channel groups"},
               {"data_layout", AttrKind::kString, std::string("NCHW"), "data layout"},
               {"kernel_layout", AttrKind::kString, std::string("IOHW"), "weight layout"},
               {"out_layout", AttrKind::kString, std::string(""), "output layout; empty: the data layout"}},
              OpPattern::kOutEWiseFusable, Conv2DTranspose,
              "2-D transposed convolution"});
  Add(table, {"nn.conv3d_transpose", 2, 2,
              {{"strides", AttrKind::kInts, std::vector<int64_t>{1, 1, 1}, "stride depth, height, width"},
               {"padding", AttrKind::kInts, std::vector<int64_t>{0, 0, 0, 0, 0, 0},
                "front, top, left, back, bottom, right"},
               {"output_padding", AttrKind::kInts, std::vector<int64_t>{0, 0, 0}, "added at the back, bottom, right"},
               {"dilation", AttrKind::kInts, std::vector<int64_t>{1, 1, 1}, "dilation depth, height, width"},
               {"groups", AttrKind::kInt, int64_t{1}, "channel groups"},
               {"data_layout", AttrKind::kString, std::string("NCDHW"), "data layout"},
               {"kernel_layout", AttrKind::kString, std::string("IODHW"), "weight layout"},
               {"out_layout", AttrKind::kString, std::string(""), "output layout; empty: the data layout"}},
              OpPattern::kOutEWiseFusable, Conv3DTranspose, "3-D transposed convolution"});
  Add(table, {"nn.dense", 2, 2,
              {{"weight_layout", AttrKind::kString, std::string("NK"), "weight layout: NK, or packed NK16n"},
               {"implementation", AttrKind::kString, std::string(""),
                "the implementation chosen (strategy/dense.h); empty: the first that computes the layout"}},
              OpPattern::kOutEWiseFusable, Dense, "data [..., K] x weight [N, K]^T", nullptr, LayoutRule::kDense});
  Add(table, {"nn.batch_matmul", 2, 2,
              {{"transpose_a", AttrKind::kInt, int64_t{0}, "a is [B, K, M]"},
               {"transpose_b", AttrKind::kInt, int64_t{0}, "b is [B, N, K]"}},
              OpPattern::kOutEWiseFusable, BatchMatmul, "batched matrix product, batch 1 broadcasts"});
  Add(table, {"nn.bias_add", 2, 2, {{"axis", AttrKind::kInt, int64_t{1}, "axis of the bias"}},
              OpPattern::kBroadcast, BiasAdd, "adds a 1-D bias along an axis", nullptr, LayoutRule::kChannelBias});
  Add(table, {"nn.batch_norm", 5, 5,
              {{"axis", AttrKind::kInt, int64_t{1}, "channel axis"},
               {"epsilon", AttrKind::kFloat, 1e-5, "added to the variance"}},
              OpPattern::kOpaque, BatchNorm, "inference batch norm (data, gamma, beta, mean, var)"});
  Add(table, {"nn.layer_norm", 3, 3,
              {{"axis", AttrKind::kInt, int64_t{-1}, "normalized axis"},
               {"epsilon", AttrKind::kFloat, 1e-5, "added to the variance"}},
              OpPattern::kOpaque, LayerNorm, "layer norm over one axis (data, gamma, beta)"});
  Add(table, {"nn.attention", 3, 4,
              {{"sizes", AttrKind::kInts, {}, "batch, heads, queries, keys, head size, value size"},
               {"scale", AttrKind::kFloat, 1.0, "multiplies the scores"},
               {"q_view", AttrKind::kInts, {}, "offset, batch, head, query and head-size strides of q"},
               {"k_view", AttrKind::kInts, {}, "offset, batch, head, key and head-size strides of k"},
               {"v_view", AttrKind::kInts, {}, "offset, batch, head, key and value strides of v"},
               {"bias_view", AttrKind::kInts, std::vector<int64_t>{}, "offset, batch, head, query and key strides of the bias; empty without one"},
               {"out_shape", AttrKind::kInts, {}, "the result's shape"},
               {"out_view", AttrKind::kInts, {}, "offset, batch, head, query and value strides of the result"}},
              OpPattern::kOpaque, Attention, "softmax(scale * q k^T + bias) v per batch and head, fused"});
  Add(table, {"nn.max_pool2d", 1, 1, PoolAttrs(false), OpPattern::kOutEWiseFusable, Pool2D, "2-D max pooling",
              nullptr, LayoutRule::kPool});
  std::vector<AttrSchema> with_indices = PoolAttrs(false);
  with_indices.push_back({"storage_order", AttrKind::kInt, int64_t{0}, "indices over H and W column-major"});
  Add(table, {"nn.max_pool2d_with_indices", 1, 1, with_indices, OpPattern::kOpaque, MaxPool2DWithIndices,
              "2-D max pooling with the index of each chosen element"});
  Add(table, {"nn.avg_pool2d", 1, 1, PoolAttrs(true), OpPattern::kOutEWiseFusable, Pool2D, "2-D average pooling",
              nullptr, LayoutRule::kPool});
  Add(table, {"nn.global_avg_pool2d", 1, 1,
              {{"layout", AttrKind::kString, std::string("NCHW"), "data layout: NCHW or blocked NCHW16c"}},
              OpPattern::kOutEWiseFusable, GlobalPool2D, "mean over H and W", nullptr, LayoutRule::kPool});
  Add(table, {"nn.softmax", 1, 1, {{"axis", AttrKind::kInt, int64_t{-1}, "normalized axis"}}, OpPattern::kOpaque,
              Softmax, "softmax along an axis"});
  Add(table, {"nn.pad", 1, 1,
              {{"pad_width", AttrKind::kInts, {}, "before, after per dimension"},
               {"pad_value", AttrKind::kFloat, 0.0, "value of constant padding"},
               {"pad_mode", AttrKind::kString, std::string("constant"), "constant, edge, reflect or wrap (ONNX's)"}},
              OpPattern::kInjective, Pad, "pads each dimension"});
}

}  // namespace kiln::ir
