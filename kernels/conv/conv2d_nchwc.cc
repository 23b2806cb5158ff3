// 2-D convolution in blocked layouts (NCHW[x]c data, packed weights; see kernels.h), direct, in
// the tiles of nchwc_tiles.h. As the parameters say (the compiler's kernel selection decides,
// strategy/conv2d.cc), a padded input is first copied with its zeros written out, so tiles need
// no checks, a strided 1x1 convolution first gathers the positions it reads, and a 1x1
// convolution over a small plane runs as one long row. With AVX-512, groups of one 8-channel
// block run two to a 16-lane vector (PairedGroupTile). Work items are
// (batch, set of output channel blocks, a few output rows or a part of a row: of a long one, as
// 1-D layers have, or of any row of 56 positions or more when the layer would give fewer than 16
// items), split across threads. Input channel blocks are taken in chunks whose weights fit
// in L1 cache; between chunks the partial sums wait in the output (no operator works in place, so
// the output aliases no input).
#include <algorithm>
#include <array>
#include <utility>

#include "kernels/backend_api.h"
#include "kernels/conv/nchwc_tiles.h"
#include "kernels/epilogue.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"

namespace kiln::kernels {
namespace {

using namespace nchwc;  // NOLINT(build/namespaces): the tiles this kernel runs

// Planes of up to this many positions run a pointwise convolution as one row (flat_plane): 28x28
// too, whose rows of 28 took tiles of 9 and 10 positions where a tile of two 16-channel blocks
// keeps 12 (one layer alone on an AMD Zen 4 core, AVX-512: 256 -> 512 channels 91 -> 111 GFLOP/s,
// others -4..+2%; AVX2 code -4..+3%). Wider planes gained nothing (56x56: -4%).
constexpr int64_t kMaxFlatPositions = 28 * 28;
constexpr int64_t kPositionsPerItem = 64;         // output positions per work item, at least
constexpr int64_t kRowPartPositions = 512;        // rows wider than this are always split into parts
// Work items a layer is split into at least, where its rows are wide enough for parts of
// kMinPartPositions: a 1x1 layer of 5 or 7 output blocks on a 14x14 plane taken as one row
// (EfficientNet's projections) was 5 or 7 items, which two threads share 3:2 or 4:3. With AVX-512
// parts of 24 positions (kernel_config.h) let a 7x7 plane (49) take two: MobileNetV2's 960 -> 160
// projection, 5 sets of two blocks, ran 43.8 us on two Zen 5 cores as one part each, 38.1 as two
// (its 576 -> 160 29.0 -> 25.1, 38.7 -> 41.0 on one core), and RegNetY's 440 -> 440, tiles of 12
// positions instead of 10, 106 -> 96 us on one core.
constexpr int64_t kMinItems = 16;
constexpr int64_t kMinPartPositions = kCompiledConfig.conv_min_part_positions;
// Layers whose weights take at most this many bytes split their rows among threads (Run).
constexpr int64_t kMaxPositionSplitWeightBytes = 256 * 1024;

// Groups of one 8-channel block in and out with AVX-512 (PairsOneBlockGroups: RegNetY's 3x3
// layers of 8-channel groups): two groups to a 16-lane vector, output blocks ocb and ocb + 1 (a
// layer's last group alone when their count is odd; the second half then repeats the first and is
// not stored), each half reading its own group's input block and weights. Each input value of the
// first group is broadcast over lanes 0-7 and the second's over lanes 8-15 (BroadcastHalves) and
// feeds every tap of the row that reads it: 3 FMAs at stride 1, 1 or 2 at stride 2. The tile of one
// group on 8 lanes took a broadcast per 8-lane FMA (ConvTile), half of what a core with 512-bit
// FMA units computes. Tiles of T positions, KW = 3, those at a row's ends skipping the input
// columns past them (the input is not copied with its padding written out: that copy was 4% of
// RegNetY-400MF); rows narrower than the tiles run as one group each in the checked tile of 8 lanes.
constexpr int kPairedGroupMinTile = 7, kPairedGroupMaxTile = 14;
static_assert(kCompiledConfig.vector_floats != 16 || kPairedGroupMaxTile <= kCompiledConfig.conv_tile_8,
              "a paired tile's positions fit the checked tile");
// The variants that pair groups of one block: 8-channel blocks on 16 lanes, with AVX-512.
template <int OB, int kLocalGroup, int L>
constexpr bool kPairsGroups = OB == 8 && kLocalGroup == 0 && L == 16 && kCompiledConfig.vector_floats == 16;

// kEdges: the tile's windows may reach past the row's ends (the input not copied with its padding
// written out): input columns outside the row are skipped, and of the T positions computed the
// tile's count are stored.
template <int T, int S, bool kEdges>
void PairedGroupTile(const Job& job, const Tile& tile) {
  using V = Vec<16>;
  constexpr int kWidth = 3, kInputs = S * (T - 1) + kWidth, kTaps = kWidth * 64;  // 64: an 8 x 8 tap
  const Conv2DNCHWcParams& p = *job.p;
  V acc[T];
  const int64_t count = kEdges ? tile.count : T;
  float* out = TileStart<8, 1, T, 16>(job, tile, count, acc);
  const int64_t plane = job.in_plane, block_weights = p.kernel_height * kTaps;
  const bool pair = tile.blocks == 2;
  const float* x0 = job.data + (tile.n * job.in_blocks + tile.ocb) * plane;
  const float* x1 = pair ? x0 + plane : x0;
  const float* w0 = job.weight + tile.ocb * block_weights;
  const float* w1 = pair ? w0 + block_weights : w0;
  const int64_t ih0 = tile.oh * p.stride_h - p.pad_top, iw0 = tile.ow0 * S - p.pad_left;
  int64_t kh_begin, kh_end;
  ValidRange(ih0, p.dilation_h, p.in_height, p.kernel_height, &kh_begin, &kh_end);
  // The input columns inside the row, of the kInputs the tile reads.
  const int64_t j_begin = kEdges ? std::max<int64_t>(0, -iw0) : 0;
  const int64_t j_end = kEdges ? std::min<int64_t>(kInputs, p.in_width - iw0) : kInputs;
  for (int64_t kh = kh_begin; kh < kh_end; ++kh) {
    const int64_t row = ((ih0 + kh * p.dilation_h) * p.in_width + iw0) * 8, w_row = kh * kTaps;
    for (int ic = 0; ic < 8; ++ic) {
      V w[kWidth];
#pragma GCC unroll 3
      for (int kw = 0; kw < kWidth; ++kw) {
        w[kw] = V::LoadHalves(w0 + w_row + kw * 64 + ic * 8, w1 + w_row + kw * 64 + ic * 8, true);
        w[kw].Pin();
      }
#pragma GCC unroll 64
      for (int j = 0; j < kInputs; ++j) {
        if (kEdges && (j < j_begin || j >= j_end)) continue;
        V xv = V::BroadcastHalves(x0 + row + j * 8 + ic, x1 + row + j * 8 + ic);
#pragma GCC unroll 3
        for (int kw = 0; kw < kWidth; ++kw) {
          const int t = (j - kw) / S;  // the output position, when j >= kw and S divides j - kw
          if (j >= kw && (j - kw) % S == 0 && t < T) acc[t] = V::Fma(xv, w[kw], acc[t]);
        }
      }
    }
  }
  Finish<8, 1, T, 16>(job, tile, count, acc, out);
}

template <int S, int... I>
std::array<TileFn, sizeof...(I)> PairedGroupTable(std::integer_sequence<int, I...>) {
  return {&PairedGroupTile<kPairedGroupMinTile + I, S, false>...};
}

// Positions [ow_begin, ow_end) of the tile's row, for its pair of groups (as RunRow).
template <int S>
void RunPairedGroupRow(const Job& job, Tile& tile, int64_t ow_begin, int64_t ow_end) {
  constexpr int kMin = kPairedGroupMinTile, kMax = kPairedGroupMaxTile;
  static const auto unchecked = PairedGroupTable<S>(std::make_integer_sequence<int, kMax - kMin + 1>());
  ForEachTileOfRow<kMin, kMax>(
      *job.p, tile, ow_begin, ow_end, [&](int64_t count) { unchecked[count - kMin](job, tile); },
      [&] {
        // At a row's end: the tile of the narrowest or the widest width that holds it (rows of 7, 14,
        // 28 and 56 positions fill them; edge tiles of every width doubled the kernel's compile time).
        if (tile.count >= kMin) {
          if (tile.count <= kMin) {
            PairedGroupTile<kMin, S, true>(job, tile);
          } else {
            PairedGroupTile<kMax, S, true>(job, tile);
          }
          return;
        }
        for (int64_t b = 0; b < tile.blocks; ++b) {
          Tile group = tile;
          group.ocb += b;
          group.blocks = 1;
          ConvTile<8, 1, kMaxTile<8, 1>, true, 0, 1, 8>(job, group);
        }
      });
}

// Work item of a convolution of paired groups: (image, pair of groups, a few rows, a part of each row).
template <int S>
void RunPairedGroupItems(int64_t begin, int64_t end, void* context) {
  const Job& job = *static_cast<const Job*>(context);
  const Conv2DNCHWcParams& p = *job.p;
  const int64_t pairs = (job.out_blocks + 1) / 2;
  for (int64_t item = begin; item < end; ++item) {
    const auto [set, row_item, part] = PlaceOfItem(job, item);
    const int64_t ocb = set % pairs * 2;
    Tile tile{set / pairs, ocb, std::min<int64_t>(2, job.out_blocks - ocb), 0, 0, 0, 0, 1, true, true};
    int64_t oh_end = std::min(p.out_height, (row_item + 1) * job.rows_per_item);
    int64_t ow_begin = part * job.part_width, ow_end = std::min(p.out_width, ow_begin + job.part_width);
    for (tile.oh = row_item * job.rows_per_item; tile.oh < oh_end; ++tile.oh) {
      RunPairedGroupRow<S>(job, tile, ow_begin, ow_end);
    }
  }
}

// The first output block of a set of tile_blocks blocks (sets count over images and groups).
inline int64_t FirstBlockOfSet(const Job& job, int64_t set) {
  const int64_t groups = job.out_blocks / job.group_out_blocks;
  return set / job.block_sets % groups * job.group_out_blocks + set % job.block_sets * job.tile_blocks;
}

// The tiles RunRow computes a row of `positions` in, with tiles of `vectors` vectors.
template <int L>
int64_t TilesOfRow(int64_t vectors, int64_t positions) {
  const int64_t widest = vectors == 3 ? kMaxTile<L, 3> : vectors == 2 ? kMaxTile<L, 2> : kMaxTile<L, 1>;
  return (positions + widest - 1) / widest;
}

// Work item: (image, group, set of tile_blocks output blocks, a few rows, a part of each row).
template <int OB, int kLocalGroup, int IB, int S, int L>
void RunItems(int64_t begin, int64_t end, void* context) {
  constexpr int kPer = kBlocksPerVector<OB, L>;
  const Job& job = *static_cast<const Job*>(context);
  const Conv2DNCHWcParams& p = *job.p;
  int64_t in_total = kLocalGroup > 0 ? 1 : job.group_in_blocks;
  RowFn depthwise_row = nullptr;
  if constexpr (kLocalGroup == 1) depthwise_row = DepthwiseRowOf<OB>(p);
  // Planes of one position read position 0 of an input plane of one (PointTile).
  const bool one_position = kLocalGroup == 0 && p.out_height * p.out_width == 1 && p.in_height * p.in_width == 1 &&
                            p.kernel_height == 1 && p.kernel_width == 1 && p.pad_top == 0 && p.pad_left == 0;
  const int64_t w_icb = p.kernel_height * p.kernel_width * p.in_block * OB;  // floats of an input block's weights
  for (int64_t item = begin; item < end; ++item) {
    const auto [set, row_item, part] = PlaceOfItem(job, item);  // set: over (n, group, set in the group)
    int64_t groups = job.out_blocks / job.group_out_blocks;
    int64_t n = set / job.block_sets / groups, ocb = FirstBlockOfSet(job, set);
    int64_t blocks = std::min(job.tile_blocks, job.group_out_blocks - ocb % job.group_out_blocks);
    int64_t vectors = (blocks + kPer - 1) / kPer;
    int64_t oh_begin = row_item * job.rows_per_item;
    int64_t oh_end = std::min(p.out_height, oh_begin + job.rows_per_item);
    int64_t ow_begin = part * job.part_width, ow_end = std::min(p.out_width, ow_begin + job.part_width);
    for (int64_t c0 = 0; c0 < in_total; c0 += job.chunk) {
      Tile tile{n, ocb, blocks, 0, 0, 0, c0, std::min(in_total, c0 + job.chunk), c0 == 0, c0 + job.chunk >= in_total};
      if (one_position) {
        for (int64_t v = 0; v < vectors; ++v) {
          Tile vector = tile;
          vector.ocb += v * kPer;
          vector.blocks = std::min<int64_t>(kPer, blocks - v * kPer);
          PointTile<OB, L>(job, vector);
        }
        continue;
      }
      if (kLocalGroup == 0 && job.weights_ahead) {  // the next chunk's weights: this set's, or the next item's set's
        int64_t next_icbs = 0;
        if (c0 + job.chunk < in_total) {
          tile.ahead = job.weight + (ocb * job.group_in_blocks + c0 + job.chunk) * w_icb;
          next_icbs = std::min(job.chunk, in_total - c0 - job.chunk);
        } else if (item + 1 < end) {
          tile.ahead = job.weight + FirstBlockOfSet(job, PlaceOfItem(job, item + 1).set) * job.group_in_blocks * w_icb;
          next_icbs = std::min(job.chunk, in_total);
        }
        const int64_t tiles = (oh_end - oh_begin) * TilesOfRow<L>(vectors, ow_end - ow_begin);
        const int64_t taps = (tile.icb_end - tile.icb_begin) * p.kernel_height * p.kernel_width;
        tile.ahead_block_lines = std::max<int64_t>(1, (next_icbs * w_icb + 15) / 16);
        tile.ahead_total = blocks * tile.ahead_block_lines;
        tile.ahead_lines = (tile.ahead_total + tiles - 1) / tiles;
        tile.ahead_step = (tile.ahead_lines + taps - 1) / taps;
      }
      for (int64_t oh = oh_begin; oh < oh_end; ++oh) {
        tile.oh = oh;
        if constexpr (kThreeBlockTiles<OB, kLocalGroup, IB, L>) {
          if (blocks == 3 && !job.weights_ahead) {  // (weights asked ahead: ConvTile's)
            RunThreeBlockRow<IB, S>(job, tile, ow_begin, ow_end);
            continue;
          }
        }
        static_assert(kTileVectors<L> >= 1 && kTileVectors<L> <= 3, "tiles of 1, 2 or 3 vectors are compiled");
        if constexpr (kLocalGroup == 0 && kTileVectors<L> >= 3) {
          if (vectors == 3) {
            RunRow<OB, 3, 0, IB, S, L>(job, tile, ow_begin, ow_end);
            continue;
          }
        }
        if constexpr (kLocalGroup == 0 && kTileVectors<L> >= 2) {
          if (vectors == 2) {
            RunRow<OB, 2, 0, IB, S, L>(job, tile, ow_begin, ow_end);
            continue;
          }
        }
        if (depthwise_row != nullptr) {
          depthwise_row(job, tile, ow_begin, ow_end);
          continue;
        }
        RunRow<OB, 1, kLocalGroup, IB, S, L>(job, tile, ow_begin, ow_end);
      }
    }
  }
}

template <int OB, int kLocalGroup, int IB, int S, int L>
int Run(Job& job) {
  const Conv2DNCHWcParams& p = *job.p;
  job.in_registers = RegisterEpilogueOf(job.epilogue, job.epilogue_size, /*swish=*/true);
  job.tile_blocks =
      p.depthwise ? 1 : std::min<int64_t>(kTileVectors<L> * kBlocksPerVector<OB, L>, job.group_out_blocks);
  job.block_sets = (job.group_out_blocks + job.tile_blocks - 1) / job.tile_blocks;
  int64_t chunk_bytes = p.kernel_height * p.kernel_width * p.in_block * OB * job.tile_blocks * static_cast<int64_t>(sizeof(float));
  job.chunk = std::max<int64_t>(1, kCompiledConfig.conv_chunk_bytes / chunk_bytes);
  job.rows_per_item = std::min(p.out_height, std::max<int64_t>(1, (kPositionsPerItem + p.out_width - 1) / p.out_width));
  job.row_items = (p.out_height + job.rows_per_item - 1) / job.rows_per_item;
  // Groups of one block, two to a vector (PairedGroupTile): sets of two groups.
  const bool paired = kPairsGroups<OB, kLocalGroup, L> && PairsOneBlockGroups(p, kCompiledConfig);
  int64_t sets = paired ? p.batch * ((job.out_blocks + 1) / 2)
                        : p.batch * (job.out_blocks / job.group_out_blocks) * job.block_sets;
  if (sets == 0) return 0;  // no image
  job.row_parts = (p.out_width + kRowPartPositions - 1) / kRowPartPositions;
  int64_t wanted_parts = (kMinItems + sets * job.row_items - 1) / (sets * job.row_items);
  job.row_parts = std::max(job.row_parts, std::min(wanted_parts, p.out_width / kMinPartPositions));
  job.part_width = (p.out_width + job.row_parts - 1) / job.row_parts;
  job.row_parts = (p.out_width + job.part_width - 1) / job.part_width;
  job.batch_sets = sets;
  // Layers of small weights split their rows among the threads rather than their channels: such
  // layers (MobileNet's, EfficientNet's) are bound by moving their activations, and a share of the
  // rows is what the thread computed of the layer before too (the part in its own caches), where
  // a share of the channels reads half its input from the other core's. Larger weights split by
  // channels, each thread reading half of them.
  const int64_t weight_bytes = p.out_channels * (p.in_channels / p.groups) * p.kernel_height * p.kernel_width *
                               static_cast<int64_t>(sizeof(float));  // a depthwise job's groups are 1 in `job`
  job.positions_outer = weight_bytes <= kMaxPositionSplitWeightBytes && job.row_items * job.row_parts > 1;
  // Weights larger than that come from memory in a model (WeightsAhead); smaller ones stay in cache,
  // and asking for them again cost the text detector, whose layers' weights are small, 2%.
  job.weights_ahead = weight_bytes > kMaxPositionSplitWeightBytes;
  if constexpr (kPairsGroups<OB, kLocalGroup, L>) {
    if (paired) {
      return ParallelFor(sets * job.row_items * job.row_parts,
                         p.stride_w == 1 ? RunPairedGroupItems<1> : RunPairedGroupItems<2>, &job);
    }
  }
  return ParallelFor(sets * job.row_items * job.row_parts, RunItems<OB, kLocalGroup, IB, S, L>, &job);
}

// A copy of the input that makes the convolution simpler: with its padding written out as zeros,
// so that every tile runs unchecked (checking the taps of border tiles costs more than the copy,
// measured on ResNet layers), or for a strided 1x1 convolution with only the positions it reads,
// so that it runs as a pointwise one. Element [r, c] of each plane of the copy is input element
// [r * step_h - pad_top, c * step_w - pad_left], zero outside the input.
struct GatherJob {
  const Conv2DNCHWcParams* p;  // the original parameters
  const float* data;
  float* copy;
  int64_t height, width, step_h, step_w;  // of the copy's planes
};

void GatherPlanes(int64_t begin, int64_t end, void* context) {
  const auto& job = *static_cast<const GatherJob*>(context);
  const Conv2DNCHWcParams& p = *job.p;
  const int64_t ib = p.in_block;
  for (int64_t plane = begin; plane < end; ++plane) {
    const float* in = job.data + plane * p.in_height * p.in_width * ib;
    float* out = job.copy + plane * job.height * job.width * ib;
    for (int64_t r = 0; r < job.height; ++r, out += job.width * ib) {
      int64_t h = r * job.step_h - (job.step_h == 1 ? p.pad_top : 0);
      if (h < 0 || h >= p.in_height) {
        std::fill(out, out + job.width * ib, 0.0f);
        continue;
      }
      const float* row = in + h * p.in_width * ib;
      if (job.step_w > 1) {  // no padding: every position is inside
        for (int64_t c = 0; c < job.width; ++c) std::copy(row + c * job.step_w * ib, row + (c * job.step_w + 1) * ib, out + c * ib);
        continue;
      }
      // Columns [0, pad_left) and [pad_left + in_width, width) are padding.
      int64_t left = std::min(p.pad_left, job.width);
      int64_t inside = std::max<int64_t>(0, std::min(p.in_width, job.width - left));
      std::fill(out, out + left * ib, 0.0f);
      std::copy(row, row + inside * ib, out + left * ib);
      std::fill(out + (left + inside) * ib, out + job.width * ib, 0.0f);
    }
  }
}

// Zero when the parameters are a form the kernel computes; else -1 with the message set.
int CheckParams(const Conv2DNCHWcParams& p) {
  bool shape_ok = p.in_block >= 1 && p.in_channels % p.in_block == 0 && (p.out_block == 8 || p.out_block == 16) &&
                  p.out_channels % p.out_block == 0 && p.out_height > 0 && p.out_width > 0;
  if (!shape_ok) return Fail("Conv2DNCHWc: channels do not fit the blocks (output block must be 8 or 16)");
  bool local_groups_fit = p.in_channels == p.out_channels && p.in_block == p.out_block && p.groups >= 1 &&
                          p.in_channels % p.groups == 0 &&
                          (p.in_channels / p.groups == 1 || p.in_channels / p.groups == 2 || p.in_channels / p.groups == 4);
  if (p.depthwise && !local_groups_fit) {
    return Fail("Conv2DNCHWc: a depthwise convolution (or one of groups of 2 or 4 channels) needs equal channels and "
                "blocks on both sides, and 1, 2 or 4 channels per group");
  }
  bool groups_fit = p.groups >= 1 && p.in_channels % p.groups == 0 && p.out_channels % p.groups == 0 &&
                    (p.in_channels / p.groups) % p.in_block == 0 && (p.out_channels / p.groups) % p.out_block == 0;
  if (!p.depthwise && !groups_fit) {
    return Fail("Conv2DNCHWc: each group's input and output channels must fill whole blocks");
  }
  return 0;
}

}  // namespace

template <int OB, int kLocalGroup, int IB, int S, int L>
int Conv2DNCHWc(const Conv2DNCHWcParams& p, const float* data, const float* weight, float* out,
                const EpilogueStep* epilogue, int epilogue_size) {
  static_assert(L == OB || (OB == 8 && L == 16 && kLocalGroup == 0), "lanes: one block, or two 8-channel blocks");
  if (CheckParams(p) != 0) return -1;
  if (!Conv2DNCHWcVariantComputes({OB, kLocalGroup, IB, S, L}, p)) {
    return Fail("Conv2DNCHWc: the parameters need another variant of the kernel than the one called");
  }
  Conv2DNCHWcParams run = p;
  // The input extent the windows cover, padding included.
  int64_t height = (p.out_height - 1) * p.stride_h + (p.kernel_height - 1) * p.dilation_h + 1;
  int64_t width = (p.out_width - 1) * p.stride_w + (p.kernel_width - 1) * p.dilation_w + 1;
  bool padded = p.pad_top > 0 || p.pad_left > 0 || p.in_height + p.pad_top < height || p.in_width + p.pad_left < width;
  bool one_by_one = p.kernel_height == 1 && p.kernel_width == 1;
  if ((p.copy_padded && (p.gather_strided || p.depthwise)) ||
      (p.gather_strided && (!one_by_one || padded || p.depthwise))) {
    return Fail("Conv2DNCHWc: copy_padded and gather_strided exclude each other and need a convolution that is "
                "not depthwise (gather_strided: 1x1, without padding)");
  }
  GatherJob gather{&p, data, nullptr, height, width, 1, 1};
  if (p.gather_strided) {
    gather = GatherJob{&p, data, nullptr, p.out_height, p.out_width, p.stride_h, p.stride_w};
    run.stride_h = run.stride_w = 1;
  }
  Workspace copy(p.copy_padded || p.gather_strided ? p.batch * p.in_channels * gather.height * gather.width * sizeof(float)
                                                   : 0);
  if (p.copy_padded || p.gather_strided) {
    if (!copy.ok()) return Fail("Conv2DNCHWc: out of workspace memory");
    gather.copy = copy.as<float>();
    ParallelFor(p.batch * (p.in_channels / p.in_block), GatherPlanes, &gather);
    data = gather.copy;
    run.in_height = gather.height;
    run.in_width = gather.width;
    run.pad_top = run.pad_left = 0;
  }
  if (p.flat_plane) {  // position q of a plane is read for output position q (after a gather too)
    bool pointwise = one_by_one && run.stride_h == 1 && run.stride_w == 1 && run.pad_top == 0 &&
                     run.pad_left == 0 && run.out_height == run.in_height && run.out_width == run.in_width;
    if (!pointwise) return Fail("Conv2DNCHWc: flat_plane needs a 1x1 convolution with stride 1 and no padding");
    if (p.out_height * p.out_width <= kMaxFlatPositions) {
      run.in_width = run.out_width = p.out_height * p.out_width;
      run.in_height = run.out_height = 1;
    }
  }
  int64_t groups = p.depthwise ? 1 : p.groups;  // a depthwise job reads its own block
  Job job(&run, data, weight, out, epilogue, epilogue_size, p.in_channels / p.in_block, p.out_channels / p.out_block,
          p.in_channels / groups / p.in_block, p.out_channels / groups / p.out_block,
          run.in_height * run.in_width * run.in_block, run.out_height * run.out_width * run.out_block);
  return Run<OB, kLocalGroup, IB, S, L>(job);
}

#define KILN_CONV2D_NCHWC_SIGNATURE(...)                                                                    \
  template int Conv2DNCHWc<__VA_ARGS__>(const Conv2DNCHWcParams& p, const float* data, const float* weight, \
                                        float* out, const EpilogueStep* epilogue, int epilogue_size)
#if defined(KILN_INSTANTIATE_Conv2DNCHWc)
// A model library's build: one object per variant its code names (backend/compiler.cc).
KILN_CONV2D_NCHWC_SIGNATURE(KILN_INSTANTIATE);
#else
// Every variant that Conv2DNCHWcVariantOf returns on some instruction set (the kernel tests).
namespace {
constexpr Conv2DNCHWcVariant kVariants[] = {
    {16, 0, 0, 1, 16}, {16, 0, 8, 1, 16}, {16, 0, 16, 1, 16}, {16, 0, 8, 2, 16}, {16, 0, 16, 2, 16},
    {16, 0, 1, 2, 16}, {8, 0, 0, 1, 8},   {8, 0, 0, 1, 16},   {8, 0, 8, 1, 16},  {8, 0, 16, 1, 16},
    {8, 0, 8, 2, 16},  {8, 0, 16, 2, 16}, {8, 0, 1, 2, 16},   {16, 1, 0, 1, 16}, {16, 2, 0, 1, 16},
    {16, 4, 0, 1, 16}, {8, 1, 0, 1, 8},   {8, 2, 0, 1, 8},    {8, 4, 0, 1, 8},   {8, 0, 8, 1, 8},
    {8, 0, 16, 1, 8},  {8, 0, 8, 2, 8},   {8, 0, 16, 2, 8}};

template <size_t... I>
Conv2DNCHWcKernel VariantFor(const Conv2DNCHWcVariant& wanted, std::index_sequence<I...>) {
  static constexpr Conv2DNCHWcKernel kernels[] = {
      &Conv2DNCHWc<kVariants[I].out_block, kVariants[I].local_group, kVariants[I].in_block, kVariants[I].stride,
                   kVariants[I].lanes>...};
  for (size_t i = 0; i < sizeof...(I); ++i) {
    if (kVariants[i] == wanted) return kernels[i];
  }
  return nullptr;
}
}  // namespace

int Conv2DNCHWcAnyVariant(const Conv2DNCHWcParams& p, const float* data, const float* weight, float* out,
                          const EpilogueStep* epilogue, int epilogue_size) {
  if (CheckParams(p) != 0) return -1;
  Conv2DNCHWcKernel kernel =
      VariantFor(Conv2DNCHWcVariantOf(p, kCompiledConfig), std::make_index_sequence<std::size(kVariants)>());
  if (kernel == nullptr) return Fail("Conv2DNCHWc: no variant of the kernel computes these parameters");
  return kernel(p, data, weight, out, epilogue, epilogue_size);
}
#endif
#undef KILN_CONV2D_NCHWC_SIGNATURE

}  // namespace kiln::kernels
