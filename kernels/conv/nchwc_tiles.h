// The tiles of the blocked direct convolution (conv2d_nchwc.cc) and the rows and work items
// that the fused pointwise-depthwise kernel (pointwise_depthwise.cc) runs them in. A tile keeps
// T output positions of one or more output channel blocks in registers (simd.h), accumulates
// over input channels and kernel taps, stores, and applies the fused epilogue. Tiles that touch
// the border, or are narrower than the compiled tiles, check each tap.
//
// Block-local convolutions (depthwise, or groups of 2 or 4 channels: output block b reads input
// block b) broadcast nothing: the input's vectors are multiplied lane by lane, for groups after a
// shuffle that spreads each of a group's channels over the group's lanes.
//
// Where a block is one vector of 8 channels, a tile computes up to three output channel blocks
// at once (kernel_config.h), so that each broadcast input value feeds three FMAs. With AVX-512,
// 8-channel blocks are computed two to a 16-lane vector (L = 16, "paired"): the accumulator of
// blocks 2b and 2b + 1 at one position, their weights loaded as two halves, its halves stored to
// the two blocks' places; a tile's last vector may hold one block only. (One AVX-512 FMA on 8
// lanes costs one on 16 on cores with 512-bit FMA units: on an Intel Xeon core, a 440-channel
// 1x1 layer on 7x7 in 8-channel blocks 101 GFLOP/s, in 16-channel blocks 197.) So are groups of
// one 8-channel block, two groups to a vector (PairedGroupTile, conv2d_nchwc.cc).
#pragma once

#include <algorithm>
#include <array>
#include <utility>

#include "kernels/backend_api.h"
#include "kernels/epilogue.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"

namespace kiln::kernels::nchwc {

// An epilogue of a bias per channel, a residual and then relu, clip, swish or hard swish, each
// optional (the common tails of a convolution), is applied to the accumulators before they are
// stored, not in passes over the stored tile: layers of few input channels (SqueezeNet's,
// MobileNet's, the text detector's, of 16 or 24) are bound by stores, and each pass stores the
// tile again. The bias starts the sums (TileStart). Swish runs over the stored tile, right after
// the store and while it is in L1, in a function of its own (ActivationOverTile): its exp's
// constants and temporaries beside a tile's accumulators are more than the registers hold, and
// where it was applied in registers (AVX-512) GCC kept 9 of the 24 accumulators of every
// two-block tile on the stack across the input channel loop, in every layer, swish or not (1x1
// layers alone on one Zen 5 core 5-16% faster without it; EfficientNet-B0, whose layers it
// follows, 5.78 -> 5.75 ms). Hard swish's few constants fit beside AVX-512's accumulators, not
// beside AVX2's (there every tile function was slower with it: relu 0.56 -> 0.61 ms).
constexpr bool kHardSwishInRegisters = kCompiledConfig.vector_floats == 16;

// Swish or hard swish (kActivation) over `floats` floats of each of `blocks` output blocks,
// block_stride apart, from `out`.
template <RegisterEpilogue::Activation kActivation>
[[gnu::noinline]] void ActivationOverTile(float* out, int64_t block_stride, int64_t blocks, int64_t floats) {
  using V = Vec<kCompiledConfig.vector_floats>;
  auto f = [](auto x) { return kActivation == RegisterEpilogue::kSwish ? scalar::Swish(x) : scalar::HardSwish(x); };
  for (int64_t b = 0; b < blocks; ++b) {
    float* x = out + b * block_stride;
    int64_t i = 0;
    for (; i + kCompiledConfig.vector_floats <= floats; i += kCompiledConfig.vector_floats) {
      f(V::Load(x + i)).Store(x + i);
    }
    const int tail = static_cast<int>(floats - i);
    if (tail > 0) f(V::LoadLanes(x + i, 0, tail)).StoreLanes(x + i, tail);
  }
}

struct Job {
  // What every job names: a missing one is a compile error. The rest is set by name.
  Job(const Conv2DNCHWcParams* p, const float* data, const float* weight, float* out, const EpilogueStep* epilogue,
      int epilogue_size, int64_t in_blocks, int64_t out_blocks, int64_t group_in_blocks, int64_t group_out_blocks,
      int64_t in_plane, int64_t out_plane)
      : p(p), data(data), weight(weight), out(out), epilogue(epilogue), epilogue_size(epilogue_size),
        in_blocks(in_blocks), out_blocks(out_blocks), group_in_blocks(group_in_blocks),
        group_out_blocks(group_out_blocks), in_plane(in_plane), out_plane(out_plane) {}

