// The implementations of nn.conv2d and how the compiler chooses among them (conv2d.h).
#include "strategy/conv2d.h"

#include <algorithm>

#include "ir/layout.h"
#include "kernels/conv/winograd.h"
#include "runtime/error.h"

namespace kiln::strategy {
namespace {

using kernels::KernelConfig;

bool IsFloat32(const ir::Expr& e) { return e->type().is_tensor() && e->type().tensor().dtype == runtime::kFloat32; }

// The output block a blocked convolution with `out_channels` channels computes in when `block`
// (8 or 16) is preferred: `block` when it divides the channels, else half of it when that is 8 or
// more and divides them; 0 when neither does, or no block is preferred.
int64_t OutBlock(int64_t block, int64_t out_channels) {
  if (block <= 0) return 0;
  if (out_channels % block == 0) return block;
  if (block % 2 == 0 && block / 2 >= 8 && out_channels % (block / 2) == 0) return block / 2;
  return 0;
}

std::string BlockedKernelLayout(int64_t in_block, int64_t out_block) {
  return "OIHW" + std::to_string(in_block) + "i" + std::to_string(out_block) + "o";
}

const Conv2DLayouts kPlain{"NCHW", "OIHW", "NCHW"};

// ---- Blocked layouts (Conv2DNCHWc) -------------------------------------------------------------

bool DepthwiseApplies(const Conv2DProblem& p, const KernelConfig& config) {
  return p.float32 && p.depthwise() && OutBlock(config.conv_block, p.out_channels) != 0;
}

// Depthwise: the data in the output's block, so that channel c of a block reads channel c.
Conv2DLayouts DepthwiseLayouts(const Conv2DProblem& p, const KernelConfig& config, int64_t) {
  int64_t block = OutBlock(config.conv_block, p.out_channels);
  return {ir::BlockedDataLayout(block), BlockedKernelLayout(1, block), ir::BlockedDataLayout(block)};
}

// Groups of 2 or 4 channels, in and out (ResNeXt 32x4d's first stage): each group inside one
// block, output block b reading input block b (kernels.h: block-local), in the output's block.
int64_t SmallGroup(const Conv2DProblem& p) {
  if (p.groups < 2 || p.depthwise() || p.channels != p.out_channels || p.channels % p.groups != 0) return 0;
  int64_t group = p.channels / p.groups;
  return group == 2 || group == 4 ? group : 0;
}

bool SmallGroupsApplies(const Conv2DProblem& p, const KernelConfig& config) {
  return p.float32 && SmallGroup(p) != 0 && OutBlock(config.conv_block, p.out_channels) != 0;
}

bool SmallGroupsComputes(const Conv2DProblem& p, const Conv2DLayouts& l, std::string* why) {
  int64_t out_block = ir::ChannelBlock(l.out), in_block = ir::ChannelBlock(l.data);
  std::string kernel = BlockedKernelLayout(1, out_block);
  if (!p.float32) {
    *why = "the kernel computes float32 only";
  } else if (SmallGroup(p) == 0) {
    *why = "it is not a convolution of groups of 2 or 4 channels in and out";
  } else if ((out_block != 8 && out_block != 16) || in_block != out_block) {
    *why = "the data and output blocks must be equal, 8 or 16";
  } else if (l.kernel != kernel) {
    *why = "the kernel layout must be " + kernel;
  } else {
    return true;
  }
  return false;
}

// Plain data with at least this many channels is blocked first (a layout_transform): read plain,
// each input channel is a load from its own plane and a pass of the loops around it, which costs
// more than the transform (ShuffleNet's 1x1 convolutions after a channel shuffle, 464 -> 1024 on
// 7x7: 8 GFLOP/s with plain data). Fewer channels, as an image's 3, are read plain.
constexpr int64_t kMinBlockedInputChannels = 16;

// Any other: the data as its producer gives it (blocked first when it is plain with many
// channels), the weight packed for that.
Conv2DLayouts DirectLayouts(const Conv2DProblem& p, const KernelConfig& config, int64_t producer_block) {
  int64_t block = OutBlock(config.conv_block, p.out_channels);
  int64_t in_block = producer_block;
  if (in_block == 0 && p.channels >= kMinBlockedInputChannels) in_block = OutBlock(config.conv_block, p.channels);
  return {ir::BlockedDataLayout(in_block), BlockedKernelLayout(in_block == 0 ? 1 : in_block, block),
          ir::BlockedDataLayout(block)};
}

// Grouped (not depthwise): each output block within one group, the data in a block that fills
// each group's input channels (the producer's when it does, else 16 or 8, else plain NCHW), the
// weight packed per group.
int64_t GroupOutBlock(const Conv2DProblem& p, const KernelConfig& config) {
  return p.groups > 1 && p.out_channels % p.groups == 0 ? OutBlock(config.conv_block, p.out_channels / p.groups) : 0;
}

int64_t GroupInBlock(const Conv2DProblem& p, int64_t producer_block) {
  int64_t per_group = p.channels / p.groups;
  if (producer_block != 0 && per_group % producer_block == 0) return producer_block;
  for (int64_t block : {16, 8}) {
    if (per_group % block == 0) return block;
  }
  return 0;
}

bool GroupedApplies(const Conv2DProblem& p, const KernelConfig& config) {
  return p.float32 && !p.depthwise() && p.channels % p.groups == 0 && GroupOutBlock(p, config) != 0;
}

Conv2DLayouts GroupedLayouts(const Conv2DProblem& p, const KernelConfig& config, int64_t producer_block) {
  int64_t in_block = GroupInBlock(p, producer_block), out_block = GroupOutBlock(p, config);
  return {ir::BlockedDataLayout(in_block), BlockedKernelLayout(in_block == 0 ? 1 : in_block, out_block),
          ir::BlockedDataLayout(out_block)};
}

bool GroupedComputes(const Conv2DProblem& p, const Conv2DLayouts& l, std::string* why) {
  int64_t out_block = ir::ChannelBlock(l.out), in_block = std::max<int64_t>(1, ir::ChannelBlock(l.data));
  std::string kernel = BlockedKernelLayout(in_block, out_block);
  if (!p.float32) {
    *why = "the kernel computes float32 only";
  } else if (p.groups < 2 || p.depthwise()) {
    *why = "it is not a grouped convolution (more than one group, not depthwise)";
  } else if (out_block != 8 && out_block != 16) {
    *why = "the output block must be 8 or 16";
  } else if ((p.out_channels / p.groups) % out_block != 0 || (p.channels / p.groups) % in_block != 0) {
    *why = "each group's channels must fill whole blocks";
  } else if (l.kernel != kernel) {
    *why = "the kernel layout must be " + kernel;
  } else {
    return true;
  }
  return false;
}

bool PointwiseApplies(const Conv2DProblem& p, const KernelConfig& config) {
  return p.float32 && p.groups == 1 && p.kernel_h == 1 && p.kernel_w == 1 &&
         OutBlock(config.conv_block, p.out_channels) != 0;
}

bool DirectApplies(const Conv2DProblem& p, const KernelConfig& config) {
  return p.float32 && p.groups == 1 && OutBlock(config.conv_block, p.out_channels) != 0;
}

// What Conv2DNCHWc computes: output block 8 or 16; a depthwise convolution with the data in the
// output's block, any other with one group and the weight packed for the data's block.
bool BlockedComputes(const Conv2DProblem& p, const Conv2DLayouts& l, bool depthwise, std::string* why) {
  int64_t out_block = ir::ChannelBlock(l.out), in_block = ir::ChannelBlock(l.data);
  std::string kernel = BlockedKernelLayout(depthwise || in_block == 0 ? 1 : in_block, out_block);
  if (!p.float32) {
    *why = "the kernel computes float32 only";
  } else if (out_block != 8 && out_block != 16) {
    *why = "the output block must be 8 or 16";
  } else if (l.kernel != kernel) {
    *why = "the kernel layout must be " + kernel;
  } else if (depthwise && (!p.depthwise() || in_block != out_block)) {
    *why = "a depthwise convolution needs as many groups as channels, and equal data and output blocks";
  } else if (!depthwise && p.groups != 1) {
    *why = "a grouped convolution needs the grouped or the depthwise implementation";
  } else {
    return true;
  }
  return false;
}

bool DepthwiseComputes(const Conv2DProblem& p, const Conv2DLayouts& l, std::string* why) {
  return BlockedComputes(p, l, true, why);
}

bool DirectComputes(const Conv2DProblem& p, const Conv2DLayouts& l, std::string* why) {
  return BlockedComputes(p, l, false, why);
}

bool PointwiseComputes(const Conv2DProblem& p, const Conv2DLayouts& l, std::string* why) {
  if (p.kernel_h != 1 || p.kernel_w != 1) {
    *why = "the kernel is not 1x1";
    return false;
  }
  return BlockedComputes(p, l, false, why);
}

// ---- Winograd (Conv2DWinograd) -----------------------------------------------------------------

// Output planes at least this wide and high. On 7x7 planes (4 tiles of 4x4 covering 8x8) a layer of
// 512 channels took 0.79x the direct kernel's time with its weights in cache, but ResNet-18's
// three such layers took as long as direct ones (AVX2, 1 core), their weights in Winograd's domain
// being 4x as large (37.7 MB each): those keep the direct kernel, and the smaller library.
constexpr int64_t kMinWinogradPlane = 8;

// 3x3 at stride 1, one group, a constant weight (transformed when the library is built), input
// channels that are read blocked (16 or more, in blocks of 8 or 16).
bool WinogradApplies(const Conv2DProblem& p, const KernelConfig& config) {
  return p.float32 && p.constant_weight && p.groups == 1 && p.kernel_h == 3 && p.kernel_w == 3 &&
         p.strides == std::vector<int64_t>{1, 1} && p.dilation == std::vector<int64_t>{1, 1} &&
         p.channels >= kMinBlockedInputChannels && p.channels % 8 == 0 && p.out_h >= kMinWinogradPlane &&
         p.out_w >= kMinWinogradPlane && OutBlock(config.conv_block, p.out_channels) != 0;
}

// The data in the producer's block when it is 8 or 16, else in the target's; the output in the
// target's block. (The weight layout is Winograd's, not a layout string: see WinogradWeightOf.)
Conv2DLayouts WinogradLayouts(const Conv2DProblem& p, const KernelConfig& config, int64_t producer_block) {
  int64_t in_block = (producer_block == 8 || producer_block == 16) && p.channels % producer_block == 0
                         ? producer_block
                         : OutBlock(config.conv_block, p.channels);
  int64_t block = OutBlock(config.conv_block, p.out_channels);
  return {ir::BlockedDataLayout(in_block), "", ir::BlockedDataLayout(block)};
}

bool WinogradComputes(const Conv2DProblem&, const Conv2DLayouts&, std::string* why) {
  *why = "it computes nn.conv2d_winograd calls, which AlterOpLayout writes";
  return false;
}

// ---- NCHW (Conv2D) ----------------------------------------------------------------------------

bool PlainDepthwiseApplies(const Conv2DProblem& p, const KernelConfig&) {
  return p.float32 && p.groups > 1 && p.groups == p.channels && p.out_channels % p.channels == 0;
}

bool PlainApplies(const Conv2DProblem& p, const KernelConfig&) { return p.float32; }

Conv2DLayouts PlainLayouts(const Conv2DProblem&, const KernelConfig&, int64_t) { return kPlain; }

bool PlainComputes(const Conv2DProblem& p, const Conv2DLayouts& l, std::string* why) {
  if (!p.float32) {
    *why = "the kernel computes float32 only";
  } else if (!(l == kPlain)) {
    *why = "the layouts must be NCHW, OIHW and NCHW";
  } else {
    return true;
  }
  return false;
}

// Non-overlapping windows of at least 4x4 (a vision transformer's patch embedding, 16x16 at stride
// 16): the im2col copy is then a permutation of the image, no element copied twice, and the
// product runs at the matrix product's rate.
bool PatchesApplies(const Conv2DProblem& p, const KernelConfig&) {
  return p.float32 && p.groups == 1 && p.kernel_h >= 4 && p.kernel_w >= 4 &&
         p.strides == std::vector<int64_t>{p.kernel_h, p.kernel_w} && p.dilation == std::vector<int64_t>{1, 1} &&
         p.padding == std::vector<int64_t>{0, 0, 0, 0};
}

bool PatchesComputes(const Conv2DProblem& p, const Conv2DLayouts& l, std::string* why) {
  if (!PlainComputes(p, l, why)) return false;
  if (PatchesApplies(p, kernels::kBaselineConfig)) return true;
  *why = "its windows overlap, are padded, grouped or smaller than 4x4";
  return false;
}

bool PlainDepthwiseComputes(const Conv2DProblem& p, const Conv2DLayouts& l, std::string* why) {
  if (!PlainComputes(p, l, why)) return false;
  if (PlainDepthwiseApplies(p, kernels::kBaselineConfig)) return true;
  *why = "it is not a depthwise convolution (one group per input channel)";
  return false;
}

}  // namespace

const char* const kConv2DWinogradName = "conv2d.nchwc_winograd";

Conv2DProblem Conv2DProblemOf(const ir::CallNode& call) {
  const ir::Attrs& attrs = call.attrs;
  ir::Layout data_layout = ir::Layout::Parse(attrs.GetString("data_layout"));
  ir::Layout kernel_layout = ir::Layout::Parse(attrs.GetString("kernel_layout"));
  runtime::Check(data_layout.primal() == "NCHW" && kernel_layout.primal() == "OIHW", "nn.conv2d with data layout ",
                 data_layout.name(), " and kernel layout ", kernel_layout.name(),
                 " is not supported by the host code generator (NCHW and OIHW, blocked or not)");
  std::vector<int64_t> data = data_layout.ToPrimal(call.args[0]->type().tensor().shape);
  std::vector<int64_t> weight = kernel_layout.ToPrimal(call.args[1]->type().tensor().shape);
  std::string out_name = attrs.GetString("out_layout").empty() ? data_layout.name() : attrs.GetString("out_layout");
  std::vector<int64_t> out = ir::Layout::Parse(out_name).ToPrimal(call.type().tensor().shape);
  Conv2DProblem p;
  p.batch = data[0];
  p.channels = data[1];
  p.height = data[2];
  p.width = data[3];
  p.out_channels = weight[0];
  p.kernel_h = weight[2];
  p.kernel_w = weight[3];
  p.out_h = out[2];
  p.out_w = out[3];
  p.groups = attrs.GetInt("groups");
  p.strides = attrs.GetInts("strides");
  p.dilation = attrs.GetInts("dilation");
  p.padding = attrs.GetInts("padding");
  p.float32 = IsFloat32(call.args[0]) && IsFloat32(call.args[1]);
  p.constant_weight = call.args[1]->As<ir::ConstantNode>() != nullptr;
  return p;
}

Conv2DLayouts Conv2DLayoutsOf(const ir::CallNode& call) {
  const ir::Attrs& attrs = call.attrs;
  const std::string& out = attrs.GetString("out_layout");
  return {attrs.GetString("data_layout"), attrs.GetString("kernel_layout"),
          out.empty() ? attrs.GetString("data_layout") : out};
}

const std::vector<Conv2DImplementation>& Conv2DImplementations() {
  static const std::vector<Conv2DImplementation> list = {
      {"conv2d.nchwc_depthwise", Conv2DKernel::kConv2DNCHWcDepthwise, DepthwiseApplies, DepthwiseLayouts, DepthwiseComputes},
      {"conv2d.nchwc_small_groups", Conv2DKernel::kConv2DNCHWcDepthwise, SmallGroupsApplies, DepthwiseLayouts,
       SmallGroupsComputes},
      {"conv2d.nchwc_1x1", Conv2DKernel::kConv2DNCHWc, PointwiseApplies, DirectLayouts, PointwiseComputes},
      {kConv2DWinogradName, Conv2DKernel::kConv2DWinograd, WinogradApplies, WinogradLayouts, WinogradComputes},
      {"conv2d.nchw_patches_gemm", Conv2DKernel::kConv2D, PatchesApplies, PlainLayouts, PatchesComputes},
      {"conv2d.nchwc_direct", Conv2DKernel::kConv2DNCHWc, DirectApplies, DirectLayouts, DirectComputes},
      {"conv2d.nchwc_grouped", Conv2DKernel::kConv2DNCHWc, GroupedApplies, GroupedLayouts, GroupedComputes},
      {"conv2d.nchw_depthwise", Conv2DKernel::kConv2DDepthwise, PlainDepthwiseApplies, PlainLayouts, PlainDepthwiseComputes},
      {"conv2d.nchw_im2col_gemm", Conv2DKernel::kConv2D, PlainApplies, PlainLayouts, PlainComputes},
  };
  return list;
}

const Conv2DImplementation* ChooseConv2D(const Conv2DProblem& problem, const KernelConfig& config) {
  for (const Conv2DImplementation& implementation : Conv2DImplementations()) {
    if (implementation.applies(problem, config)) return &implementation;
  }
  return nullptr;
}

const Conv2DImplementation& Conv2DImplementationOf(const ir::CallNode& call) {
  Conv2DProblem problem = Conv2DProblemOf(call);
  Conv2DLayouts layouts = Conv2DLayoutsOf(call);
  std::string described = "nn.conv2d with data layout " + layouts.data + ", kernel layout " + layouts.kernel +
                          " and output layout " + layouts.out;
  const std::string& name = call.attrs.GetString("implementation");
  std::string names, reasons;
  for (const Conv2DImplementation& implementation : Conv2DImplementations()) {
    names += (names.empty() ? "" : ", ") + std::string(implementation.name);
    if (!name.empty() && name != implementation.name) continue;
    std::string why;
    if (implementation.computes(problem, layouts, &why)) return implementation;
    runtime::Check(name.empty(), described, ": its implementation ", name, " does not compute it: ", why);
    reasons += (reasons.empty() ? "" : "; ") + std::string(implementation.name) + ": " + why;
  }
  runtime::Check(name.empty(), "nn.conv2d: unknown implementation '", name, "' (known: ", names, ")");
  runtime::Fail(described, " is not supported by the host code generator (", reasons, ")");
}

kernels::Conv2DParams Conv2DKernelParams(const ir::CallNode& call, const Conv2DImplementation& implementation) {
  Conv2DProblem p = Conv2DProblemOf(call);
  bool depthwise = implementation.kernel == Conv2DKernel::kConv2DDepthwise;
  runtime::CheckInternal(depthwise || implementation.kernel == Conv2DKernel::kConv2D, "Conv2DKernelParams for ",
                         implementation.name);
  return {p.batch,          p.channels,       p.height,         p.width,         p.out_channels,
          p.kernel_h,       p.kernel_w,       p.out_h,          p.out_w,         p.strides[0],
          p.strides[1],     p.dilation[0],    p.dilation[1],    p.padding[0],    p.padding[1],
          p.groups,         depthwise};
}

kernels::Conv2DNCHWcParams Conv2DNCHWcKernelParams(const ir::CallNode& call, const Conv2DImplementation& implementation,
                                                   const KernelConfig& config) {
  Conv2DProblem p = Conv2DProblemOf(call);
  Conv2DLayouts l = Conv2DLayoutsOf(call);
  bool depthwise = implementation.kernel == Conv2DKernel::kConv2DNCHWcDepthwise;
  runtime::CheckInternal(depthwise || implementation.kernel == Conv2DKernel::kConv2DNCHWc,
                         "Conv2DNCHWcKernelParams for ", implementation.name);
  int64_t in_block = ir::ChannelBlock(l.data);
  // The input extent the windows cover, padding included.
  int64_t height = (p.out_h - 1) * p.strides[0] + (p.kernel_h - 1) * p.dilation[0] + 1;
  int64_t width = (p.out_w - 1) * p.strides[1] + (p.kernel_w - 1) * p.dilation[1] + 1;
  bool padded = p.padding[0] > 0 || p.padding[1] > 0 || p.height + p.padding[0] < height ||
                p.width + p.padding[1] < width;
  bool one_by_one = p.kernel_h == 1 && p.kernel_w == 1;
  bool strided = p.strides[0] > 1 || p.strides[1] > 1;
  // Checking the taps of border tiles costs more than a copy with the zeros written out (measured
  // on ResNet's layers); depthwise convolutions read too little to repay it.
  bool copy_padded = !depthwise && padded;
  bool gather_strided = !depthwise && one_by_one && !padded && strided;
  // A pointwise plane (after the copy) may run as one row (the kernel does when it is small), so
  // that tiles need not stop at row ends.
  bool flat_plane = one_by_one && (!strided || gather_strided) && (!padded || copy_padded);
  kernels::Conv2DNCHWcParams params{p.batch,     p.channels,   p.height,       p.width,       in_block == 0 ? 1 : in_block,
                                    p.out_channels, ir::ChannelBlock(l.out), p.kernel_h, p.kernel_w, p.out_h,
                                    p.out_w,     p.strides[0], p.strides[1],   p.dilation[0], p.dilation[1],
                                    p.padding[0], p.padding[1], p.groups,      depthwise,     copy_padded,
                                    gather_strided, flat_plane};
  // Paired groups of one block skip the padding themselves (their tiles at a row's ends).
  if (kernels::PairsOneBlockGroups(params, config)) params.copy_padded = false;
  return params;
}

runtime::NDArray WinogradWeightOf(const runtime::NDArray& weight, int64_t in_block, int64_t out_block) {
  const std::vector<int64_t>& shape = weight.shape();
  runtime::CheckInternal(weight.dtype() == runtime::kFloat32 && shape.size() == 4 && shape[2] == 3 && shape[3] == 3 &&
                             shape[0] % out_block == 0 && shape[1] % in_block == 0,
                         "WinogradWeightOf: a float32 OIHW 3x3 weight whose channels fill the blocks");
  runtime::NDArray out = runtime::NDArray::Empty(
      {kernels::kWinogradPoints, shape[0] / out_block, shape[1] / in_block, in_block, out_block}, runtime::kFloat32);
  kernels::WinogradWeight(shape[0], shape[1], in_block, out_block, static_cast<const float*>(weight.data()),
                          static_cast<float*>(out.data()));
  return out;
}

kernels::Conv2DWinogradParams Conv2DWinogradKernelParams(const ir::CallNode& call) {
  const std::vector<int64_t>& data = call.args[0]->type().tensor().shape;  // [N, C / ib, H, W, ib]
  const std::vector<int64_t>& out = call.type().tensor().shape;            // [N, O / ob, OH, OW, ob]
  const std::vector<int64_t>& padding = call.attrs.GetInts("padding");
  return {data[0], data[1] * data[4], data[2], data[3], data[4], out[1] * out[4], out[4], out[2], out[3],
          padding[0], padding[1]};
}

const char* const kConv2DPointwiseDepthwiseName = "conv2d.nchwc_pointwise_depthwise";

kernels::Conv2DPointwiseDepthwiseParams Conv2DPointwiseDepthwiseKernelParams(const ir::CallNode& call) {
  const std::vector<int64_t>& data = call.args[0]->type().tensor().shape;       // [N, C / ib, H, W, ib]
  const std::vector<int64_t>& depthwise = call.args[3]->type().tensor().shape;  // [E / 16, 1, KH, KW, 1, 16]
  const std::vector<int64_t>& out = call.type().tensor().shape;                 // [N, E / 16, OH, OW, 16]
  const std::vector<int64_t>& strides = call.attrs.GetInts("strides");
  const std::vector<int64_t>& dilation = call.attrs.GetInts("dilation");
  const std::vector<int64_t>& padding = call.attrs.GetInts("padding");
  return {data[0],
          data[1] * data[4],
          data[4],
          data[2],
          data[3],
          out[1] * out[4],
          depthwise[2],
          depthwise[3],
          out[2],
          out[3],
          strides[0],
          strides[1],
          dilation[0],
          dilation[1],
          padding[0],
          padding[1],
          call.attrs.GetString("activation") == "swish",
          static_cast<float>(call.attrs.GetFloat("a_min")),
          static_cast<float>(call.attrs.GetFloat("a_max"))};
}

}  // namespace kiln::strategy
