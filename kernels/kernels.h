// The CPU kernels that generated operator code calls. The sources of those a model library calls
// (kernels/sources.txt) are compiled with its generated code, with the model's target flags (so
// `-march` applies to them too), and cached. They reach the runtime only through the context pointers of
// backend_api.h, so a model library has no undefined runtime symbols.
//
// All tensors are dense row-major float32 unless noted; pointers are 64-byte aligned by the
// runtime's contract. Work is split across threads with TVMBackendParallelLaunch.
//
// A parameter struct lists its fields once more, in order, in Fields(): the code generator writes
// the struct through it, and fails to compile when it misses a field
// (backend/codegen/kernel_params.h).
#pragma once

#include <cstdint>
#include <tuple>

#include "kernels/kernel_config.h"

namespace kiln::kernels {

// C[M, N] = A[M, K] * B (B is [K, N], or [N, K] when b_transposed; A is [K, M] when
// a_transposed); row strides lda, ldb, ldc. C must not overlap A or B (B is read while C is
// written). Returns non-zero (with the error message set) when the workspace for packing A or B is
// not available.
int Gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool a_transposed, const float* b, int64_t ldb,
         bool b_transposed, float* c, int64_t ldc);
// `batch` products as Gemm's, C + i * c_stride = (A + i * a_stride) * (B + i * b_stride); a
// stride of 0 shares one matrix among all products. All products run in one parallel launch.
int BatchGemm(int64_t batch, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, int64_t a_stride,
              bool a_transposed, const float* b, int64_t ldb, int64_t b_stride, bool b_transposed, float* c,
              int64_t ldc, int64_t c_stride);

// BatchGemm's products on int32, exact modulo 2^32, and on float64 (gemm/gemm_plain.cc).
int BatchGemmInt32(int64_t batch, int64_t m, int64_t n, int64_t k, const int32_t* a, int64_t lda, int64_t a_stride,
                   bool a_transposed, const int32_t* b, int64_t ldb, int64_t b_stride, bool b_transposed, int32_t* c,
                   int64_t ldc, int64_t c_stride);
int BatchGemmFloat64(int64_t batch, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, int64_t a_stride,
                     bool a_transposed, const double* b, int64_t ldb, int64_t b_stride, bool b_transposed, double* c,
                     int64_t ldc, int64_t c_stride);

// The column panel of packed matrices: B packed is [ceil(N / 16), K, 16], column j of B at
// [j / 16, :, j % 16], zeros past N. A dense weight [N, K] with N a multiple of 16 packs to this
// as layout "NK16n".
constexpr int kGemmPanel = kCompiledConfig.gemm_panel;
// C[M, N] = epilogue(A[M, K] * B) with B packed; row strides lda, ldc. A dense layer: the steps
// are applied to each tile of C once its sums are complete, a kChannel operand holding one value
// per column of C (the layer's output feature: its bias), a kTensor operand C's layout (a
// residual).
struct EpilogueStep;
int GemmPacked(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b_packed, float* c,
               int64_t ldc, const EpilogueStep* epilogue, int epilogue_size);

// Scaled dot-product attention, fused (gemm/attention.cc): for each batch b < batch and head n <
// heads, out[s, :] = softmax_t(scale * q[s, :] . k[t, :] + bias[s, t]) * v[t, :] over queries s <
// queries and keys t < keys; q and k rows of head_size, v and out rows of value_size. Each operand
// is read (and out written) where it lies: element [b, n, i, j] of X at X + X_offset + b * X_b +
// n * X_n + i * X_i + j * X_j (so the heads of a packed QKV projection, or keys laid out
// transposed, need no copy; a stride of 0 broadcasts). The scores of a block of queries stay in
// cache: they are never written out.
struct AttentionParams {
  int64_t batch, heads, queries, keys, head_size, value_size;
  float scale;
  int64_t q_offset, q_b, q_n, q_s, q_h;
  int64_t k_offset, k_b, k_n, k_t, k_h;
  int64_t v_offset, v_b, v_n, v_t, v_v;
  int64_t bias_offset, bias_b, bias_n, bias_s, bias_t;
  int64_t out_offset, out_b, out_n, out_s, out_v;
  auto Fields() const {
    return std::tie(batch, heads, queries, keys, head_size, value_size, scale, q_offset, q_b, q_n, q_s, q_h,
                    k_offset, k_b, k_n, k_t, k_h, v_offset, v_b, v_n, v_t, v_v, bias_offset, bias_b, bias_n, bias_s,
                    bias_t, out_offset, out_b, out_n, out_s, out_v);
  }
};
// Returns non-zero (with the error message set) when its workspace is not available. out must not
// overlap the inputs. Attention has no bias (its bias strides unread).
int Attention(const AttentionParams& p, const float* q, const float* k, const float* v, float* out);
int AttentionWithBias(const AttentionParams& p, const float* q, const float* k, const float* v, const float* bias,
                      float* out);