  const Conv2DNCHWcParams* p;
  const float* data;
  const float* weight;
  float* out;
  const EpilogueStep* epilogue;
  int epilogue_size;
  int64_t in_blocks, out_blocks;  // C / ib, O / ob
  int64_t group_in_blocks;         // input channel blocks of one group: (C / groups) / ib
  int64_t group_out_blocks;        // output channel blocks of one group: (O / groups) / ob
  int64_t in_plane, out_plane;     // floats from one channel block to the next, input and output
  int64_t tile_blocks = 1;         // output channel blocks a tile computes together (fewer at a group's end)
  int64_t block_sets = 0;          // sets of tile_blocks blocks in one group
  int64_t rows_per_item = 0, row_items = 0;  // output rows per work item; row ranges per (n, block set)
  int64_t row_parts = 0, part_width = 0;     // each row range split along the row: parts of so many positions
  int64_t chunk = 0;                         // input channel blocks per chunk
  int64_t batch_sets = 0;                    // sets of output blocks over all images and groups
  RegisterEpilogue in_registers;  // the epilogue, when applied in the tile (before the store; swish, and
                                  // AVX2's hard swish, right after it)
  bool positions_outer = false;   // work items ordered by rows and parts first, sets of blocks last
  // A depthwise layer that reads a band of the rows a pointwise convolution wrote
  // (Conv2DPointwiseDepthwise): `data` holds rows from band_first_row on of the blocks from
  // band_first_block on, in_plane apart.
  bool reads_band = false;
  int64_t band_first_row = 0, band_first_block = 0;
  bool weights_ahead = false;  // tiles ask for the next chunk's weights (Tile::ahead)
};

// Where row ih of the input block that output block ocb of image n reads starts (its column 0).
template <int OB>
KILN_ALWAYS_INLINE const float* InputRow(const Job& job, int64_t n, int64_t ocb, int64_t ih) {
  const Conv2DNCHWcParams& p = *job.p;
  if (job.reads_band) {
    return job.data + (ocb - job.band_first_block) * job.in_plane + (ih - job.band_first_row) * p.in_width * OB;
  }
  return job.data + (n * job.out_blocks + ocb) * job.in_plane + ih * p.in_width * OB;
}

// A work item's coordinates: its set of output blocks (over images and groups), range of rows and
// part of each row. Items go by sets first (each thread's share of the items a share of the output
// channels), or, with positions_outer, by rows and parts first (a share of the rows).
struct ItemPlace {
  int64_t set, row_item, part;
};
inline ItemPlace PlaceOfItem(const Job& job, int64_t item) {
  if (job.positions_outer) {
    int64_t place = item / job.batch_sets;
    return {item % job.batch_sets, place / job.row_parts, place % job.row_parts};
  }
  return {item / job.row_parts / job.row_items, item / job.row_parts % job.row_items, item % job.row_parts};
}

// One call of a tile function: output positions [ow0, ow0 + count) of row oh of blocks
// [ocb, ocb + blocks).
struct Tile {
  int64_t n, ocb, blocks, oh, ow0, count;
  int64_t icb_begin, icb_end;  // the chunk of input channel blocks
  bool first, last;            // first chunk: start from zero; last chunk: epilogue
  // The weights the tiles read next, asked for while this chunk computes (WeightsAhead), or null:
  // the next chunk's, from block `ocb` of the next chunk's set on, each block's ahead_block_lines
  // cache lines in one piece. The chunk's tiles share the asking: this one asks for lines
  // [ahead_line, ahead_line + ahead_lines) of the blocks' pieces one after the other (ahead_total
  // in all), ahead_step of them with each tap it computes.
  const float* ahead = nullptr;
  int64_t ahead_line = 0, ahead_lines = 0, ahead_total = 0, ahead_block_lines = 1, ahead_step = 0;
};

// Taps k in [begin, end) with 0 <= start + k * step < size, for k < count.
inline void ValidRange(int64_t start, int64_t step, int64_t size, int64_t count, int64_t* begin, int64_t* end) {
  if (step == 1) {
    *begin = std::max<int64_t>(0, -start);
    *end = std::max<int64_t>(0, std::min(count, size - start));
  } else {
    *begin = start >= 0 ? 0 : (-start + step - 1) / step;
    *end = size - 1 - start < 0 ? 0 : std::min(count, (size - 1 - start) / step + 1);
  }
  if (*begin > *end) *begin = *end;
}

// Applies the epilogue to the `count` positions of block ocb just stored at `out`. Kept out of the
// tile functions: inlined there, its registers made GCC keep half of the accumulators in memory
// through the whole tile (measured on AVX2 with 16-channel blocks: the direct convolution at 36
// GFLOP/s of the core's 97, 59 without), while a pass over the tile in L1 cache costs little.
template <int OB>
__attribute__((noinline)) void ApplyEpilogue(const Job& job, int64_t ocb, int64_t count, float* out) {
  ApplySteps<OB>(job.epilogue, job.epilogue_size, ocb, out, count, out - job.out);
}


// Memory blocks of OB channels one vector of L lanes holds: 1, or 2 when paired.
template <int OB, int L>
constexpr int kBlocksPerVector = L / OB;

// Whether the last of a tile's NB vectors holds all its blocks (paired: not when the tile has an
// odd number of blocks). Read once per tile: the tile's fields are in memory that stores might
// alias.
template <int OB, int L, int NB>
KILN_ALWAYS_INLINE bool LastVectorFull(const Tile& tile) {
  return tile.blocks >= NB * kBlocksPerVector<OB, L>;
}

// The vector of lanes L at `p` (block b's place), its blocks `block_stride` floats apart; a
// paired vector's second block only when `second`.
template <int OB, int L>
KILN_ALWAYS_INLINE Vec<L> LoadBlocks(const float* p, int64_t block_stride, bool second) {
  if constexpr (kBlocksPerVector<OB, L> == 1) return Vec<L>::Load(p);
  else return Vec<L>::LoadHalves(p, p + block_stride, second);
}

template <int OB, int L>
KILN_ALWAYS_INLINE void StoreBlocks(Vec<L> v, float* p, int64_t block_stride, bool second) {
  if constexpr (kBlocksPerVector<OB, L> == 1) v.Store(p);
  else v.StoreHalves(p, p + block_stride, second);
}

// The activation of an epilogue in registers over the K accumulators: relu, clip, and hard swish
// where kHardSwishInRegisters (swish runs over the stored tile, ActivationOverTile).
template <int K, int L>
KILN_ALWAYS_INLINE void ActivateInRegisters(const RegisterEpilogue& r, Vec<L> (&acc)[K]) {
  using V = Vec<L>;
  if (r.activation == RegisterEpilogue::kRelu) {
#pragma GCC unroll 32
    for (int i = 0; i < K; ++i) acc[i] = scalar::Relu(acc[i]);
  } else if (r.activation == RegisterEpilogue::kClip) {
    V lo = V::Broadcast(&r.lo), hi = V::Broadcast(&r.hi);
#pragma GCC unroll 32
    for (int i = 0; i < K; ++i) acc[i] = scalar::Clip(acc[i], lo, hi);
  } else if constexpr (kHardSwishInRegisters) {
    if (r.activation == RegisterEpilogue::kHardSwish) {
#pragma GCC unroll 32
      for (int i = 0; i < K; ++i) acc[i] = scalar::HardSwish(acc[i]);
    }
  }
}

// What the epilogue does after blocks [first_block, first_block + blocks) of a tile (count
// positions from `out`, the first block's) are stored on the last chunk: swish or, without
// AVX-512, hard swish over the stored tile when the epilogue is in registers, else each of its
// steps. Out of line: inlined, it changed the tiles' register allocation (ConvTile of two 8-channel
// pairs kept its accumulators in memory across the input channels).
template <int OB>
__attribute__((noinline)) void FinishBlocks(const Job& job, int64_t first_block, int64_t blocks, int64_t count,
                                            float* out) {
  const RegisterEpilogue& r = job.in_registers;
  if (r.active) {
    if (r.activation == RegisterEpilogue::kSwish) {
      ActivationOverTile<RegisterEpilogue::kSwish>(out, job.out_plane, blocks, count * OB);
    } else if (!kHardSwishInRegisters && r.activation == RegisterEpilogue::kHardSwish) {
      ActivationOverTile<RegisterEpilogue::kHardSwish>(out, job.out_plane, blocks, count * OB);
    }
    return;
  }
  for (int64_t b = 0; b < blocks; ++b) ApplyEpilogue<OB>(job, first_block + b, count, out + b * job.out_plane);
}

// Stores the first `count` positions of each of the NB vectors of blocks (acc[b * T + t]: vector
// b, position t) from `out`, the first block's, then (on the last chunk) applies the epilogue.
template <int OB, int NB, int T, int L>
KILN_ALWAYS_INLINE void Finish(const Job& job, const Tile& tile, int64_t count, Vec<L> (&acc)[NB * T], float* out) {
  constexpr int kPer = kBlocksPerVector<OB, L>;
  const int64_t block_stride = job.out_plane;
  const RegisterEpilogue& r = job.in_registers;
  const bool last_full = LastVectorFull<OB, L, NB>(tile);
  if (tile.last && r.active) {
    if (r.residual != nullptr) {
      const float* residual = r.residual + (out - job.out);
#pragma GCC unroll 32
      for (int i = 0; i < NB * T; ++i) {
        if (i % T < count) {
          acc[i] = scalar::Add(acc[i], LoadBlocks<OB, L>(residual + i / T * kPer * block_stride + i % T * OB,
                                                        block_stride, i / T < NB - 1 || last_full));
        }
      }
    }
    ActivateInRegisters<NB * T>(r, acc);
  }
#pragma GCC unroll 32
  for (int i = 0; i < NB * T; ++i) {
    if (i % T < count) {
      StoreBlocks<OB, L>(acc[i], out + i / T * kPer * block_stride + i % T * OB, block_stride,
                         i / T < NB - 1 || last_full);
    }
  }
  if (tile.last && (r.active || job.epilogue_size != 0)) {
    FinishBlocks<OB>(job, tile.ocb, std::min<int64_t>(NB * kPer, tile.blocks), count, out);
  }
}

template <int OB, int NB, int T, int L>
KILN_ALWAYS_INLINE float* TileStart(const Job& job, const Tile& tile, int64_t count, Vec<L> (&acc)[NB * T]) {
  constexpr int kPer = kBlocksPerVector<OB, L>;
  const Conv2DNCHWcParams& p = *job.p;
  const int64_t block_stride = job.out_plane;
  float* out = job.out + (tile.n * job.out_blocks + tile.ocb) * job.out_plane + (tile.oh * p.out_width + tile.ow0) * OB;
  const bool last_full = LastVectorFull<OB, L, NB>(tile);
  // The next tile's outputs (the positions after this tile's, in each of its blocks) asked for
  // now, while this one computes: a layer's output is mostly not in cache when it is first
  // written, and each store that missed waited for its line from memory (MobileNetV2's 16 -> 96
  // layer on 112x112 wrote 4.8 MB at 12 GB/s: 379 -> 297 us in the model on one Zen 5 core). A
  // read prefetch, not PREFETCHW: asked for write, ResNet-50's 1x1 layers with residuals ran up
  // to twice as slow in the model (not alone), 36.8 -> 46.4 ms; read, 35.4.
  if (tile.first) {
#pragma GCC unroll 32
    for (int i = 0; i < NB * T; ++i) __builtin_prefetch(out + i / T * kPer * block_stride + (T + i % T) * OB, 0, 3);
  }
  if (tile.first) {
    // The bias of an epilogue in registers starts the sums (Finish adds none): with few input
    // channels the epilogue's additions were a tenth of the tile's vector operations.
    const RegisterEpilogue& r = job.in_registers;
    const bool bias = r.active && r.bias != nullptr;
#pragma GCC unroll 4
    for (int b = 0; b < NB; ++b) {
      Vec<L> start = bias ? LoadBlocks<OB, L>(r.bias + (tile.ocb + b * kPer) * OB, OB, b < NB - 1 || last_full)
                          : Vec<L>::Zero();
#pragma GCC unroll 32
      for (int t = 0; t < T; ++t) acc[b * T + t] = start;
    }
    return out;
  }
#pragma GCC unroll 32
  for (int i = 0; i < NB * T; ++i) {
    acc[i] = i % T >= count ? Vec<L>::Zero()
                            : LoadBlocks<OB, L>(out + i / T * kPer * block_stride + i % T * OB, block_stride,
                                                i / T < NB - 1 || last_full);
  }
  return out;
}

// The first input channel block of the group of output block ocb: without a division where the
// layer is one group (a 64-bit division per tile, before the tile's first load, in every layer).
KILN_ALWAYS_INLINE int64_t GroupFirstInputBlock(const Job& job, int64_t ocb) {
  return job.group_out_blocks == job.out_blocks ? 0 : ocb / job.group_out_blocks * job.group_in_blocks;
}

// A tile's share of the weights the next chunk reads (Tile::ahead), asked for a few lines at a time,
// in order, to be brought into L2. The weights are read chunk by chunk, each chunk once per tile:
// in a model, whose weights do not fit in L3, a chunk's first tile waited for them from memory
// while the chunk's other tiles found them in cache (1024 -> 1024 channels on 7x7 in a chain of
// twelve, 48 MB of weights: 483 us each on one Zen 5 core; in a chain of three, 12 MB, which stays
// in L3: 416 us). Asked for evenly over the taps of every tile of the chunk, and in order: all at
// once (a next input block's lines in one tap of one tile), 3x3 layers on 7x7 ran 20% slower;
// spread in scattered lines (a few of each input block in each tap), 1x1 layers on 14x14 5%.
class WeightsAhead {
 public:
  WeightsAhead(const Tile& tile, int64_t block_stride)
      : base_(tile.ahead), block_stride_(block_stride), block_lines_(tile.ahead_block_lines), step_(tile.ahead_step) {
    if (base_ == nullptr) return;  // (no division where nothing is asked for)
    const int64_t first = std::min(tile.ahead_total, tile.ahead_line);
    remaining_ = std::min(tile.ahead_total, first + tile.ahead_lines) - first;
    block_ = first / block_lines_;
    line_ = first % block_lines_;
  }
  // The next ahead_step lines.
  KILN_ALWAYS_INLINE void Ask() {
    for (int64_t k = 0; k < step_ && remaining_ > 0; ++k, --remaining_) {
      __builtin_prefetch(base_ + block_ * block_stride_ + line_ * 16, 0, 2);
      if (++line_ == block_lines_) line_ = 0, ++block_;
    }
  }

