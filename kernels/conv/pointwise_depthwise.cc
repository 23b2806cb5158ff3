// A 1x1 convolution expanding to at most 64 channels, with its bias and clip or swish, fused
// with the depthwise convolution after it (MobileNetV2's and EfficientNet's blocks; the pass
// transform/fuse_pointwise_depthwise.cc): the expanded rows are computed band by band into a
// buffer that stays in L2, and the depthwise tiles (nchwc_tiles.h) read them from there, so the
// expanded tensor never goes to memory. AVX2 and AVX-512 (PointwiseDepthwiseComputes).
#include <algorithm>
#include <atomic>

#include "kernels/backend_api.h"
#include "kernels/conv/nchwc_tiles.h"
#include "kernels/epilogue.h"
#include "kernels/kernels.h"

namespace kiln::kernels {
namespace {

using namespace nchwc;  // NOLINT(build/namespaces): the tiles this kernel runs

// Conv2DPointwiseDepthwise: work items (image, band of output rows, set of the pointwise tile's
// expanded blocks): consecutive items read the same input rows. An item computes the expanded
// rows its band's windows read (its blocks only) into a buffer that stays in L2, as one run of
// positions over the rows (tiles that do not stop at row ends), then the band's output rows from
// it; bands after the first compute again the rows their windows share with the band before
// (with MobileNetV2's 3x3 windows, one or two).
struct PointwiseDepthwiseJob {
  const Conv2DPointwiseDepthwiseParams* p;
  Conv2DNCHWcParams pointwise;  // a run of positions of the input's plane taken as one row
  Conv2DNCHWcParams depthwise;  // the whole depthwise layer
  const float *data, *pointwise_weight, *depthwise_weight;
  float* out;
  const EpilogueStep* epilogue;
  int epilogue_size;
  RegisterEpilogue pointwise_registers, depthwise_registers;
  RowFn depthwise_row;
  int64_t set_blocks, sets, band_rows, bands, band_input_rows;
  std::atomic<bool> out_of_memory{false};
};

// A band's expanded rows take at most this many bytes (beside the input rows they read, in L2).
constexpr int64_t kMaxBandBytes = 256 * 1024;

template <int IB>
void RunPointwiseDepthwiseItems(int64_t begin, int64_t end, void* context) {
  constexpr int OB = 16, L = 16;
  auto& f = *static_cast<PointwiseDepthwiseJob*>(context);
  const Conv2DPointwiseDepthwiseParams& p = *f.p;
  const int64_t in_blocks = p.in_channels / IB, out_blocks = p.channels / OB;
  const int64_t band_plane = f.band_input_rows * p.width * OB;  // floats of one block's rows in the buffer
  Workspace band(static_cast<uint64_t>(f.set_blocks * band_plane) * sizeof(float));
  if (!band.ok()) {
    f.out_of_memory = true;
    return;
  }
  for (int64_t item = begin; item < end; ++item) {
    const int64_t n = item / (f.sets * f.bands), index = item / f.sets % f.bands, set = item % f.sets;
    const int64_t first_block = set * f.set_blocks, blocks = std::min(f.set_blocks, out_blocks - first_block);
    const int64_t oh_begin = index * f.band_rows, oh_end = std::min(p.out_height, oh_begin + f.band_rows);
    // The input rows the band's windows read.
    const int64_t first_row = std::max<int64_t>(0, oh_begin * p.stride_h - p.pad_top);
    const int64_t end_row =
        std::min(p.height, (oh_end - 1) * p.stride_h - p.pad_top + (p.kernel_height - 1) * p.dilation_h + 1);
    // Where every window of the band lies in the padding there is nothing to read: its rows are the
    // epilogue of zero sums (the depthwise tiles read no row outside the input).
    if (end_row > first_row) {
      // The pointwise convolution of rows [first_row, end_row) of image n, as one row of positions,
      // into the buffer: the set's blocks (its weights and bias from first_block on).
      Job pointwise(&f.pointwise, f.data + (n * in_blocks * p.height + first_row) * p.width * IB,
                    f.pointwise_weight + first_block * in_blocks * IB * OB, band.as<float>(), nullptr, 0, in_blocks,
                    blocks, in_blocks, blocks, p.height * p.width * IB, band_plane);
      pointwise.in_registers = f.pointwise_registers;
      pointwise.in_registers.bias += first_block * OB;
      Tile run{0, 0, blocks, 0, 0, 0, 0, in_blocks, true, true};
      const int64_t positions = (end_row - first_row) * p.width;
      if constexpr (kTileVectors<L> >= 2) {
        if (blocks == 2) {
          RunRow<OB, 2, 0, IB, 1, L>(pointwise, run, 0, positions);
        } else {
          RunRow<OB, 1, 0, IB, 1, L>(pointwise, run, 0, positions);
        }
      } else {
        RunRow<OB, 1, 0, IB, 1, L>(pointwise, run, 0, positions);
      }
    }
    Job depthwise(&f.depthwise, band.as<float>(), f.depthwise_weight, f.out, f.epilogue, f.epilogue_size, out_blocks,
                  out_blocks, 1, 1, band_plane, p.out_height * p.out_width * OB);
    depthwise.in_registers = f.depthwise_registers;
    depthwise.reads_band = true;
    depthwise.band_first_row = first_row;
    depthwise.band_first_block = first_block;
    for (int64_t b = 0; b < blocks; ++b) {
      for (int64_t oh = oh_begin; oh < oh_end; ++oh) {
        Tile tile{n, first_block + b, 1, oh, 0, 0, 0, 1, true, true};
        f.depthwise_row(depthwise, tile, 0, p.out_width);
      }
    }
  }
}

}  // namespace

template <int IB>
int Conv2DPointwiseDepthwise(const Conv2DPointwiseDepthwiseParams& p, const float* data, const float* pointwise_weight,
                             const float* pointwise_bias, const float* depthwise_weight, float* out,
                             const EpilogueStep* epilogue, int epilogue_size) {
  static_assert(IB == 8 || IB == 16, "input blocks of 8 or 16 are compiled in");
  if (!PointwiseDepthwiseComputes(p, kCompiledConfig) || p.in_block != IB) {
    return Fail("Conv2DPointwiseDepthwise: the parameters are not a form this build computes (AVX2 or AVX-512; "
                "input block of the variant, 8 or 16; expanded channels in blocks of 16; kernel width 3 or 5, stride "
                "1 or 2 along the row, no dilation there; pointwise weights of one tile's blocks within a chunk)");
  }
  if (p.batch < 0 || p.height < 1 || p.width < 1 || p.out_height < 1 || p.out_width < 1 || p.kernel_height < 1 ||
      p.stride_h < 1 || p.dilation_h < 1) {
    return Fail("Conv2DPointwiseDepthwise: extents, kernel height, stride and dilation must be positive");
  }
  if (p.batch == 0) return 0;
  constexpr int OB = 16;
  PointwiseDepthwiseJob f;
  f.p = &p;
  // A run of the input plane's positions as one row (a band's rows, RunPointwiseDepthwiseItems).
  const int64_t plane = p.height * p.width;
  f.pointwise = {1,     p.in_channels, 1, plane, IB,    p.channels, OB,    1,     1,     1,    plane,
                 1,     1,             1, 1,     0,     0,          1,     false, false, false, false};
  f.depthwise = {p.batch,        p.channels,   p.height,       p.width,         OB,          p.channels,
                 OB,             p.kernel_height, p.kernel_width, p.out_height, p.out_width, p.stride_h,
                 p.stride_w,     p.dilation_h, p.dilation_w,   p.pad_top,       p.pad_left,  p.channels,
                 true,           false,        false,          false};
  f.data = data;
  f.pointwise_weight = pointwise_weight;
  f.depthwise_weight = depthwise_weight;
  f.out = out;
  f.epilogue = epilogue;
  f.epilogue_size = epilogue_size;
  f.pointwise_registers.active = true;
  f.pointwise_registers.bias = pointwise_bias;
  f.pointwise_registers.activation = p.swish ? RegisterEpilogue::kSwish : RegisterEpilogue::kClip;
  f.pointwise_registers.lo = p.lo;
  f.pointwise_registers.hi = p.hi;
  f.depthwise_registers = RegisterEpilogueOf(epilogue, epilogue_size, /*swish=*/true);
  f.depthwise_row = DepthwiseRowOf<OB>(f.depthwise);
  f.set_blocks = std::min<int64_t>(kTileVectors<16>, p.channels / OB);
  f.sets = (p.channels / OB + f.set_blocks - 1) / f.set_blocks;
  // Bands of as many output rows as the buffer holds the input rows of (at least one).
  const int64_t rows_held = std::max<int64_t>(1, kMaxBandBytes / (f.set_blocks * p.width * OB * 4));
  const int64_t window = (p.kernel_height - 1) * p.dilation_h + 1;
  f.band_rows = std::clamp<int64_t>((rows_held - window) / p.stride_h + 1, 1, p.out_height);
  f.bands = (p.out_height + f.band_rows - 1) / f.band_rows;
  f.band_rows = (p.out_height + f.bands - 1) / f.bands;  // as even as the count allows
  f.band_input_rows = std::min(p.height, (f.band_rows - 1) * p.stride_h + window);
  if (ParallelFor(p.batch * f.sets * f.bands, RunPointwiseDepthwiseItems<IB>, &f) != 0) return -1;
  if (f.out_of_memory) return Fail("Conv2DPointwiseDepthwise: out of workspace memory");
  return 0;
}

#define KILN_POINTWISE_DEPTHWISE_SIGNATURE(IB)                                                                  \
  template int Conv2DPointwiseDepthwise<IB>(const Conv2DPointwiseDepthwiseParams& p, const float* data,         \
                                            const float* pointwise_weight, const float* pointwise_bias,          \
                                            const float* depthwise_weight, float* out, const EpilogueStep* epilogue, \
                                            int epilogue_size)
#if defined(KILN_INSTANTIATE_Conv2DPointwiseDepthwise)
// A model library's build: the variant its code names (backend/compiler.cc).
KILN_POINTWISE_DEPTHWISE_SIGNATURE(KILN_INSTANTIATE);
#else
KILN_POINTWISE_DEPTHWISE_SIGNATURE(8);
KILN_POINTWISE_DEPTHWISE_SIGNATURE(16);
#endif
#undef KILN_POINTWISE_DEPTHWISE_SIGNATURE

}  // namespace kiln::kernels