struct Conv2DParams {
  int64_t batch, in_channels, in_height, in_width;
  int64_t out_channels, kernel_height, kernel_width;
  int64_t out_height, out_width;
  int64_t stride_h, stride_w, dilation_h, dilation_w;
  int64_t pad_top, pad_left;
  int64_t groups;
  bool depthwise;  // groups == in_channels > 1: per channel (multiplier out / in), not a product per group
  static constexpr const char* kSampleField = "batch";  // counts samples (kernel_params.h)
  auto Fields() const {
    return std::tie(batch, in_channels, in_height, in_width, out_channels, kernel_height, kernel_width, out_height,
                    out_width, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, groups, depthwise);
  }
};
struct EpilogueStep;
// out[N, O, OH, OW] = epilogue(conv(data[N, C, H, W], weight[O, C / groups, KH, KW])), the
// epilogue's steps (EpilogueStep below: a kChannel operand one value per output channel, a kTensor
// one of the output's shape) applied by the matrix product to each tile of its result; returns
// non-zero on failure (out of workspace memory) after setting the error message.
int Conv2D(const Conv2DParams& p, const float* data, const float* weight, float* out, const EpilogueStep* epilogue,
           int epilogue_size);

// Transposed convolution (the gradient of a convolution with respect to its input), up to three
// spatial axes: 2-D data is 3-D with a depth of 1, 1-D with a height of 1 too. Input element i
// reaches output element i * stride - pad + k * dilation through tap k; output padding is only
// the output's larger extent. Computed as one matrix product per group into columns
// [O / groups * KD * KH * KW, D * H * W], then each column added at the outputs it reaches (no
// zero-stuffed input: at stride 2 three of four of its products would be zeros). The epilogue
// (EpilogueStep below: a kChannel operand one value per output channel, a kTensor one of the
// output's shape) is applied to each output row once its sums are complete.
struct ConvTransposeParams {
  int64_t batch, in_channels, out_channels, groups;
  int64_t in_depth, in_height, in_width, out_depth, out_height, out_width;
  int64_t kernel_depth, kernel_height, kernel_width;
  int64_t stride_d, stride_h, stride_w, dilation_d, dilation_h, dilation_w;
  int64_t pad_front, pad_top, pad_left;
  static constexpr const char* kSampleField = "batch";  // counts samples (kernel_params.h)
  auto Fields() const {
    return std::tie(batch, in_channels, out_channels, groups, in_depth, in_height, in_width, out_depth, out_height,
                    out_width, kernel_depth, kernel_height, kernel_width, stride_d, stride_h, stride_w, dilation_d,
                    dilation_h, dilation_w, pad_front, pad_top, pad_left);
  }
};
// out[N, O, OD, OH, OW] = conv_transpose(data[N, C, D, H, W], weight[C, O / groups, KD, KH, KW]);
// returns non-zero on failure (out of workspace memory) after setting the error message.
struct EpilogueStep;
int ConvTranspose(const ConvTransposeParams& p, const float* data, const float* weight, float* out,
                  const EpilogueStep* epilogue, int epilogue_size);

struct Pool2DParams {
  int64_t batch_channels, in_height, in_width, out_height, out_width;
  int64_t pool_h, pool_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, pad_bottom, pad_right;
  bool count_include_pad;  // average: divide by the window clipped to the padded input
  static constexpr const char* kSampleField = "batch_channels";  // counts samples (kernel_params.h)
  auto Fields() const {
    return std::tie(batch_channels, in_height, in_width, out_height, out_width, pool_h, pool_w, stride_h, stride_w,
                    dilation_h, dilation_w, pad_top, pad_left, pad_bottom, pad_right, count_include_pad);
  }
};
void MaxPool2D(const Pool2DParams& p, const float* data, float* out);
void AvgPool2D(const Pool2DParams& p, const float* data, float* out);
// Either, element by element, over planes of `block` interleaved channels (1: NCHW; the
// NCHW[x]c kernels below use it for blocks without a vector form).
void Pool2DElementwise(const Pool2DParams& p, int64_t block, const float* data, float* out, bool average);

// ---- Blocked layouts (conv2d_nchwc.cc, pool_nchwc.cc) ---------------------------------------
// Data in NCHW[x]c is [N, C / x, H, W, x]; x = 1 is plain NCHW. Convolution weights are
// [O / ob, (C / groups) / ib, KH, KW, ib, ob] ("OIHW{ib}i{ob}o" of the OIHW weight
// [O, C / groups, KH, KW]) with ib the data's block, each group's channels whole blocks on both
// sides, or for a block-local convolution (`depthwise`: C == O, ib == ob, C / groups = G of 1, 2
// or 4 channels per group, each group inside one block) [O / ob, G, KH, KW, 1, ob].
// The output block ob is 8 or 16.