 private:
  const float* base_;
  int64_t block_stride_, block_lines_, step_, remaining_ = 0, block_ = 0, line_ = 0;
};

// acc += a * b, the sum written where acc is (vfmadd231ps with AVX-512 and AVX2, see ConvTile).
template <int L>
KILN_ALWAYS_INLINE void FmaInPlace(Vec<L>& acc, Vec<L> a, Vec<L> b) {
  if constexpr (L == 16 && kCompiledConfig.vector_floats == 16) {
    asm("vfmadd231ps %1, %2, %0" : "+v"(acc.v) : "v"(b.v), "v"(a.v));
  } else if constexpr (L == 16 && kCompiledConfig.vector_floats == 8) {
    asm("vfmadd231ps %1, %2, %0" : "+x"(acc.lo) : "x"(b.lo), "x"(a.lo));
    asm("vfmadd231ps %1, %2, %0" : "+x"(acc.hi) : "x"(b.hi), "x"(a.hi));
  } else if constexpr (L == 8 && kCompiledConfig.vector_floats == 8) {
    asm("vfmadd231ps %1, %2, %0" : "+x"(acc.v) : "x"(b.v), "x"(a.v));
  } else {
    acc = Vec<L>::Fma(a, b, acc);
  }
}

// Not depthwise: each input channel's value of the blocks' group is broadcast against the NB
// blocks' weights (more blocks per tile: fewer broadcasts per FMA; with one 8-channel block per
// tile on AVX2, as many broadcasts as FMAs held the direct convolution at 57 GFLOP/s of 97, with
// three 70-76). Unchecked tiles have count == T and all taps inside the input; checked ones test
// each tap and position. IB and S, where IB is not 0, are the input block and the stride along
// the row known at compile time: each broadcast then reads at a constant offset and the loop over
// the block's channels unrolls (AVX2, 1x1 layers of one 16-channel block per tile: 55 -> 71
// GFLOP/s with 8-channel input blocks, 72 -> 76-80 with 16; an image's 3 plain channels in
// ResNet's 7x7 stride-2 stem, 57 -> 84; with three blocks per tile the registers ran out, and it
// was slower). With AVX-512, 8-channel blocks are paired into 16-lane vectors (L = 16) and have
// the 16-lane tiles' compiled-in input blocks; only groups of one 8-channel block keep 8-lane
// tiles, of one block (where PairedGroupTile does not compute them: their checked tiles, and
// kernels other than 3 wide).
//
// GCC allocates the tile's registers for the whole function at once (-fira-region=one): by loop
// regions it kept a third of the 24 accumulators of two 16-channel blocks in memory across the
// input channel loop and copied registers between its iterations (36 moves per 384 FMAs, 14 so);
// one Zen 5 core, 1x1 layers of 24 to 960 input channels alone, 1.5-6% faster. Two more keep
// the loop free of moves with AVX-512: each block's weights read through a pointer of its own
// (GCC otherwise kept one offset per input channel of the block, 16, in general registers
// reloaded from the stack), and the FMA written to accumulate in place (`vfmadd231ps`; GCC
// chose forms that wrote the sum into the broadcast's register, so that the accumulators moved
// between registers from one iteration to the next and had to be put back on the stack). With
// AVX2 the same forms kept 2-6 accumulators of the 6-position tiles of one 16-channel block on
// the stack: in place, none (tests/kernels/check_tile_registers.py).
template <int OB, int NB, int T, bool kChecked, int IB, int S, int L>
__attribute__((optimize("ira-region=one"))) void ConvTile(const Job& job, const Tile& tile) {
  static_assert(IB == 0 || !kChecked, "input blocks are compiled in for interior tiles");
  using V = Vec<L>;
  constexpr int kPer = kBlocksPerVector<OB, L>;
  const Conv2DNCHWcParams& p = *job.p;
  const int64_t ib = IB > 0 ? IB : p.in_block, width = p.in_width, x_step = (IB > 0 ? S : p.stride_w) * ib;
  const int64_t count = kChecked ? tile.count : T;
  const bool last_full = LastVectorFull<OB, L, NB>(tile);
  V acc[NB * T];
  float* out = TileStart<OB, NB, T, L>(job, tile, count, acc);
  int64_t ih0 = tile.oh * p.stride_h - p.pad_top, iw_first = tile.ow0 * p.stride_w - p.pad_left;
  int64_t kh_begin, kh_end;
  ValidRange(ih0, p.dilation_h, p.in_height, p.kernel_height, &kh_begin, &kh_end);
  const int64_t w_tap = ib * OB;
  const int64_t w_block_stride = job.group_in_blocks * p.kernel_height * p.kernel_width * w_tap;
  // The group's first input channel block; the tile's chunk counts from it.
  const int64_t first_icb = GroupFirstInputBlock(job, tile.ocb);
  const int64_t w_icb = p.kernel_height * p.kernel_width * w_tap;  // floats of one input block's weights
  WeightsAhead ahead(tile, w_block_stride);
  for (int64_t icb = tile.icb_begin; icb < tile.icb_end; ++icb) {
    const float* x_plane = job.data + (tile.n * job.in_blocks + first_icb + icb) * job.in_plane;
    const float* w_block = job.weight + (tile.ocb * job.group_in_blocks + icb) * w_icb;
    for (int64_t kh = kh_begin; kh < kh_end; ++kh) {
      const float* x_row = x_plane + (ih0 + kh * p.dilation_h) * width * ib;
      const float* w_row = w_block + kh * p.kernel_width * w_tap;
      for (int64_t kw = 0; kw < p.kernel_width; ++kw) {
        int64_t iw0 = iw_first + kw * p.dilation_w;
        const float* w = w_row + kw * w_tap;
        if (!kChecked) ahead.Ask();
        int64_t t_begin = 0, t_end = T;
        if (kChecked) ValidRange(iw0, p.stride_w, width, count, &t_begin, &t_end);
        const float* x = x_row + iw0 * ib;
        const float* wb[NB];
#pragma GCC unroll 4
        for (int b = 0; b < NB; ++b) {
          wb[b] = w + b * kPer * w_block_stride;
          asm("" : "+r"(wb[b]));
        }
#pragma GCC unroll 32
        for (int64_t ic = 0; ic < ib; ++ic) {
          V wv[NB];
#pragma GCC unroll 4
          for (int b = 0; b < NB; ++b) {
            wv[b] = LoadBlocks<OB, L>(wb[b] + ic * OB, w_block_stride, b < NB - 1 || last_full);
            wv[b].Pin();
          }
#pragma GCC unroll 32
          for (int t = 0; t < T; ++t) {
            if (kChecked && (t < t_begin || t >= t_end)) continue;
            V xv = V::Broadcast(x + t * x_step + ic);
#pragma GCC unroll 4
            for (int b = 0; b < NB; ++b) FmaInPlace(acc[b * T + t], xv, wv[b]);
          }
        }
      }
    }
  }
  Finish<OB, NB, T, L>(job, tile, count, acc, out);
}

// Three 8-channel output blocks on 16 lanes (a group of 24 output channels, as MobileNetV2's and
// EfficientNet's 144 -> 24 projections have, or the last three blocks of a group), unchecked, the
// input block IB and the stride S compiled in: blocks 0 and 1 a vector per position as in ConvTile,
// block 2 a vector per two positions (lanes 0-7 position 2j, 8-15 position 2j + 1: 16 floats that
// lie together in the blocked layout), its 8 weights in both halves and its input the two
// positions' broadcasts joined. ConvTile gave the third block a vector of its own per position,
// half of it empty: 2 FMAs per position and input channel where this takes 1.5, plus a blend per
// pair (one Zen 5 core, alone: 144 -> 24 channels on 14x14 7.7 -> 6.5-6.9 us, 512 -> 24 25.5 ->
// 22 us; in MobileNetV2, 144 -> 24 on 56x56 124 -> 107-115 us). With an odd T the last pair's
// second half computes position T - 1 again and is not stored.
template <int T, int IB, int S>
__attribute__((optimize("ira-region=one"))) void ThreeBlockTile(const Job& job, const Tile& tile) {
  static_assert(IB > 0, "the input block is compiled in");
  using V = Vec<16>;
  constexpr int kPairs = (T + 1) / 2;
  constexpr bool kOdd = T % 2 == 1;
  const Conv2DNCHWcParams& p = *job.p;
  const int64_t width = p.in_width, x_step = S * IB, block_stride = job.out_plane;
  V acc[T];        // blocks 0 and 1, position t
  V pair[kPairs];  // block 2, positions 2j and 2j + 1
  float* out = TileStart<8, 1, T, 16>(job, tile, T, acc);
  float* out2 = out + 2 * block_stride;
  const RegisterEpilogue& r = job.in_registers;
  if (tile.first) {
    const float* bias = r.active && r.bias != nullptr ? r.bias + (tile.ocb + 2) * 8 : nullptr;
    const V start = bias != nullptr ? V::LoadHalves(bias, bias, true) : V::Zero();
#pragma GCC unroll 16
    for (int j = 0; j < kPairs; ++j) {
      pair[j] = start;
      __builtin_prefetch(out2 + (T + 2 * j) * 8, 0, 3);  // the next tile's, as TileStart's
    }
  } else {
#pragma GCC unroll 16
    for (int j = 0; j < kPairs; ++j) {
      pair[j] = kOdd && j == kPairs - 1 ? V::LoadHalves(out2 + 16 * j, nullptr, false) : V::Load(out2 + 16 * j);
    }
  }
  const int64_t ih0 = tile.oh * p.stride_h - p.pad_top, iw_first = tile.ow0 * S - p.pad_left;
  int64_t kh_begin, kh_end;
  ValidRange(ih0, p.dilation_h, p.in_height, p.kernel_height, &kh_begin, &kh_end);
  constexpr int64_t w_tap = IB * 8;
  const int64_t w_block_stride = job.group_in_blocks * p.kernel_height * p.kernel_width * w_tap;
  const int64_t first_icb = GroupFirstInputBlock(job, tile.ocb);
  const int64_t w_icb = p.kernel_height * p.kernel_width * w_tap;
  for (int64_t icb = tile.icb_begin; icb < tile.icb_end; ++icb) {
    const float* x_plane = job.data + (tile.n * job.in_blocks + first_icb + icb) * job.in_plane;
    const float* w_block = job.weight + (tile.ocb * job.group_in_blocks + icb) * w_icb;
    for (int64_t kh = kh_begin; kh < kh_end; ++kh) {
      const float* x_row = x_plane + (ih0 + kh * p.dilation_h) * width * IB;
      const float* w_row = w_block + kh * p.kernel_width * w_tap;
      for (int64_t kw = 0; kw < p.kernel_width; ++kw) {
        const float* x = x_row + (iw_first + kw * p.dilation_w) * IB;
        const float* w01 = w_row + kw * w_tap;
        const float* w1 = w01 + w_block_stride;
        const float* w2 = w01 + 2 * w_block_stride;
        asm("" : "+r"(w01), "+r"(w1), "+r"(w2));  // each through a register of its own (ConvTile)
#pragma GCC unroll 32
        for (int ic = 0; ic < IB; ++ic) {
          V w_first = V::LoadHalves(w01 + ic * 8, w1 + ic * 8, true);
          V w_third = V::LoadHalves(w2 + ic * 8, w2 + ic * 8, true);
          w_first.Pin();
          w_third.Pin();
#pragma GCC unroll 16
          for (int j = 0; j < kPairs; ++j) {
            V a = V::Broadcast(x + 2 * j * x_step + ic);
            FmaInPlace(acc[2 * j], a, w_first);
            if (kOdd && j == kPairs - 1) {
              FmaInPlace(pair[j], a, w_third);
            } else {
              V b = V::Broadcast(x + (2 * j + 1) * x_step + ic);
              FmaInPlace(acc[2 * j + 1], b, w_first);
              FmaInPlace(pair[j], V::JoinHalves(a, b), w_third);
            }
          }
        }
      }
    }
  }
  Finish<8, 1, T, 16>(job, tile, T, acc, out);  // blocks 0 and 1
  if (tile.last && r.active) {
    if (r.residual != nullptr) {
      const float* residual = r.residual + (out2 - job.out);
#pragma GCC unroll 16
      for (int j = 0; j < kPairs; ++j) {
        pair[j] = scalar::Add(pair[j], kOdd && j == kPairs - 1 ? V::LoadHalves(residual + 16 * j, nullptr, false)
                                                             : V::Load(residual + 16 * j));
      }
    }
    ActivateInRegisters<kPairs>(r, pair);
  }
#pragma GCC unroll 16
  for (int j = 0; j < kPairs; ++j) {
    if (kOdd && j == kPairs - 1) {
      pair[j].StoreHalves(out2 + 16 * j, nullptr, false);
    } else {
      pair[j].Store(out2 + 16 * j);
    }
  }
  if (tile.last && (r.active || job.epilogue_size != 0)) FinishBlocks<8>(job, tile.ocb + 2, 1, T, out2);
}

// A 1x1 convolution of planes of one position (squeeze-and-excitation's layers on [N, C, 1, 1]):
// one output vector of blocks from the chunk's input channels, C values against C weight vectors
// (both contiguous in blocked layouts when a plane is one position), in four partial sums. The
// checked tile that such a layer fell to tested each of its 14 positions per input channel for
// one multiply-add: RegNetY-400MF's gates (110 -> 440 channels) took 34 us.
template <int OB, int L>
void PointTile(const Job& job, const Tile& tile) {
  using V = Vec<L>;
  const Conv2DNCHWcParams& p = *job.p;
  const int64_t w_block_stride = job.group_in_blocks * p.in_block * OB;  // a 1x1 kernel
  const bool last_full = LastVectorFull<OB, L, 1>(tile);
  V acc[1];
  float* out = TileStart<OB, 1, 1, L>(job, tile, 1, acc);
  const int64_t first_icb = GroupFirstInputBlock(job, tile.ocb) + tile.icb_begin;
  const float* x = job.data + (tile.n * job.in_blocks + first_icb) * job.in_plane;
  const float* w = job.weight + (tile.ocb * job.group_in_blocks + tile.icb_begin) * p.in_block * OB;
  const int64_t channels = (tile.icb_end - tile.icb_begin) * p.in_block;
  V part[4] = {acc[0], V::Zero(), V::Zero(), V::Zero()};
  int64_t c = 0;
  for (; c + 4 <= channels; c += 4) {
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) {
      FmaInPlace(part[u], V::Broadcast(x + c + u), LoadBlocks<OB, L>(w + (c + u) * OB, w_block_stride, last_full));
    }
  }
  for (; c < channels; ++c) {
    FmaInPlace(part[0], V::Broadcast(x + c), LoadBlocks<OB, L>(w + c * OB, w_block_stride, last_full));
  }
  acc[0] = scalar::Add(scalar::Add(part[0], part[1]), scalar::Add(part[2], part[3]));
  Finish<OB, 1, 1, L>(job, tile, 1, acc, out);
}

