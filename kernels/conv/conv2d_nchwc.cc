// 2-D convolution in blocked layouts (NCHW[x]c data, packed weights; see kernels.h): a direct
// convolution whose micro-kernel keeps a tile of T output positions of one output channel block
// in registers (simd.h), accumulates over input channels and kernel taps and stores; the fused
// epilogue then runs over the stored tile. As the parameters say (the compiler's kernel selection decides,
// strategy/conv2d.cc), a padded input is first copied with its zeros written out, so tiles need
// no checks, a strided 1x1 convolution first gathers the positions it reads, and a 1x1
// convolution over a small plane runs as one long row. Tiles that still touch the border, or
// are narrower than the compiled tiles, check each tap.
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
// one 8-channel block, two groups to a vector (PairedGroupTile). Work items are
// (batch, set of output channel blocks, a few output rows or a part of a row: of a long one, as
// 1-D layers have, or of any row of 56 positions or more when the layer would give fewer than 16
// items), split across threads. Input channel blocks are taken in chunks whose weights fit
// in L1 cache; between chunks the partial sums wait in the output (no operator works in place, so
// the output aliases no input).
#include <algorithm>
#include <array>
#include <atomic>
#include <utility>

#include "kernels/backend_api.h"
#include "kernels/epilogue.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"