// An elementwise op applied to a convolution's result while it is in registers, in order:
// result = op(result, operand), or for kReverseSubtract operand - result.
struct EpilogueStep {
  enum Op : int {
    kAdd, kSubtract, kReverseSubtract, kMultiply, kMaximum, kMinimum, kRelu, kClip, kSwish, kGelu, kHardSwish, kSigmoid
  };
  enum Operand : int {
    kNone,     // relu, clip, swish (x * sigmoid(x)), gelu, hard swish, sigmoid
    kScalar,   // data[0]
    kChannel,  // data[o]: one value per output channel (a [O] or [1, O / ob, 1, 1, ob] tensor)
    kTensor,   // data of the output's shape and layout (e.g. a residual)
  };
  Op op;
  Operand operand;
  const float* data;
  float lo, hi;  // kClip bounds
};

// C[M, N] = epilogue(A[M, K] * B[K, N]), row strides lda, ldb, ldc: the steps applied to each
// tile of C once its sums are complete, while it is in cache, a kChannel operand holding one value
// per row of C (a convolution's output channel) and a kTensor operand C's layout. Fails as Gemm.
int GemmWithEpilogue(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                     float* c, int64_t ldc, const EpilogueStep* epilogue, int epilogue_size);

struct Conv2DNCHWcParams {
  int64_t batch, in_channels, in_height, in_width, in_block;
  int64_t out_channels, out_block, kernel_height, kernel_width, out_height, out_width;
  int64_t stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, groups;
  // Block-local: output block b reads only input block b. A depthwise convolution (one channel per
  // group), or one of groups of 2 or 4 channels (in_channels / groups), in and out.
  bool depthwise;
  // How the input is read, chosen with the implementation (strategy/conv2d.cc): copied first with
  // its padding written out as zeros, so that no tile checks its taps (not depthwise, nor groups of
  // one 8-channel block paired on AVX-512, whose tiles at a row's ends skip the padding); for a
  // strided 1x1 convolution without padding, copied first with only the positions it reads;
  // for a 1x1 convolution with stride 1, the plane taken as one row when it is small (the kernel
  // decides by the extents it is called with, which a library with shape dimensions knows only
  // at run time).
  bool copy_padded, gather_strided, flat_plane;
  static constexpr const char* kSampleField = "batch";  // counts samples (kernel_params.h)
  auto Fields() const {
    return std::tie(batch, in_channels, in_height, in_width, in_block, out_channels, out_block, kernel_height,
                    kernel_width, out_height, out_width, stride_h, stride_w, dilation_h, dilation_w, pad_top,
                    pad_left, groups, depthwise, copy_padded, gather_strided, flat_plane);
  }
};
// Conv2DNCHWc comes in variants, each compiled only into the libraries whose code names it
// (backend/compiler.cc): its output block OB, the size of its block-local groups (0: not
// block-local), where tiles read their input at steps known when they are compiled, the input
// block IB and stride along the row S (0 and 1: read from the parameters), and the lanes L of its
// accumulators: OB, or 16 for 8-channel output blocks computed two to a vector (conv2d_nchwc.cc).
struct Conv2DNCHWcVariant {
  int out_block, local_group, in_block, stride, lanes;
  constexpr bool operator==(const Conv2DNCHWcVariant& o) const {
    return out_block == o.out_block && local_group == o.local_group && in_block == o.in_block &&
           stride == o.stride && lanes == o.lanes;
  }
};
// The variant that computes `p` on an instruction set of `config`. Input blocks and strides are
// compiled in for tiles of 16 lanes, and with AVX2 for tiles of 8 too: blocks of 8 and 16 at stride
// 1 and 2, an image's plain channels at stride 2 (the stems of ResNet, MobileNet, EfficientNet).
// (AVX2's 8-lane tiles with them compiled in once ran out of registers and were slower; with the
// FMAs written to accumulate in place (nchwc_tiles.h, FmaInPlace) they fit, and RegNetY-400MF, whose
// 1x1 layers are of 8-channel blocks, ran 7% faster on one Zen 3 core.) With AVX-512, 8-channel
// output blocks of a group of two or more are computed two to a vector: one 16-lane FMA for two
// 8-lane ones.
// With AVX-512, groups of one 8-channel block in and out (RegNetY's) are computed two groups to a
// vector where the kernel has a tile for them: 3 taps along the row, dilation 1 there, stride 1 or
// 2.
constexpr bool PairsOneBlockGroups(const Conv2DNCHWcParams& p, const KernelConfig& config) {
  return config.vector_floats == 16 && !p.depthwise && p.in_block == 8 && p.out_block == 8 && p.groups > 1 &&
         p.in_channels == 8 * p.groups && p.out_channels == 8 * p.groups && p.kernel_width == 3 &&
         p.dilation_w == 1 && (p.stride_w == 1 || p.stride_w == 2) && !p.gather_strided;
}
constexpr Conv2DNCHWcVariant Conv2DNCHWcVariantOf(const Conv2DNCHWcParams& p, const KernelConfig& config) {
  int ob = static_cast<int>(p.out_block);
  if (p.depthwise) return {ob, static_cast<int>(p.groups > 0 ? p.in_channels / p.groups : 0), 0, 1, ob};
  bool paired = ob == 8 && config.vector_floats == 16 && p.groups > 0 &&
                (p.out_channels / p.groups >= 16 || PairsOneBlockGroups(p, config));
  int lanes = paired ? 16 : ob;
  int64_t stride = p.gather_strided ? 1 : p.stride_w;  // the gathered copy is read at stride 1
  const bool compiled_in = lanes == 16 || config.vector_floats == 8;  // (AVX2's 8-lane tiles too)
  if (compiled_in && (stride == 1 || stride == 2) && (p.in_block == 8 || p.in_block == 16)) {
    return {ob, 0, static_cast<int>(p.in_block), static_cast<int>(stride), lanes};
  }
  if (lanes == 16 && stride == 2 && p.in_block == 1) return {ob, 0, 1, 2, lanes};
  return {ob, 0, 0, 1, lanes};
}
// Whether variant `v` computes `p`: its output block and local groups are p's, what it compiles
// in (input block, stride along the row) is p's, and its lanes are one block's or (not
// block-local) two 8-channel blocks'. (Which of those that do is fastest is Conv2DNCHWcVariantOf's
// choice.)
constexpr bool Conv2DNCHWcVariantComputes(const Conv2DNCHWcVariant& v, const Conv2DNCHWcParams& p) {
  int64_t local_group = p.depthwise ? (p.groups > 0 ? p.in_channels / p.groups : 0) : 0;
  int64_t stride = p.gather_strided ? 1 : p.stride_w;
  bool lanes_fit = v.lanes == v.out_block || (v.out_block == 8 && v.lanes == 16 && local_group == 0);
  return v.out_block == p.out_block && v.local_group == local_group && lanes_fit &&
         (v.in_block == 0 ? v.stride == 1 : v.in_block == p.in_block && v.stride == stride && local_group == 0);
}
// out[N, O / ob, OH, OW, ob] = epilogue(conv(data, weight)), by a variant that computes `p`
// (Conv2DNCHWcVariantOf(p, config) on the target the planner built for). Returns non-zero (with
// the error message set) when the parameters are not a supported form or this variant does not
// compute them.
template <int OB, int kLocalGroup, int IB, int S, int L>
int Conv2DNCHWc(const Conv2DNCHWcParams& p, const float* data, const float* weight, float* out,
                const EpilogueStep* epilogue, int epilogue_size);