// One tap of a tile of groups of G channels inside a block (BlockLocalTile): for each of the
// group's input channels C, the channel broadcast over its group's lanes, times the weights of
// that input channel (w + C * w_step), for positions t_begin <= t < t_end.
// Every input channel of the group reads the same T input vectors. Kept from one channel to the
// next, they and the T accumulators overflow AVX2's 16 registers, and GCC moved vectors to and from
// the stack inside the loop (the 8-lane tile of 4-channel groups and 9 positions: 34 stack moves per
// 72 FMAs, seen in the assembly): where they do not fit, each channel reads them again (`x` made
// opaque to the compiler).
// (G + 1: the weight vectors GCC loads ahead and a shuffled input.)
template <int OB, int G, int T>
constexpr bool kRereadGroupInputs =
    2 * T * ((OB + kCompiledConfig.vector_floats - 1) / kCompiledConfig.vector_floats) + G + 1 >
    (kCompiledConfig.vector_floats >= 16 ? 32 : 16);

template <int OB, int G, int T, int C = 0>
KILN_ALWAYS_INLINE void GroupTap(Vec<OB> (&acc)[T], const float* x, int64_t x_step, const float* w, int64_t w_step,
                                 int64_t t_begin, int64_t t_end) {
  using V = Vec<OB>;
  if constexpr (C > 0 && kRereadGroupInputs<OB, G, T>) asm("" : "+r"(x));
  V wv = V::Load(w + C * w_step);
  wv.Pin();
#pragma GCC unroll 32
  for (int t = 0; t < T; ++t) {
    if (t >= t_begin && t < t_end) acc[t] = V::Fma(V::template GroupBroadcast<G, C>(V::Load(x + t * x_step)), wv, acc[t]);
  }
  if constexpr (C + 1 < G) GroupTap<OB, G, T, C + 1>(acc, x, x_step, w, w_step, t_begin, t_end);
}

