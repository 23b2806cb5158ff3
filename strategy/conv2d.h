// The implementations of nn.conv2d, in one ordered list (TVM's op strategy; oneDNN's
// cpu_convolution_list): each with its condition on shapes, attributes and the target's kernel
// configuration, the layouts it computes in (the weight layout included) and the kernel it calls
// with its parameters. AlterOpLayout asks which implementation to use, lays the call out as it
// says and writes its name into the call's `implementation` attribute; lowering plans the named
// implementation's kernel call, or, for a call no choice was made for, the first implementation
// that computes the call as it is laid out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/expr.h"
#include "kernels/kernel_config.h"
#include "kernels/kernels.h"
#include "runtime/ndarray.h"

namespace kiln::strategy {

// An nn.conv2d in its primal form: data [N, C, H, W], weight [O, C / groups, KH, KW].
struct Conv2DProblem {
  int64_t batch = 0, channels = 0, height = 0, width = 0;
  int64_t out_channels = 0, kernel_h = 0, kernel_w = 0, out_h = 0, out_w = 0, groups = 1;
  std::vector<int64_t> strides, dilation, padding;  // padding: top, left, bottom, right
  bool float32 = false;                             // data and weight
  bool constant_weight = false;                     // so that it can be transformed at build time

  bool depthwise() const { return groups > 1 && groups == channels && out_channels == channels; }
};
// The problem of `call`, whatever layouts it is in (their primal forms must be NCHW and OIHW;
// throws Error otherwise).
Conv2DProblem Conv2DProblemOf(const ir::CallNode& call);

// The layouts of a convolution's data, weight and output ("NCHW", "OIHW"; blocked: "NCHW8c",
// "OIHW8i16o", "NCHW16c"; see kernels.h).
struct Conv2DLayouts {
  std::string data, kernel, out;
  bool operator==(const Conv2DLayouts& other) const {
    return data == other.data && kernel == other.kernel && out == other.out;
  }
};
// The layouts `call` is in (an empty out_layout is the data layout).
Conv2DLayouts Conv2DLayoutsOf(const ir::CallNode& call);

// The kernels that compute convolutions (kernels/conv/), and their variants.
enum class Conv2DKernel {
  kConv2D,                // NCHW / OIHW: im2col + GEMM per group
  kConv2DDepthwise,       // Conv2D per channel (depthwise)
  kConv2DNCHWc,           // blocked layouts, with a fused epilogue
  kConv2DNCHWcDepthwise,  // Conv2DNCHWc, block-local: depthwise, or groups of 2 or 4 channels
  kConv2DWinograd,        // blocked layouts, F(4x4, 3x3): AlterOpLayout writes nn.conv2d_winograd
};

struct Conv2DImplementation {
  const char* name;
  Conv2DKernel kernel;
  // Whether to choose it for `problem` on a target of `config`.
  bool (*applies)(const Conv2DProblem& problem, const kernels::KernelConfig& config);
  // The layouts it wants when the data comes with channel block `producer_block` (0: NCHW).
  Conv2DLayouts (*layouts)(const Conv2DProblem& problem, const kernels::KernelConfig& config, int64_t producer_block);
  // Whether its kernel computes `problem` in `layouts`; `why` says what does not fit otherwise.
  bool (*computes)(const Conv2DProblem& problem, const Conv2DLayouts& layouts, std::string* why);
};

// Every implementation, preferred first; the last applies to every float32 convolution.
const std::vector<Conv2DImplementation>& Conv2DImplementations();

// The first implementation that applies; null when none does (not float32).
const Conv2DImplementation* ChooseConv2D(const Conv2DProblem& problem, const kernels::KernelConfig& config);

// The implementation that computes `call` as it is laid out: the one its `implementation`
// attribute names, else the first whose kernel computes it. Throws Error saying why when the
// named one does not compute it, the name is unknown or no implementation computes it.
const Conv2DImplementation& Conv2DImplementationOf(const ir::CallNode& call);

// The parameters of the kernel of `implementation` (which computes `call`): Conv2D's for kConv2D
// and kConv2DDepthwise, Conv2DNCHWc's for the others.
kernels::Conv2DParams Conv2DKernelParams(const ir::CallNode& call, const Conv2DImplementation& implementation);
kernels::Conv2DNCHWcParams Conv2DNCHWcKernelParams(const ir::CallNode& call, const Conv2DImplementation& implementation,
                                                   const kernels::KernelConfig& config);

// The implementation that AlterOpLayout computes as an nn.conv2d_winograd call (kConv2DWinograd).
extern const char* const kConv2DWinogradName;
// A constant OIHW 3x3 float32 weight in Winograd's domain, as that call takes it
// (kernels/conv/winograd.h), for data in blocks of `in_block` channels and output in `out_block`.
runtime::NDArray WinogradWeightOf(const runtime::NDArray& weight, int64_t in_block, int64_t out_block);
// The parameters of Conv2DWinograd for an nn.conv2d_winograd call.
kernels::Conv2DWinogradParams Conv2DWinogradKernelParams(const ir::CallNode& call);

// The implementation of nn.conv2d_pointwise_depthwise calls, which FusePointwiseDepthwise writes
// where the kernel computes them (kernels::PointwiseDepthwiseComputes on the target's
// configuration), and the parameters of Conv2DPointwiseDepthwise for one.
extern const char* const kConv2DPointwiseDepthwiseName;
kernels::Conv2DPointwiseDepthwiseParams Conv2DPointwiseDepthwiseKernelParams(const ir::CallNode& call);

}  // namespace kiln::strategy