using Conv2DNCHWcKernel = int (*)(const Conv2DNCHWcParams& p, const float* data, const float* weight, float* out,
                                  const EpilogueStep* epilogue, int epilogue_size);
// Every variant, chosen by the parameters: for the kernel tests, compiled only where
// conv2d_nchwc.cc is compiled with all its variants (a model library's code names its variants).
int Conv2DNCHWcAnyVariant(const Conv2DNCHWcParams& p, const float* data, const float* weight, float* out,
                          const EpilogueStep* epilogue, int epilogue_size);

// A pointwise convolution that expands the channels, with its bias and clip, and the depthwise
// convolution that reads its result, in one call (the first half of MobileNetV2's inverted
// residual blocks): the expanded tensor is computed band of rows by band of rows into a buffer in
// cache, each band's depthwise rows from it, and never written whole.
// data [N, C / ib, H, W, ib] (ib = IB, 8 or 16), pointwise weight [E / 16, C / ib, 1, 1, ib, 16]
// and bias [E], expanded[e] = clip(bias[e] + sum_c data[c] * w[e, c], lo, hi) (or, with swish,
// v * sigmoid(v) of the sum v: EfficientNet's); depthwise weight
// [E / 16, 1, KH, KW, 1, 16]; out [N, E / 16, OH, OW, 16] = epilogue(depthwise(expanded)). The
// depthwise window: kernel width 3 or 5, stride 1 or 2 along the row, no dilation along it.
// Computed with AVX2 and AVX-512 (PointwiseDepthwiseComputes; elsewhere the call fails).
struct Conv2DPointwiseDepthwiseParams {
  int64_t batch, in_channels, in_block, height, width;  // the pointwise convolution's input
  int64_t channels;                                      // E, the expanded channels
  int64_t kernel_height, kernel_width, out_height, out_width, stride_h, stride_w, dilation_h, dilation_w;
  int64_t pad_top, pad_left;
  bool swish;    // the pointwise result's activation: swish, else a clip
  float lo, hi;  // the clip (relu: 0 and infinity)
  static constexpr const char* kSampleField = "batch";  // counts samples (kernel_params.h)
  auto Fields() const {
    return std::tie(batch, in_channels, in_block, height, width, channels, kernel_height, kernel_width, out_height,
                    out_width, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, swish, lo, hi);
  }
};
// Whether Conv2DPointwiseDepthwise computes layers on an instruction set of `config` (AVX2 or
// AVX-512: with AVX-512 the pointwise tile is of two blocks and the depthwise rows are
// DepthwiseRowTile's; with AVX2 one block and BlockLocalTile's), and whether its window and
// channels are ones it computes: input block 8 or 16, expanded channels in blocks of 16, the
// pointwise weights of one tile's blocks within the configuration's chunk (AVX-512: 64 KiB for
// two blocks; AVX2: 16 KiB for one).
constexpr bool PointwiseDepthwiseComputes(const Conv2DPointwiseDepthwiseParams& p, const KernelConfig& config) {
  return config.vector_floats >= 8 && (p.in_block == 8 || p.in_block == 16) && p.in_channels >= p.in_block &&
         p.in_channels % p.in_block == 0 && p.channels >= 16 && p.channels % 16 == 0 &&
         p.in_channels * 16 * config.conv_tile_blocks_16 * 4 <= config.conv_chunk_bytes &&
         (p.kernel_width == 3 || p.kernel_width == 5) && (p.stride_w == 1 || p.stride_w == 2) && p.dilation_w == 1;
}
template <int IB>
int Conv2DPointwiseDepthwise(const Conv2DPointwiseDepthwiseParams& p, const float* data, const float* pointwise_weight,
                             const float* pointwise_bias, const float* depthwise_weight, float* out,
                             const EpilogueStep* epilogue, int epilogue_size);