// Block-local: output block ocb reads input block ocb. Depthwise (G == 1): channel c of the
// output reads channel c of the input, vectors on both sides. Groups of G = 2 or 4 channels
// (ResNeXt's 32x4d stage, 4 channels per group): lane c reads the G channels of its group, each
// broadcast over the group's lanes with one shuffle; the weight is [blocks, G, KH, KW, OB].
template <int OB, int G, int T, bool kChecked>
void BlockLocalTile(const Job& job, const Tile& tile) {
  using V = Vec<OB>;
  const Conv2DNCHWcParams& p = *job.p;
  const int64_t width = p.in_width, x_step = p.stride_w * OB;
  const int64_t count = kChecked ? tile.count : T;
  const int64_t taps = p.kernel_height * p.kernel_width;
  V acc[T];
  float* out = TileStart<OB, 1, T, OB>(job, tile, count, acc);
  int64_t ih0 = tile.oh * p.stride_h - p.pad_top, iw_first = tile.ow0 * p.stride_w - p.pad_left;
  int64_t kh_begin, kh_end;
  ValidRange(ih0, p.dilation_h, p.in_height, p.kernel_height, &kh_begin, &kh_end);
  const float* w_block = job.weight + tile.ocb * G * taps * OB;
  // The input columns of the next tile along the row, asked for in each row this tile reads: a
  // depthwise layer does 9 FMAs per input vector, bound by its input's arrival (MobileNetV2's
  // stride-2 layer on 112x112, 4.8 MB in: 226 -> 144 us in the model on one Zen 5 core).
  if constexpr (!kChecked) {
    // T * stride_w columns from kernel_width past the next tile's first: most of the columns it
    // reads that this one does not, and the first of the tile after it (from exactly its first new
    // column on, MobileNetV2 ran 2.6% slower at one thread).
    const int64_t ahead = T * p.stride_w + p.kernel_width;
    for (int64_t kh = kh_begin; kh < kh_end; ++kh) {
      const float* x_row = InputRow<OB>(job, tile.n, tile.ocb, ih0 + kh * p.dilation_h) + (iw_first + ahead) * OB;
      for (int64_t j = 0; j < T * p.stride_w * OB; j += 16) __builtin_prefetch(x_row + j, 0, 3);
    }
  }
  for (int64_t kh = kh_begin; kh < kh_end; ++kh) {
    const float* x_row = InputRow<OB>(job, tile.n, tile.ocb, ih0 + kh * p.dilation_h);
    for (int64_t kw = 0; kw < p.kernel_width; ++kw) {
      int64_t iw0 = iw_first + kw * p.dilation_w;
      const float* w = w_block + (kh * p.kernel_width + kw) * OB;
      int64_t t_begin = 0, t_end = T;
      if (kChecked) ValidRange(iw0, p.stride_w, width, count, &t_begin, &t_end);
      const float* x = x_row + iw0 * OB;
      if constexpr (G > 1) {
        GroupTap<OB, G, T>(acc, x, x_step, w, taps * OB, t_begin, t_end);
        continue;
      }
      V wv = V::Load(w);
#pragma GCC unroll 32
      for (int t = 0; t < T; ++t) {
        if (t >= t_begin && t < t_end) acc[t] = V::Fma(V::Load(x + t * x_step), wv, acc[t]);
      }
    }
  }
  Finish<OB, 1, T, OB>(job, tile, count, acc, out);
}

