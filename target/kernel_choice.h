// Kernel selection: the one place that says which kernel variant computes a call. AlterOpLayout
// asks it which layouts to create (the channel block of blocked convolutions, whether to pack a
// dense weight), lowering asks it which kernel computes a call in the layouts it has, and
// whether an elementwise loop is worth splitting across threads.
#pragma once

#include <cstdint>
#include <string>

#include "target/target.h"

namespace kiln::target {

// The channel block blocked convolutions prefer on `target`: 16 when a vector holds 8 floats or
// more (one AVX-512 register, or two AVX2 registers per row of the micro-kernel), else 8.
int64_t PreferredConvBlock(const Target& target);

// The output block of a blocked convolution with `out_channels` channels when `block` (8 or 16)
// is preferred: `block` when it divides the channels, else half of it when that is 8 or more and
// divides them; 0 when neither does (the convolution stays plain).
int64_t ConvOutputBlock(int64_t block, int64_t out_channels);

// The convolution kernels (kernels/conv/).
enum class ConvKernel {
  kDirect,   // Conv2D: NCHW data, OIHW weights, NCHW output
  kBlocked,  // Conv2DNCHWc: NCHW[x]c data or output, or packed weights
};
ConvKernel ConvKernelFor(const std::string& data_layout, const std::string& kernel_layout,
                         const std::string& out_layout);

// The layout a constant float32 dense weight of `n` output features is packed into ahead of time
// ("NK16n": panels of the packed matrix kernel), or "" to keep it as it is ("NK").
std::string PackedDenseLayout(int64_t n);

// The matrix kernels (kernels/gemm/) for a dense weight layout.
enum class DenseKernel {
  kGemm,        // weight [N, K] ("NK"), read transposed
  kGemmPacked,  // weight packed as "NK16n"
  kNone,        // no kernel reads this layout
};
DenseKernel DenseKernelFor(const std::string& weight_layout);

// Whether an elementwise loop over `elements` values is split across threads. Not a question of
// the target's cores: the runtime's thread count decides where the model runs, and with one
// thread the split loop runs on the calling thread.
bool SplitElementwiseLoop(int64_t elements);

}  // namespace kiln::target