// A 3x3 convolution with stride 1 and dilation 1 (one group) by Winograd's F(4x4, 3x3), in blocked
// layouts as Conv2DNCHWc: data [N, C / ib, H, W, ib], out [N, O / ob, OH, OW, ob] (ib and ob 8 or
// 16), padding at the top and left as given, the rest by the output's size; the weight as
// WinogradWeight (kernels/conv/winograd.h) writes it. Returns non-zero (with the error message
// set) when the parameters do not fit.
struct Conv2DWinogradParams {
  int64_t batch, in_channels, in_height, in_width, in_block;
  int64_t out_channels, out_block, out_height, out_width, pad_top, pad_left;
  static constexpr const char* kSampleField = "batch";  // counts samples (kernel_params.h)
  auto Fields() const {
    return std::tie(batch, in_channels, in_height, in_width, in_block, out_channels, out_block, out_height, out_width,
                    pad_top, pad_left);
  }
};
// The product of the transformed planes is a grouped 1x1 convolution: Conv2DWinogradProduct says
// which parameters, and `product` is the Conv2DNCHWc variant that computes them.
int Conv2DWinograd(const Conv2DWinogradParams& p, const float* data, const float* weight, float* out,
                   const EpilogueStep* epilogue, int epilogue_size, Conv2DNCHWcKernel product);

// A depthwise Conv2D (p.depthwise; out[N, O, OH, OW], O a multiple of C) with a fused epilogue
// (a kChannel operand holds one value per output channel, a kTensor one has
// the output's shape). Returns non-zero with the error message set when p is not depthwise.
int DepthwiseConv2D(const Conv2DParams& p, const float* data, const float* weight, float* out,
                    const EpilogueStep* epilogue, int epilogue_size);

// Pooling of NCHW[block]c data: Pool2DParams::batch_channels counts planes (N * C / block).
void MaxPool2DNCHWc(const Pool2DParams& p, int64_t block, const float* data, float* out);
void AvgPool2DNCHWc(const Pool2DParams& p, int64_t block, const float* data, float* out);

// Over `inner` contiguous rows of length `axis_size`, each repeated `outer` times with stride:
// data is [outer, axis_size, inner].
void Softmax(int64_t outer, int64_t axis_size, int64_t inner, const float* data, float* out);
// data [rows, size] normalized per row, then * gamma[size] + beta[size].
void LayerNorm(int64_t rows, int64_t size, float epsilon, const float* data, const float* gamma,
               const float* beta, float* out);

// ---- Sorting (sort/topk.cc) -------------------------------------------------------------------
// data is [outer, axis_size, inner]; values and indices [outer, k, inner]: per row along the axis
// its k largest elements (the smallest with `smallest`), sorted that way; equal values keep the
// lower index first, NaN orders above every number.
struct TopKShape {
  int64_t outer, axis_size, inner, k;
  bool smallest;
  auto Fields() const {
    return std::tie(outer, axis_size, inner, k, smallest);
  }
};
void TopK(const TopKShape& s, const float* data, float* values, int64_t* indices);
void TopK(const TopKShape& s, const double* data, double* values, int64_t* indices);
void TopK(const TopKShape& s, const int8_t* data, int8_t* values, int64_t* indices);
void TopK(const TopKShape& s, const int16_t* data, int16_t* values, int64_t* indices);
void TopK(const TopKShape& s, const int32_t* data, int32_t* values, int64_t* indices);
void TopK(const TopKShape& s, const int64_t* data, int64_t* values, int64_t* indices);
void TopK(const TopKShape& s, const uint8_t* data, uint8_t* values, int64_t* indices);
void TopK(const TopKShape& s, const uint16_t* data, uint16_t* values, int64_t* indices);
void TopK(const TopKShape& s, const uint32_t* data, uint32_t* values, int64_t* indices);
void TopK(const TopKShape& s, const uint64_t* data, uint64_t* values, int64_t* indices);