namespace kiln::kernels {
namespace {

// Planes of up to this many positions run a pointwise convolution as one row (flat_plane): 28x28
// too, whose rows of 28 took tiles of 9 and 10 positions where a tile of two 16-channel blocks
// keeps 12 (one layer alone on an AMD Zen 4 core, AVX-512: 256 -> 512 channels 91 -> 111 GFLOP/s,
// others -4..+2%; AVX2 code -4..+3%). Wider planes gained nothing (56x56: -4%).
constexpr int64_t kMaxFlatPositions = 28 * 28;
constexpr int64_t kPositionsPerItem = 64;         // output positions per work item, at least
constexpr int64_t kRowPartPositions = 512;        // rows wider than this are always split into parts
// Work items a layer is split into at least, where its rows are wide enough for parts of
// kMinPartPositions: a 1x1 layer of 5 or 7 output blocks on a 14x14 plane taken as one row
// (EfficientNet's projections) was 5 or 7 items, which two threads share 3:2 or 4:3.
constexpr int64_t kMinItems = 16;
constexpr int64_t kMinPartPositions = 28;
// Layers whose weights take at most this many bytes split their rows among threads (Run).
constexpr int64_t kMaxPositionSplitWeightBytes = 256 * 1024;

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
  const Conv2DNCHWcParams* p;
  const float* data;
  const float* weight;
  float* out;
  const EpilogueStep* epilogue;
  int epilogue_size;
  int64_t in_blocks, out_blocks;    // C / ib, O / ob
  int64_t group_in_blocks;           // input channel blocks of one group: (C / groups) / ib
  int64_t group_out_blocks;          // output channel blocks of one group: (O / groups) / ob
  int64_t tile_blocks;               // output channel blocks a tile computes together (fewer at a group's end)
  int64_t block_sets;                // sets of tile_blocks blocks in one group
  int64_t rows_per_item, row_items;  // output rows per work item; row ranges per (n, block set)
  int64_t row_parts, part_width;     // each row range split along the row: parts of so many positions
  int64_t chunk;                     // input channel blocks per chunk
  int64_t batch_sets;                // sets of output blocks over all images and groups
  RegisterEpilogue in_registers;     // the epilogue, when applied in the tile (before the store; swish, and
                                     // AVX2's hard swish, right after it)
  bool positions_outer;              // work items ordered by rows and parts first, sets of blocks last
  int64_t in_plane = 0, out_plane = 0;  // floats from one channel block to the next, input and output
  // A depthwise layer that reads a band of the rows a pointwise convolution wrote
  // (Conv2DPointwiseDepthwise): `data` holds rows from band_first_row on of the blocks from
  // band_first_block on, in_plane apart.
  bool reads_band = false;
  int64_t band_first_row = 0, band_first_block = 0;
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
};

// Taps k in [begin, end) with 0 <= start + k * step < size, for k < count.
inline void ValidRange(int64_t start, int64_t step, int64_t size, int64_t count, int64_t* begin, int64_t* end) {
  *begin = start >= 0 ? 0 : (-start + step - 1) / step;
  *end = size - 1 - start < 0 ? 0 : std::min(count, (size - 1 - start) / step + 1);
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

// Stores the first `count` positions of each of the NB vectors of blocks (acc[b * T + t]: vector
// b, position t) from `out`, the first block's, then (on the last chunk) applies the epilogue.
template <int OB, int NB, int T, int L>
KILN_ALWAYS_INLINE void Finish(const Job& job, const Tile& tile, int64_t count, Vec<L> (&acc)[NB * T], float* out) {
  constexpr int kPer = kBlocksPerVector<OB, L>;
  const int64_t block_stride = job.out_plane;
  const RegisterEpilogue& r = job.in_registers;
  const bool last_full = LastVectorFull<OB, L, NB>(tile);
  if (tile.last && r.active) {
    using V = Vec<L>;
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
    if (r.activation == RegisterEpilogue::kRelu) {
#pragma GCC unroll 32
      for (int i = 0; i < NB * T; ++i) acc[i] = scalar::Relu(acc[i]);
    } else if (r.activation == RegisterEpilogue::kClip) {
      V lo = V::Broadcast(&r.lo), hi = V::Broadcast(&r.hi);
#pragma GCC unroll 32
      for (int i = 0; i < NB * T; ++i) acc[i] = scalar::Clip(acc[i], lo, hi);
    } else if constexpr (kHardSwishInRegisters) {
      if (r.activation == RegisterEpilogue::kHardSwish) {
#pragma GCC unroll 32
        for (int i = 0; i < NB * T; ++i) acc[i] = scalar::HardSwish(acc[i]);
      }
    }
  }
#pragma GCC unroll 32
  for (int i = 0; i < NB * T; ++i) {
    if (i % T < count) {
      StoreBlocks<OB, L>(acc[i], out + i / T * kPer * block_stride + i % T * OB, block_stride,
                         i / T < NB - 1 || last_full);
    }
  }
  if (!tile.last || (!r.active && job.epilogue_size == 0)) return;
  const int64_t blocks = std::min<int64_t>(NB * kPer, tile.blocks);
  if (r.active) {
    if (r.activation == RegisterEpilogue::kSwish) {
      ActivationOverTile<RegisterEpilogue::kSwish>(out, block_stride, blocks, count * OB);
    } else if (!kHardSwishInRegisters && r.activation == RegisterEpilogue::kHardSwish) {
      ActivationOverTile<RegisterEpilogue::kHardSwish>(out, block_stride, blocks, count * OB);
    }
    return;
  }
  for (int64_t b = 0; b < blocks; ++b) ApplyEpilogue<OB>(job, tile.ocb + b, count, out + b * block_stride);
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

// acc += a * b, the sum written where acc is (with AVX-512: vfmadd231ps, see ConvTile).
template <int L>
KILN_ALWAYS_INLINE void FmaInPlace(Vec<L>& acc, Vec<L> a, Vec<L> b) {
  if constexpr (L == 16 && kCompiledConfig.vector_floats == 16) {
    asm("vfmadd231ps %1, %2, %0" : "+v"(acc.v) : "v"(b.v), "v"(a.v));
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
// between registers from one iteration to the next and had to be put back on the stack).
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
  const int64_t first_icb = tile.ocb / job.group_out_blocks * job.group_in_blocks;
  for (int64_t icb = tile.icb_begin; icb < tile.icb_end; ++icb) {
    const float* x_plane = job.data + (tile.n * job.in_blocks + first_icb + icb) * job.in_plane;
    const float* w_block = job.weight + (tile.ocb * job.group_in_blocks + icb) * p.kernel_height * p.kernel_width * w_tap;
    for (int64_t kh = kh_begin; kh < kh_end; ++kh) {
      const float* x_row = x_plane + (ih0 + kh * p.dilation_h) * width * ib;
      const float* w_row = w_block + kh * p.kernel_width * w_tap;
      for (int64_t kw = 0; kw < p.kernel_width; ++kw) {
        int64_t iw0 = iw_first + kw * p.dilation_w;
        const float* w = w_row + kw * w_tap;
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
  const int64_t first_icb = tile.ocb / job.group_out_blocks * job.group_in_blocks + tile.icb_begin;
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
  const float* x_plane = job.data + (tile.n * job.out_blocks + tile.ocb) * job.in_plane;
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
      const float* x_row = x_plane + (ih0 + kh * p.dilation_h) * width * OB + (iw_first + ahead) * OB;
      for (int64_t j = 0; j < T * p.stride_w * OB; j += 16) __builtin_prefetch(x_row + j, 0, 3);
    }
  }
  for (int64_t kh = kh_begin; kh < kh_end; ++kh) {
    const float* x_row = x_plane + (ih0 + kh * p.dilation_h) * width * OB;
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
  // The next tile's new input columns, asked for in each row this tile reads (see BlockLocalTile).
#pragma GCC unroll 4
  for (int64_t kh = kh_begin; kh < kh_end; ++kh) {
    const float* x_row = InputRow<OB>(job, tile.n, tile.ocb, ih0 + kh * p.dilation_h) + (iw0 + T * S + KW) * OB;
#pragma GCC unroll 64
    for (int j = 0; j < T * S * OB; j += 16) __builtin_prefetch(x_row + j, 0, 3);
  }
  for (int64_t kh = kh_begin; kh < kh_end; ++kh) {
    const float* x = InputRow<OB>(job, tile.n, tile.ocb, ih0 + kh * p.dilation_h) + iw0 * OB;
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
      *job.p, tile, ow_begin, ow_end, [&](int64_t count) { unchecked[count - kMin](job, tile); },
      [&] {
        Tile vector = tile;
        for (int b = 0; b < NB; ++b, vector.ocb += kPer) {
          vector.blocks = std::min<int64_t>(kPer, tile.blocks - b * kPer);
          kCheckedTile<OB, kLocalGroup, L>(job, vector);
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

// The row function of a depthwise layer DepthwiseRowTile computes (kernel width 3 or 5, stride 1
// or 2 and no dilation along the row), else null.
using RowFn = void (*)(const Job&, Tile&, int64_t, int64_t);
template <int OB>
RowFn DepthwiseRowOf(const Conv2DNCHWcParams& p) {
  if (p.dilation_w != 1 || (p.stride_w != 1 && p.stride_w != 2)) return nullptr;
  const bool stride1 = p.stride_w == 1;
  if constexpr (kDepthwiseRowFits<OB, 3>) {
    if (p.kernel_width == 3) return stride1 ? RunDepthwiseRow<OB, 3, 1> : RunDepthwiseRow<OB, 3, 2>;
  }
  if constexpr (kDepthwiseRowFits<OB, 5>) {
    if (p.kernel_width == 5) return stride1 ? RunDepthwiseRow<OB, 5, 1> : RunDepthwiseRow<OB, 5, 2>;
  }
  return nullptr;
}

// Groups of one 8-channel block in and out with AVX-512 (PairsOneBlockGroups: RegNetY's 3x3
// layers of 8-channel groups): two groups to a 16-lane vector, output blocks ocb and ocb + 1 (a
// layer's last group alone when their count is odd; the second half then repeats the first and is
// not stored), each half reading its own group's input block and weights. Each input value of the
// first group is broadcast over lanes 0-7 and the second's over lanes 8-15 (BroadcastHalves) and
// feeds every tap of the row that reads it: 3 FMAs at stride 1, 1 or 2 at stride 2. The tile of one
// group on 8 lanes took a broadcast per 8-lane FMA (ConvTile), half of what a core with 512-bit
// FMA units computes. Interior tiles of T positions, KW = 3; others run as one group each in the
// checked tile of 8 lanes.
constexpr int kPairedGroupMinTile = 7, kPairedGroupMaxTile = 14;
static_assert(kCompiledConfig.vector_floats != 16 || kPairedGroupMaxTile <= kCompiledConfig.conv_tile_8,
              "a paired tile's positions fit the checked tile");
// The variants that pair groups of one block: 8-channel blocks on 16 lanes, with AVX-512.
template <int OB, int kLocalGroup, int L>
constexpr bool kPairsGroups = OB == 8 && kLocalGroup == 0 && L == 16 && kCompiledConfig.vector_floats == 16;

template <int T, int S>
void PairedGroupTile(const Job& job, const Tile& tile) {
  using V = Vec<16>;
  constexpr int kWidth = 3, kInputs = S * (T - 1) + kWidth, kTaps = kWidth * 64;  // 64: an 8 x 8 tap
  const Conv2DNCHWcParams& p = *job.p;
  V acc[T];
  float* out = TileStart<8, 1, T, 16>(job, tile, T, acc);
  const int64_t plane = job.in_plane, block_weights = p.kernel_height * kTaps;
  const bool pair = tile.blocks == 2;
  const float* x0 = job.data + (tile.n * job.in_blocks + tile.ocb) * plane;
  const float* x1 = pair ? x0 + plane : x0;
  const float* w0 = job.weight + tile.ocb * block_weights;
  const float* w1 = pair ? w0 + block_weights : w0;
  const int64_t ih0 = tile.oh * p.stride_h - p.pad_top, iw0 = tile.ow0 * S - p.pad_left;
  int64_t kh_begin, kh_end;
  ValidRange(ih0, p.dilation_h, p.in_height, p.kernel_height, &kh_begin, &kh_end);
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
        V xv = V::BroadcastHalves(x0 + row + j * 8 + ic, x1 + row + j * 8 + ic);
#pragma GCC unroll 3
        for (int kw = 0; kw < kWidth; ++kw) {
          const int t = (j - kw) / S;  // the output position, when j >= kw and S divides j - kw
          if (j >= kw && (j - kw) % S == 0 && t < T) acc[t] = V::Fma(xv, w[kw], acc[t]);
        }
      }
    }
  }
  Finish<8, 1, T, 16>(job, tile, T, acc, out);
}

template <int S, int... I>
std::array<TileFn, sizeof...(I)> PairedGroupTable(std::integer_sequence<int, I...>) {
  return {&PairedGroupTile<kPairedGroupMinTile + I, S>...};
}

// Positions [ow_begin, ow_end) of the tile's row, for its pair of groups (as RunRow).
template <int S>
void RunPairedGroupRow(const Job& job, Tile& tile, int64_t ow_begin, int64_t ow_end) {
  constexpr int kMin = kPairedGroupMinTile, kMax = kPairedGroupMaxTile;
  static const auto unchecked = PairedGroupTable<S>(std::make_integer_sequence<int, kMax - kMin + 1>());
  ForEachTileOfRow<kMin, kMax>(
      *job.p, tile, ow_begin, ow_end, [&](int64_t count) { unchecked[count - kMin](job, tile); },
      [&] {
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
  for (int64_t item = begin; item < end; ++item) {
    const auto [set, row_item, part] = PlaceOfItem(job, item);  // set: over (n, group, set in the group)
    int64_t groups = job.out_blocks / job.group_out_blocks;
    int64_t n = set / job.block_sets / groups, group = set / job.block_sets % groups;
    int64_t first_block = set % job.block_sets * job.tile_blocks;
    int64_t blocks = std::min(job.tile_blocks, job.group_out_blocks - first_block);
    int64_t vectors = (blocks + kPer - 1) / kPer;
    int64_t oh_begin = row_item * job.rows_per_item;
    int64_t oh_end = std::min(p.out_height, oh_begin + job.rows_per_item);
    int64_t ow_begin = part * job.part_width, ow_end = std::min(p.out_width, ow_begin + job.part_width);
    for (int64_t c0 = 0; c0 < in_total; c0 += job.chunk) {
      Tile tile{n, group * job.group_out_blocks + first_block, blocks, 0, 0, 0, c0, std::min(in_total, c0 + job.chunk),
                c0 == 0, c0 + job.chunk >= in_total};
      if (one_position) {
        for (int64_t v = 0; v < vectors; ++v) {
          Tile vector = tile;
          vector.ocb += v * kPer;
          vector.blocks = std::min<int64_t>(kPer, blocks - v * kPer);
          PointTile<OB, L>(job, vector);
        }
        continue;
      }
      for (int64_t oh = oh_begin; oh < oh_end; ++oh) {
        tile.oh = oh;
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
  if constexpr (kPairsGroups<OB, kLocalGroup, L>) {
    if (paired) {
      return ParallelFor(sets * job.row_items * job.row_parts,
                         p.stride_w == 1 ? RunPairedGroupItems<1> : RunPairedGroupItems<2>, &job);
    }
  }
  return ParallelFor(sets * job.row_items * job.row_parts, RunItems<OB, kLocalGroup, IB, S, L>, &job);
}

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
      Job pointwise{&f.pointwise, f.data + (n * in_blocks * p.height + first_row) * p.width * IB,
                    f.pointwise_weight + first_block * in_blocks * IB * OB, band.as<float>(), nullptr, 0, in_blocks,
                    blocks, in_blocks, blocks, 0, 0, 0, 0, 0, 0, 0, 0, f.pointwise_registers, false,
                    p.height * p.width * IB, band_plane};
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
    Job depthwise{&f.depthwise, band.as<float>(), f.depthwise_weight, f.out, f.epilogue, f.epilogue_size,
                  out_blocks, out_blocks, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, f.depthwise_registers, false,
                  band_plane, p.out_height * p.out_width * OB, true, first_row, first_block};
    for (int64_t b = 0; b < blocks; ++b) {
      for (int64_t oh = oh_begin; oh < oh_end; ++oh) {
        Tile tile{n, first_block + b, 1, oh, 0, 0, 0, 1, true, true};
        f.depthwise_row(depthwise, tile, 0, p.out_width);
      }
    }
  }
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
  Job job{&run,
          data,
          weight,
          out,
          epilogue,
          epilogue_size,
          p.in_channels / p.in_block,
          p.out_channels / p.out_block,
          p.in_channels / groups / p.in_block,
          p.out_channels / groups / p.out_block,
          0,
          0,
          0,
          0,
          0,
          0,
          0,
          0,
          {},
          false};
  job.in_plane = run.in_height * run.in_width * run.in_block;
  job.out_plane = run.out_height * run.out_width * run.out_block;
  return Run<OB, kLocalGroup, IB, S, L>(job);
}

template <int IB>
int Conv2DPointwiseDepthwise(const Conv2DPointwiseDepthwiseParams& p, const float* data, const float* pointwise_weight,
                             const float* pointwise_bias, const float* depthwise_weight, float* out,
                             const EpilogueStep* epilogue, int epilogue_size) {
  static_assert(IB == 8 || IB == 16, "input blocks of 8 or 16 are compiled in");
  if (!PointwiseDepthwiseComputes(p, kCompiledConfig) || p.in_block != IB) {
    return Fail("Conv2DPointwiseDepthwise: the parameters are not a form this build computes (AVX-512; input block "
                "of the variant, 8 or 16; expanded channels in blocks of 16; kernel width 3 or 5, stride 1 or 2 "
                "along the row, no dilation there; pointwise weights of at most 64 KiB per two blocks)");
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
  if (f.depthwise_row == nullptr) return Fail("Conv2DPointwiseDepthwise: no depthwise row tile for the window");
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

#define KILN_CONV2D_NCHWC_SIGNATURE(...)                                                                    \
  template int Conv2DNCHWc<__VA_ARGS__>(const Conv2DNCHWcParams& p, const float* data, const float* weight, \
                                        float* out, const EpilogueStep* epilogue, int epilogue_size)
#define KILN_POINTWISE_DEPTHWISE_SIGNATURE(IB)                                                                  \
  template int Conv2DPointwiseDepthwise<IB>(const Conv2DPointwiseDepthwiseParams& p, const float* data,         \
                                            const float* pointwise_weight, const float* pointwise_bias,          \
                                            const float* depthwise_weight, float* out, const EpilogueStep* epilogue, \
                                            int epilogue_size)
#if defined(KILN_INSTANTIATE_Conv2DNCHWc)
// A model library's build: one object per variant its code names (backend/compiler.cc).
KILN_CONV2D_NCHWC_SIGNATURE(KILN_INSTANTIATE);
#elif defined(KILN_INSTANTIATE_Conv2DPointwiseDepthwise)
KILN_POINTWISE_DEPTHWISE_SIGNATURE(KILN_INSTANTIATE);
#else
KILN_POINTWISE_DEPTHWISE_SIGNATURE(8);
KILN_POINTWISE_DEPTHWISE_SIGNATURE(16);
// Every variant that Conv2DNCHWcVariantOf returns on some instruction set (the kernel tests).
namespace {
constexpr Conv2DNCHWcVariant kVariants[] = {
    {16, 0, 0, 1, 16}, {16, 0, 8, 1, 16}, {16, 0, 16, 1, 16}, {16, 0, 1, 2, 16}, {8, 0, 0, 1, 8},
    {8, 0, 0, 1, 16},  {8, 0, 8, 1, 16},  {8, 0, 16, 1, 16},  {8, 0, 1, 2, 16},  {16, 1, 0, 1, 16},
    {16, 2, 0, 1, 16}, {16, 4, 0, 1, 16}, {8, 1, 0, 1, 8},    {8, 2, 0, 1, 8},   {8, 4, 0, 1, 8}};

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
#undef KILN_POINTWISE_DEPTHWISE_SIGNATURE

}  // namespace kiln::kernels