// Depthwise tiles of kernel width KW at stride S along the row, not dilated along it: each input
// vector of a row the tile reads is loaded once and multiplied by every tap that reads it (KW = 3,
// stride 1: T + 2 loads for 3T FMAs). BlockLocalTile's loop over taps loads each input once per
// tap, and keeps the T offsets of a runtime stride in registers (GCC parked them in vector
// registers and reloaded them every tap). Checked tiles (at a row's ends, or of fewer positions)
// skip the input columns outside the row; they compute T positions and store `count`.
template <int OB, int KW, int S, int T, bool kChecked>
void DepthwiseRowTile(const Job& job, const Tile& tile) {
  using V = Vec<OB>;
  constexpr int kInputs = S * (T - 1) + KW;
  const Conv2DNCHWcParams& p = *job.p;
  const int64_t count = kChecked ? tile.count : T;
  V acc[T];
  float* out = TileStart<OB, 1, T, OB>(job, tile, count, acc);
  const int64_t ih0 = tile.oh * p.stride_h - p.pad_top, iw0 = tile.ow0 * S - p.pad_left;
  int64_t kh_begin, kh_end;
  ValidRange(ih0, p.dilation_h, p.in_height, p.kernel_height, &kh_begin, &kh_end);
  // Inputs [j_begin, j_end) of the tile's row lie inside the input.
  const int64_t j_begin = kChecked ? std::max<int64_t>(0, -iw0) : 0;
  const int64_t j_end = kChecked ? std::min<int64_t>(kInputs, p.in_width - iw0) : kInputs;
  const float* w_block = job.weight + tile.ocb * p.kernel_height * KW * OB;
  for (int64_t kh = kh_begin; kh < kh_end; ++kh) {
    const float* x = InputRow<OB>(job, tile.n, tile.ocb, ih0 + kh * p.dilation_h) + iw0 * OB;
    // The next tile's new input columns in this row (see BlockLocalTile), from the row's pointer
    // made opaque: with the addresses computed from the tile's place in a loop of their own, GCC
    // kept all 42 in vector registers and moved each back for its prefetch (195 vmovq in the tile;
    // MobileNetV2 4% slower).
    const float* ahead = x + (T * S + KW) * OB;
    asm("" : "+r"(ahead));
#pragma GCC unroll 64
    for (int j = 0; j < T * S * OB; j += 16) __builtin_prefetch(ahead + j, 0, 3);
    const float* w = w_block + kh * KW * OB;
    V wv[KW];
#pragma GCC unroll 8
    for (int kw = 0; kw < KW; ++kw) {
      wv[kw] = V::Load(w + kw * OB);
      wv[kw].Pin();
    }
#pragma GCC unroll 64
    for (int j = 0; j < kInputs; ++j) {
      if (kChecked && (j < j_begin || j >= j_end)) continue;
      V xv = V::Load(x + j * OB);
#pragma GCC unroll 8
      for (int kw = 0; kw < KW; ++kw) {
        const int t = (j - kw) / S;  // the output position, when j >= kw and S divides j - kw
        if (j >= kw && (j - kw) % S == 0 && t < T) acc[t] = V::Fma(xv, wv[kw], acc[t]);
      }
    }
  }
  Finish<OB, 1, T, OB>(job, tile, count, acc, out);
}