// ---- Distinct slices (sort/unique.cc) --------------------------------------------------------
// data is [outer, axis_size, inner]; its slices along the axis (each [outer, inner], compared
// element by element in row-major order; NaN equals NaN and orders above every number) are
// collected into the distinct ones, in ascending order when `sorted`, else in order of first
// occurrence. y [outer, *count, inner] holds them, indices[*count] each one's first slice,
// counts[*count] its number of slices, inverse[axis_size] for every slice its distinct one. Behind
// *count, y (as [outer, axis_size, inner]), indices and counts hold zeros.
struct UniqueShape {
  int64_t outer, axis_size, inner;
  bool sorted;
  auto Fields() const {
    return std::tie(outer, axis_size, inner, sorted);
  }
};
void Unique(const UniqueShape& s, const float* data, float* y, int64_t* indices, int64_t* inverse, int64_t* counts,
            int64_t* count);
void Unique(const UniqueShape& s, const double* data, double* y, int64_t* indices, int64_t* inverse, int64_t* counts,
            int64_t* count);
void Unique(const UniqueShape& s, const int8_t* data, int8_t* y, int64_t* indices, int64_t* inverse, int64_t* counts,
            int64_t* count);
void Unique(const UniqueShape& s, const int16_t* data, int16_t* y, int64_t* indices, int64_t* inverse,
            int64_t* counts, int64_t* count);
void Unique(const UniqueShape& s, const int32_t* data, int32_t* y, int64_t* indices, int64_t* inverse,
            int64_t* counts, int64_t* count);
void Unique(const UniqueShape& s, const int64_t* data, int64_t* y, int64_t* indices, int64_t* inverse,
            int64_t* counts, int64_t* count);
void Unique(const UniqueShape& s, const uint8_t* data, uint8_t* y, int64_t* indices, int64_t* inverse,
            int64_t* counts, int64_t* count);
void Unique(const UniqueShape& s, const uint16_t* data, uint16_t* y, int64_t* indices, int64_t* inverse,
            int64_t* counts, int64_t* count);
void Unique(const UniqueShape& s, const uint32_t* data, uint32_t* y, int64_t* indices, int64_t* inverse,
            int64_t* counts, int64_t* count);
void Unique(const UniqueShape& s, const uint64_t* data, uint64_t* y, int64_t* indices, int64_t* inverse,
            int64_t* counts, int64_t* count);

// ---- Detection (vision/non_max_suppression.cc) -----------------------------------------------
// ONNX NonMaxSuppression: boxes [batches, boxes, 4] (two corners y1, x1, y2, x2 in any order, or
// x_center, y_center, width, height with center_point_box), scores [batches, classes, boxes].
// Per batch and class, greedily from the highest score (equal scores: lower box first; NaN
// lowest), a box is kept unless its intersection over union with a kept box exceeds
// *iou_threshold; at most min(*max_output_boxes_per_class, max_per_class) are kept, and with
// use_score_threshold only boxes scoring above *score_threshold are candidates. selected gets
// one (batch, class, box) row per kept box, *count rows, then zeros up to
// batches * classes * max_per_class rows.
struct NonMaxSuppressionShape {
  int64_t batches, classes, boxes, max_per_class;
  bool center_point_box, use_score_threshold;
  auto Fields() const {
    return std::tie(batches, classes, boxes, max_per_class, center_point_box, use_score_threshold);
  }
};
void NonMaxSuppression(const NonMaxSuppressionShape& s, const float* boxes, const float* scores,
                       const int64_t* max_output_boxes_per_class, const float* iou_threshold,
                       const float* score_threshold, int64_t* selected, int64_t* count);

// ---- Text (text/tfidf_vectorizer.cc) ---------------------------------------------------------
// x [rows, row_size] tokens; y [rows, columns]. grams [grams, max_gram_length + 1]: each pool
// n-gram as its length then its items; columns[grams] its output column. Per row, every n-gram
// of length min_gram_length..max_gram_length whose items are `skip` apart (skip 1 to
// max_skip_count + 1; unigrams once) that is in the pool is counted in its column. mode 1 (TF):
// the count; 2 (IDF): weights[c] (or 1) where the count is positive; 3 (TFIDF): weights[c] (or 1)
// times the count.
struct TfIdfShape {
  int64_t rows, row_size, grams, columns, min_gram_length, max_gram_length, max_skip_count, mode;
  bool has_weights;
  auto Fields() const {
    return std::tie(rows, row_size, grams, columns, min_gram_length, max_gram_length, max_skip_count, mode,
                    has_weights);
  }
};
void TfIdfVectorizer(const TfIdfShape& s, const int64_t* grams, const int64_t* columns, const float* weights,
                     const int32_t* x, float* y);
void TfIdfVectorizer(const TfIdfShape& s, const int64_t* grams, const int64_t* columns, const float* weights,
                     const int64_t* x, float* y);

// ---- Linear algebra (linalg/det.cc) ----------------------------------------------------------
// out[m] = the determinant of matrix m of data [count, n, n].
void Det(int64_t count, int64_t n, const float* data, float* out);
void Det(int64_t count, int64_t n, const double* data, double* out);

// ---- Image (image/grid_sample.cc) -------------------------------------------------------------
// data [batch, channels, in_height, in_width] read at grid [batch, out_height, out_width, 2] (x then
// y, normalized to [-1, 1]) into out [batch, channels, out_height, out_width]. mode: 0 nearest
// (halves to even), 1 bilinear, 2 bicubic (a = -0.75); padding_mode: 0 zeros, 1 border, 2 reflection.
struct GridSampleShape {
  int64_t batch, channels, in_height, in_width, out_height, out_width, mode, padding_mode;
  bool align_corners;
  auto Fields() const {
    return std::tie(batch, channels, in_height, in_width, out_height, out_width, mode, padding_mode, align_corners);
  }
};
void GridSample(const GridSampleShape& s, const float* data, const float* grid, float* out);
void GridSample(const GridSampleShape& s, const double* data, const double* grid, double* out);

// ---- Regions of interest (image/roi_align.cc) --------------------------------------------------
// data [batch, channels, height, width]; rois [rois, 4] (x1, y1, x2, y2 before spatial_scale);
// batch_indices[rois]; out [rois, channels, out_height, out_width]: per bin the average (or with
// max_mode the largest weighted corner) of sampling_ratio^2 bilinear samples (0: as many as the
// bin is wide, up to 256 per axis); half_pixel shifts coordinates by -0.5. Fails on a batch
// index out of range.
struct RoiAlignShape {
  int64_t batch, channels, height, width, rois, out_height, out_width, sampling_ratio;
  float spatial_scale;
  bool max_mode, half_pixel;
  auto Fields() const {
    return std::tie(batch, channels, height, width, rois, out_height, out_width, sampling_ratio, spatial_scale,
                    max_mode, half_pixel);
  }
};
int RoiAlign(const RoiAlignShape& s, const float* data, const float* rois, const int64_t* batch_indices, float* out);

// ---- Shapes decided by input values at run time (shape/run_time_shapes.cc) --------------------
// Each takes its op's input shape `in` (`rank` extents) and the values of its shape-deciding input,
// and writes the result's shape to `out` as ONNX defines it; values that do not fit fail with a
// message that begins with `where`. Axes count from the end when negative.
// Reshape to `shape` (`out_rank` values): a 0 copies the input's extent at its place (unless
// `allow_zero`), one -1 takes what the element count leaves.
int ReshapeAtRunTime(const int64_t* in, int64_t rank, const int64_t* shape, int64_t out_rank, bool allow_zero,
                     int64_t* out, const char* where);
// Drops the axes `axes`, each of extent 1.
int SqueezeAtRunTime(const int64_t* in, int64_t rank, const int64_t* axes, int64_t num_axes, int64_t* out,
                     const char* where);
// Inserts axes of extent 1 at `axes`, axes of the result.
int UnsqueezeAtRunTime(const int64_t* in, int64_t rank, const int64_t* axes, int64_t num_axes, int64_t* out,
                       const char* where);
// A reduction over `axes` (none: every axis, or none at all with `noop_with_empty_axes`); per input
// axis, `strides` gets the stride of its index in the compact result (0 for a reduced axis).
int ReduceAtRunTime(const int64_t* in, int64_t rank, const int64_t* axes, int64_t num_axes, bool keepdims,
                    bool noop_with_empty_axes, int64_t* out, int64_t* strides, const char* where);
// A slice of `count` (start, end, axis, step) values, clamped as ONNX's Slice does; per input axis,
// `first` and `step` get the first index taken and the step (0 and 1 for an axis not sliced).
int SliceAtRunTime(const int64_t* in, int64_t rank, const int64_t* starts, const int64_t* ends, const int64_t* axes,
                   const int64_t* steps, int64_t count, int64_t* first, int64_t* step, int64_t* out, const char* where);
// Split sizes: each at least 0, together the input's extent along `axis`.
int SplitAtRunTime(const int64_t* in, int64_t rank, int64_t axis, const int64_t* sizes, int64_t pieces,
                   const char* where);
// TopK's k: from 0 to the input's extent along `axis`; `out` the input's shape with k there.
int TopKAtRunTime(const int64_t* in, int64_t rank, int64_t axis, int64_t k, int64_t* out, const char* where);
// An axis given as a value, counted from the end when negative, into `normalized`.
int AxisAtRunTime(int64_t axis, int64_t rank, int64_t* normalized, const char* where);
// Shapes that no input bounds: the executor sizes the result's storage from them before the call
// that computes it (graph JSON's sized entries).
// Expand: `shape` (`count` extents) and the input's, broadcast against each other from the end.
int ExpandAtRunTime(const int64_t* in, int64_t rank, const int64_t* shape, int64_t count, int64_t* out,
                    const char* where);