using TileFn = void (*)(const Job&, const Tile&);

// Vectors of L lanes a tile (not block-local) computes together, at most (kernel_config.h).
template <int L>
constexpr int kTileVectors = L == 8 ? kCompiledConfig.conv_tile_blocks_8 : kCompiledConfig.conv_tile_blocks_16;
// Tiles of NB vectors keep kMinTile .. kMaxTile positions in registers (fewer would leave too few
// independent accumulators); a narrower tile runs checked in the narrowest of them.
template <int L, int NB>
constexpr int kMaxTile =
    NB == 1 ? kTileWidth<L> : (L == 8 ? kCompiledConfig.conv_multi_tile_8 : kCompiledConfig.conv_multi_tile_16) / NB;
template <int L, int NB>
constexpr int kMinTile = (kMaxTile<L, NB> + 1) / 2;

// kLocalGroup: 0 for ConvTile; G for BlockLocalTile with groups of G channels (1: depthwise).
// The tile functions of NB vectors (input block IB and stride S, see ConvTile): table[T - kMinTile]
// keeps T positions in registers.
template <int OB, int NB, int kLocalGroup, int IB, int S, int L, int... I>
std::array<TileFn, sizeof...(I)> TileTable(std::integer_sequence<int, I...>) {
  if constexpr (kLocalGroup > 0) {
    static_assert(NB == 1 && L == OB, "a block-local tile computes one block");
    return {&BlockLocalTile<OB, kLocalGroup, kMinTile<L, NB> + I, false>...};
  } else {
    return {&ConvTile<OB, NB, kMinTile<L, NB> + I, false, IB, S, L>...};
  }
}

// The checked tile of one vector: the widest, for tiles of any width up to it that touch the
// input's border or are narrower than the unchecked ones, one vector at a time. (A checked tile
// computes only its `count` positions; one per width, as the unchecked tiles have, took 19 of the
// 33 s that GCC spent on this file; checked tiles of two or three blocks took 40% of a variant's
// compile time.)
template <int OB, int kLocalGroup, int L>
constexpr TileFn kCheckedTile = kLocalGroup > 0
                                    ? &BlockLocalTile<OB, (kLocalGroup > 0 ? kLocalGroup : 1), kMaxTile<OB, 1>, true>
                                    : &ConvTile<OB, 1, kMaxTile<L, 1>, true, 0, 1, L>;

// Positions [ow_begin, ow_end) of the tile's row in tiles of at most kMax positions, as even as
// that allows (the first ones one wider): tile.ow0 and tile.count set, then unchecked(count) for a
// tile of kMin positions or more whose windows lie inside the input, else checked().
template <int kMin, int kMax, typename Unchecked, typename Checked>
KILN_ALWAYS_INLINE void ForEachTileOfRow(const Conv2DNCHWcParams& p, Tile& tile, int64_t ow_begin, int64_t ow_end,
                                         Unchecked unchecked, Checked checked) {
  const int64_t positions = ow_end - ow_begin, tiles = (positions + kMax - 1) / kMax;
  const int64_t base = positions / tiles, extra = positions % tiles;
  for (int64_t k = 0, ow0 = ow_begin; k < tiles; ++k) {
    const int64_t count = base + (k < extra ? 1 : 0);
    tile.ow0 = ow0;
    tile.count = count;
    int64_t first_iw = ow0 * p.stride_w - p.pad_left;
    int64_t last_iw = (ow0 + count - 1) * p.stride_w - p.pad_left + (p.kernel_width - 1) * p.dilation_w;
    if (first_iw >= 0 && last_iw < p.in_width && count >= kMin) {
      unchecked(count);
    } else {
      checked();
    }
    ow0 += count;
  }
}