// Tile: each extent times its repeat (one per axis, each at least 0).
int TileAtRunTime(const int64_t* in, int64_t rank, const int64_t* repeats, int64_t* out, const char* where);
// ConstantOfShape: the values themselves, each at least 0.
int ShapeOfValuesAtRunTime(const int64_t* values, int64_t count, int64_t* out, const char* where);
// Range: max(ceil((limit - start) / delta), 0) elements; delta must not be 0.
int RangeAtRunTime(double start, double limit, double delta, int64_t* out, const char* where);
int RangeAtRunTime(int64_t start, int64_t limit, int64_t delta, int64_t* out, const char* where);
// Pad: `pads` holds the begins then the ends of the `count` axes `axes` (negative: cropped);
// `before` gets each input axis's begin. `mode` is an AxisMap of padding; all but kMapPadConstant
// need the padded axes not empty.
int PadAtRunTime(const int64_t* in, int64_t rank, const int64_t* pads, const int64_t* axes, int64_t count, int mode,
                 int64_t* before, int64_t* out, const char* where);
// OneHot: the indices' shape with `depth` (at least 1) inserted at `axis` of the result.
int OneHotAtRunTime(const int64_t* in, int64_t rank, int64_t depth, int64_t axis, int64_t* out, const char* where);
// CenterCropPad: the input's shape with the `count` axes `axes` of the lengths given (each at least 0).
int CenterCropPadAtRunTime(const int64_t* in, int64_t rank, const int64_t* lengths, const int64_t* axes, int64_t count,
                           int64_t* out, const char* where);
// AffineGrid: size [N, C, H, W] (or [N, C, D, H, W]) gives [N, H, W, 2] ([N, D, H, W, 3]); N must be
// theta's `batches`, the extents at least 0.
int AffineGridAtRunTime(int64_t batches, const int64_t* size, int64_t count, int64_t* out, const char* where);
// Before a sized op computes its data: its shape `shape` (`rank` extents) is `expected` (the shape
// its inputs give, recomputed; null: any) and its elements fit the `capacity` its output holds. A
// graph whose sizing does not match its nodes fails here, never writes past the storage.
int CheckSizedOutput(const int64_t* expected, const int64_t* shape, int64_t rank, int64_t capacity, const char* where);
// Copies into `result`, of shape `out` (rank `rank`), the element of `in` (of shape `in_shape`, as
// many axes) each position maps to along every axis: kMapBroadcast (index 0 along an axis of extent
// 1), kMapTile (the index modulo the extent), or after `before` elements of padding kMapPadConstant
// (`fill` outside), kMapPadEdge (the nearest), kMapPadReflect (mirrored at the edges) and kMapPadWrap.
enum AxisMap { kMapBroadcast = 0, kMapTile, kMapPadConstant, kMapPadEdge, kMapPadReflect, kMapPadWrap };
void CopyMappedAtRunTime(const void* in, const int64_t* in_shape, const int64_t* out, int64_t rank, int map,
                         const int64_t* before, const void* fill, int64_t element_bytes, void* result);
// Copies the elements of `in` (of shape `in_shape`, `element_bytes` each) at first + i * step along
// every axis, for i below the extents `out`, compactly into `result`.
void GatherStridedAtRunTime(const void* in, const int64_t* in_shape, int64_t rank, const int64_t* first,
                            const int64_t* step, const int64_t* out, int64_t element_bytes, void* result);

// ---- Resize with sizes or scales given at run time (image/resize.cc) ---------------------------
// The output shape of ONNX's Resize of `in` from its roi (starts then ends of the `num_axes` axes
// `axes`, or none), scales or sizes (exactly one given) and keep_aspect_ratio_policy (stretch,
// not_larger, not_smaller); per axis the scale of its coordinate mapping and its roi (2 * rank:
// starts, then ends; 0 and 1 where none is given).
int ResizeShapeAtRunTime(const int64_t* in, int64_t rank, const double* roi, int64_t num_roi, const double* scales,
                         int64_t num_scales, const int64_t* sizes, int64_t num_sizes, const int64_t* axes,
                         int64_t num_axes, const char* policy, int64_t* out, double* out_scales, double* out_roi,
                         const char* where);
// `data` (shape `in`) resized to `out` as image.resize does, with its method, coordinate mode,
// nearest rounding, cubic coefficient, exclude_outside, antialias and extrapolation value.
int ResizeAtRunTime(const float* data, const int64_t* in, int64_t rank, const int64_t* out, const double* scales,
                    const double* roi, const char* method, const char* mode, const char* rounding, double cubic_alpha,
                    bool exclude_outside, bool antialias, float extrapolation, float* result);

// Runs body(begin, end) over [0, count) in contiguous grains (a few per thread): each of the
// runtime's threads first takes the grains of its own home range (the same at every launch), then
// any others left (support.cc).
// `body` is a plain function with a context pointer so that no std::function is needed. Without
// `split` it runs on the calling thread (a function with shape dimensions decides at run time
// whether a loop is large enough to split).
int ParallelFor(int64_t count, void (*body)(int64_t begin, int64_t end, void* context), void* context,
                bool split = true);

}  // namespace kiln::kernels