// Computes positions [ow_begin, ow_end) of the tile's row in tiles of NB vectors, as even as the
// widest compiled tile allows.
template <int OB, int NB, int kLocalGroup, int IB, int S, int L>
void RunRow(const Job& job, Tile& tile, int64_t ow_begin, int64_t ow_end) {
  constexpr int kMin = kMinTile<L, NB>, kMax = kMaxTile<L, NB>, kPer = kBlocksPerVector<OB, L>;
  static_assert(kMaxTile<L, NB> <= kMaxTile<L, 1>, "a tile of several vectors is no wider than one of one");
  static const auto unchecked =
      TileTable<OB, NB, kLocalGroup, IB, S, L>(std::make_integer_sequence<int, kMax - kMin + 1>());
  ForEachTileOfRow<kMin, kMax>(
      *job.p, tile, ow_begin, ow_end,
      [&](int64_t count) {
        unchecked[count - kMin](job, tile);
        tile.ahead_line += tile.ahead_lines;  // the next tile's share
      },
      [&] {
        Tile vector = tile;
        for (int b = 0; b < NB; ++b, vector.ocb += kPer) {
          vector.blocks = std::min<int64_t>(kPer, tile.blocks - b * kPer);
          kCheckedTile<OB, kLocalGroup, L>(job, vector);
        }
        tile.ahead_line += tile.ahead_lines;  // checked tiles ask for none: their share goes unasked
      });
}

// Whether ThreeBlockTile computes the tiles of three blocks of the variant: 8-channel blocks on 16
// lanes, the input block compiled in, with AVX-512 (whose tiles hold two vectors of blocks: with
// AVX2 a tile of 8-channel blocks on 16 lanes holds two blocks at most).
template <int OB, int kLocalGroup, int IB, int L>
constexpr bool kThreeBlockTiles =
    OB == 8 && kLocalGroup == 0 && IB > 0 && L == 16 && kCompiledConfig.vector_floats == 16;

// Positions [ow_begin, ow_end) of the tile's row of three blocks (ThreeBlockTile), as RunRow.
template <int IB, int S, int... I>
std::array<TileFn, sizeof...(I)> ThreeBlockTable(std::integer_sequence<int, I...>) {
  return {&ThreeBlockTile<kMinTile<16, 1> + I, IB, S>...};
}
template <int IB, int S>
void RunThreeBlockRow(const Job& job, Tile& tile, int64_t ow_begin, int64_t ow_end) {
  constexpr int kMin = kMinTile<16, 1>, kMax = kMaxTile<16, 1>;
  static const auto unchecked = ThreeBlockTable<IB, S>(std::make_integer_sequence<int, kMax - kMin + 1>());
  ForEachTileOfRow<kMin, kMax>(
      *job.p, tile, ow_begin, ow_end, [&](int64_t count) { unchecked[count - kMin](job, tile); },
      [&] {
        Tile vector = tile;
        for (int b = 0; b < 2; ++b, vector.ocb += 2) {
          vector.blocks = b == 0 ? 2 : 1;
          kCheckedTile<8, 0, 16>(job, vector);
        }
      });
}

// Whether DepthwiseRowTile computes a layer of kernel width KW: its tiles' accumulators, weights
// and an input fit the registers (with AVX2, 16-channel blocks take two registers each and do not).
template <int OB, int KW>
constexpr bool kDepthwiseRowFits =
    (kMaxTile<OB, 1> + KW + 1) * ((OB + kCompiledConfig.vector_floats - 1) / kCompiledConfig.vector_floats) <=
    (kCompiledConfig.vector_floats >= 16 ? 32 : 16);

// Positions [ow_begin, ow_end) of the tile's row of a depthwise layer in tiles of the widest
// compiled, the last of what is left: unchecked where its windows lie inside the input and it is
// whole, else checked. (One unchecked tile per kernel width and stride, where RunRow's even split
// takes one per width: the variant's object compiled in 1.6 s before these tiles, 3.7 with a
// table of them, 2.3 now; MobileNet's and EfficientNet's rows are multiples of the tile or
// narrower.)
template <int OB, int KW, int S>
void RunDepthwiseRow(const Job& job, Tile& tile, int64_t ow_begin, int64_t ow_end) {
  constexpr int kMax = kMaxTile<OB, 1>;
  const Conv2DNCHWcParams& p = *job.p;
  for (int64_t ow0 = ow_begin; ow0 < ow_end; ow0 += kMax) {
    tile.ow0 = ow0;
    tile.count = std::min<int64_t>(kMax, ow_end - ow0);
    const int64_t first_iw = ow0 * S - p.pad_left, last_iw = (ow0 + kMax - 1) * S - p.pad_left + KW - 1;
    if (tile.count == kMax && first_iw >= 0 && last_iw < p.in_width) {
      DepthwiseRowTile<OB, KW, S, kMax, false>(job, tile);
    } else {
      DepthwiseRowTile<OB, KW, S, kMax, true>(job, tile);
    }
  }
}

// The row function of a depthwise layer: DepthwiseRowTile's where it computes the window (kernel
// width 3 or 5, stride 1 or 2 and no dilation along the row, its tile in the registers), else
// BlockLocalTile's (with AVX2's two registers per 16-channel block).
using RowFn = void (*)(const Job&, Tile&, int64_t, int64_t);
template <int OB>
RowFn DepthwiseRowOf(const Conv2DNCHWcParams& p) {
  if (p.dilation_w == 1 && (p.stride_w == 1 || p.stride_w == 2)) {
    const bool stride1 = p.stride_w == 1;
    if constexpr (kDepthwiseRowFits<OB, 3>) {
      if (p.kernel_width == 3) return stride1 ? RunDepthwiseRow<OB, 3, 1> : RunDepthwiseRow<OB, 3, 2>;
    }
    if constexpr (kDepthwiseRowFits<OB, 5>) {
      if (p.kernel_width == 5) return stride1 ? RunDepthwiseRow<OB, 5, 1> : RunDepthwiseRow<OB, 5, 2>;
    }
  }
  return RunRow<OB, 1, 1, 0, 1, OB>;
}

}  // namespace kiln::kernels::nchwc
