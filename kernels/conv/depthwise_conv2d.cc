// Depthwise 2-D convolution of NCHW data (kernels.h): each output channel's plane on its own,
// vectors along the output rows. A tile of a few vectors of one row, or of a few rows when rows
// are narrow, keeps its sums in registers over the taps; the fused epilogue then runs over each
// plane just stored (in L1 or L2 cache).
// Where an output row is short (at most two vectors), the input is read where it lies: tap
// (kh, kw) of a vector reads its input row from the vector's first column times the stride, one
// load at stride 1 and the even lanes of two at stride 2, the lanes outside the row masked to zeros
// (where each tap's load starts and its lanes: a table made once per call); rows outside the input
// read a row of zeros.
// There, 3x3 windows at dilation 1 whose stride is the same down the rows as along them slide a
// tile of output rows down the plane: each input row is loaded once for all the rows it feeds.
// Otherwise the input plane is first copied into workspace with its padding written out as zeros
// and split into s phases for a stride s (phase q of a copied row holds its columns q, q + s,
// q + 2s, ...), so that each tap reads one contiguous run of the copy with unchecked loads. (The
// copy was most of the time of ShuffleNet's small planes.)
#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/backend_api.h"
#include "kernels/epilogue.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"

namespace kiln::kernels {
namespace {

constexpr int kLanes = kCompiledConfig.vector_floats;
using V = Vec<kLanes>;
constexpr int kTileVectors = 4;  // vectors a tile keeps in registers (rows x vectors of a row)
constexpr int64_t kMaxInPlaceWidth = 256;  // input rows read in place are at most this wide (the zero row)
constexpr int64_t kMaxInPlaceKernel = 16;  // and kernels at most this wide (the column table on the stack)

struct Job {
  const Conv2DParams* p;
  const float* data;
  const float* weight;
  float* out;
  const EpilogueStep* epilogue;
  int epilogue_size;
  int64_t row_vectors;   // vectors of an output row, the last one partly outside the row
  int64_t copy_rows;     // rows of the copy: the input rows the windows cover, padding included
  int64_t phase_width;   // floats of one phase of a copied row
  int64_t row_floats;    // floats of a copied row: stride_w * phase_width
  const int64_t* taps;   // where tap (kh, kw) reads, from the copy of the tile's first position
  std::atomic<bool>* out_of_workspace;  // set by a thread that got no workspace (its planes unwritten)
  // Read in place: per output vector of a row, tap column and half (stride 2 reads two vectors),
  // where the load starts in the input row and the lanes [lo, hi) inside it (ColumnTaps).
  const struct ColumnTap* column_taps;
  const float* zero_row;  // in_width zeros: read for rows outside the input
};

struct ColumnTap {
  int64_t first;
  int lo, hi;
};

// GCC's vectors of kLanes floats and of as many lane indices, for the shuffles that split a row.
using Floats = float __attribute__((vector_size(kLanes * sizeof(float))));
using Lanes = int32_t __attribute__((vector_size(kLanes * sizeof(int32_t))));

// even[i] = src[2 i], odd[i] = src[2 i + 1] for i < count (a multiple of kLanes): two loads and two
// shuffles per kLanes of each phase.
template <size_t... I>
void Deinterleave(const float* src, int64_t count, float* even, float* odd, std::index_sequence<I...>) {
  for (int64_t i = 0; i < count; i += kLanes) {
    Floats a, b;
    std::memcpy(&a, src + 2 * i, sizeof(a));
    std::memcpy(&b, src + 2 * i + kLanes, sizeof(b));
    Floats e = __builtin_shuffle(a, b, Lanes{static_cast<int32_t>(2 * I)...});
    Floats o = __builtin_shuffle(a, b, Lanes{static_cast<int32_t>(2 * I + 1)...});
    std::memcpy(even + i, &e, sizeof(e));
    std::memcpy(odd + i, &o, sizeof(o));
  }
}

// Input plane `in` into `copy`, padding as zeros, each row split into stride_w phases.
void CopyPlane(const Job& job, const float* in, float* copy) {
  const Conv2DParams& p = *job.p;
  const int64_t s = p.stride_w;
  for (int64_t r = 0; r < job.copy_rows; ++r) {
    float* dst = copy + r * job.row_floats;
    int64_t ih = r - p.pad_top;
    if (ih < 0 || ih >= p.in_height) {
      std::fill(dst, dst + job.row_floats, 0.0f);
      continue;
    }
    const float* src = in + ih * p.in_width;
    if (s == 1) {  // column j is input column j - pad_left
      int64_t begin = std::min(p.pad_left, job.phase_width);
      int64_t end = std::min(p.pad_left + p.in_width, job.phase_width);
      std::fill(dst, dst + begin, 0.0f);
      if (end > begin) std::memcpy(dst + begin, src + (begin - p.pad_left), (end - begin) * sizeof(float));
      std::fill(dst + std::max(begin, end), dst + job.phase_width, 0.0f);
      continue;
    }
    // Phase q's column j is input column j * s + q - pad_left: zeros before and after the columns
    // inside the input, a strided copy between them (a check per column made this copy most of
    // the time of a stride-2 layer: ShuffleNet's 58-channel 56x56 one, 275 us -> 72).
    // At stride 2, columns whose two phases are both inside go through shuffles, kLanes at a time.
    int64_t split_begin = 0, split_end = 0;
    if (s == 2) {
      split_begin = (p.pad_left + 1) / 2;  // from the first j with 2 j - pad_left >= 0
      // to the last with 2 j + 1 - pad_left < in_width, in whole vectors
      int64_t inside = std::min(job.phase_width, (p.in_width + p.pad_left) / 2) - split_begin;
      split_end = split_begin + std::max<int64_t>(0, inside) / kLanes * kLanes;
      Deinterleave(src + 2 * split_begin - p.pad_left, split_end - split_begin, dst + split_begin,
                   dst + job.phase_width + split_begin, std::make_index_sequence<kLanes>());
    }
    for (int64_t q = 0; q < s; ++q) {
      float* d = dst + q * job.phase_width;
      int64_t begin = std::min(job.phase_width, std::max<int64_t>(0, (p.pad_left - q + s - 1) / s));
      int64_t end = std::max(begin, std::min(job.phase_width, (p.in_width - 1 - q + p.pad_left) / s + 1));
      if (p.in_width - 1 - q + p.pad_left < 0) end = begin;
      const float* from = src + q - p.pad_left;
      std::fill(d, d + begin, 0.0f);
      for (int64_t j = begin; j < std::min(end, split_begin); ++j) d[j] = from[j * s];
      for (int64_t j = std::max(begin, split_end); j < end; ++j) d[j] = from[j * s];
      std::fill(d + end, d + job.phase_width, 0.0f);
    }
  }
}

// The first `count` floats of v at `out`.
KILN_ALWAYS_INLINE void StorePart(const V& v, float* out, int64_t count) {
  if (count >= kLanes) {
    v.Store(out);
  } else if (count > 0) {
    float lanes[kLanes];
    v.Store(lanes);
    std::memcpy(out, lanes, count * sizeof(float));
  }
}

// Output rows [oh, oh + R), vectors [v0, v0 + U) of each, of plane `out` (channel `oc`).
template <int R, int U>
void Tile(const Job& job, const float* copy, const float* w, float* out, int64_t oh, int64_t v0) {
  const Conv2DParams& p = *job.p;
  const int64_t taps = p.kernel_height * p.kernel_width, row_step = p.stride_h * job.row_floats;
  const float* x = copy + oh * row_step + v0 * kLanes;
  V acc[R][U];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) acc[r][u] = V::Zero();
  }
  for (int64_t t = 0; t < taps; ++t) {
    V wv = V::Broadcast(w + t);
    const float* xt = x + job.taps[t];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int u = 0; u < U; ++u) acc[r][u] = V::Fma(V::Load(xt + r * row_step + u * kLanes), wv, acc[r][u]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) {
      int64_t ow = (v0 + u) * kLanes;
      StorePart(acc[r][u], out + (oh + r) * p.out_width + ow, p.out_width - ow);
    }
  }
}

void PlaneEpilogue(const Job& job, int64_t nc, int64_t oc, float* out);

// Tap columns [b, b + kLanes * S) of input row `row` at stride S (1 or 2), b as `taps` (S halves)
// give it: lane j the column b + S * j, zero outside the row. (A masked load's lane 0 may lie
// before the row or past it; the lanes outside [lo, hi) are never read.)
template <int S>
KILN_ALWAYS_INLINE V LoadTap(const float* row, const ColumnTap* taps) {
  V part[S];
#pragma GCC unroll 2
  for (int h = 0; h < S; ++h) part[h] = V::LoadLanes(row + taps[h].first, taps[h].lo, taps[h].hi);
  if constexpr (S == 1) {
    return part[0];
  } else {
    return V::EvenLanes(part[0], part[1]);
  }
}

// Output rows [oh, oh + R), vectors [v0, v0 + U) of each, of plane `out`, from input plane `in`
// read where it lies at stride S along the rows. Rows outside the input read the zero row, and
// each tap's columns come from the job's table: no test in the loops over taps (testing each row
// and computing each load's lanes there took 3/4 of ShuffleNet's 14x14 layers).
template <int R, int U, int S>
void InPlaceTile(const Job& job, const float* in, const float* w, float* out, int64_t oh, int64_t v0) {
  const Conv2DParams& p = *job.p;
  V acc[R][U];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) acc[r][u] = V::Zero();
  }
  for (int64_t kh = 0; kh < p.kernel_height; ++kh) {
    const float* rows[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      int64_t ih = (oh + r) * p.stride_h - p.pad_top + kh * p.dilation_h;
      rows[r] = ih >= 0 && ih < p.in_height ? in + ih * p.in_width : job.zero_row;
    }
    for (int64_t kw = 0; kw < p.kernel_width; ++kw) {
      V wv = V::Broadcast(w + kh * p.kernel_width + kw);
#pragma GCC unroll 4
      for (int u = 0; u < U; ++u) {
        const ColumnTap* taps = job.column_taps + ((v0 + u) * p.kernel_width + kw) * S;
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) acc[r][u] = V::Fma(LoadTap<S>(rows[r], taps), wv, acc[r][u]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) {
      int64_t ow = (v0 + u) * kLanes, count = std::min<int64_t>(kLanes, p.out_width - ow);
      float* at = out + (oh + r) * p.out_width + ow;
      if (count == kLanes) {
        acc[r][u].Store(at);
      } else if (count > 0) {
        acc[r][u].StoreLanes(at, static_cast<int>(count));
      }
    }
  }
}

// 3x3 windows at dilation 1, the stride S down the rows as along them: output rows [oh, oh + R),
// all U vectors of each, with the nine weights in registers. Each input row the tile covers is
// loaded once per tap column and added into every output row whose window holds it, (R - 1) S + 3
// rows of three loads for 9 R products; the general tile above loads each row once per output row
// and tap and loops over the taps. Measured on one core of an AMD Zen 5, AVX-512 code: 116
// channels of 14x14 13.9 -> 6.7 us, 58 of 28x28 23.0 -> 10.0, 116 from 28x28 at stride 2 21.5 ->
// 17.1, 58 from 56x56 40.5 -> 28.9; AVX2 code: 116 of 14x14 16.6 -> 12.2, 116 from 28x28 30.0 -> 25.4.
template <int R, int U, int S>
void SlidingTile3x3(const Job& job, const float* in, const float* w, float* out, int64_t oh) {
  const Conv2DParams& p = *job.p;
  V weights[9];
#pragma GCC unroll 9
  for (int t = 0; t < 9; ++t) weights[t] = V::Broadcast(w + t);
  // Where each tap column's loads start and their lanes, made once for all the rows.
  int64_t first[U * 3 * S];
  typename V::LaneSet lanes[U * 3 * S];
#pragma GCC unroll 12
  for (int t = 0; t < U * 3 * S; ++t) {
    const ColumnTap& tap = job.column_taps[t];
    first[t] = tap.first;
    lanes[t] = V::Lanes(tap.lo, tap.hi);
  }
  V acc[R][U];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int u = 0; u < U; ++u) acc[r][u] = V::Zero();
  }
#pragma GCC unroll 32
  for (int j = 0; j < (R - 1) * S + 3; ++j) {
    const int64_t ih = oh * S - p.pad_top + j;
    const float* row = static_cast<uint64_t>(ih) < static_cast<uint64_t>(p.in_height) ? in + ih * p.in_width : job.zero_row;
#pragma GCC unroll 2
    for (int u = 0; u < U; ++u) {
#pragma GCC unroll 3
      for (int kw = 0; kw < 3; ++kw) {
        const int t = (u * 3 + kw) * S;
        V x = V::LoadLanes(row + first[t], lanes[t]);
        if constexpr (S == 2) x = V::EvenLanes(x, V::LoadLanes(row + first[t + 1], lanes[t + 1]));
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
          const int kh = j - r * S;  // the window row of output row oh + r that input row j is
          if (kh >= 0 && kh < 3) acc[r][u] = V::Fma(x, weights[kh * 3 + kw], acc[r][u]);
        }
      }
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int u = 0; u < U; ++u) {
      int64_t ow = u * kLanes, count = std::min<int64_t>(kLanes, p.out_width - ow);
      float* at = out + (oh + r) * p.out_width + ow;
      if (count == kLanes) {
        acc[r][u].Store(at);
      } else if (count > 0) {
        acc[r][u].StoreLanes(at, static_cast<int>(count));
      }
    }
  }
}

// Rows of a sliding tile: as many as keep the sums and the weights in the vector registers (32
// with AVX-512, 16 with AVX2).
constexpr int kSlidingVectors = kLanes == 16 ? 8 : 4;

// The plane from input plane `in` by SlidingTile3x3: tiles of the most rows, then one of the rest.
template <int U, int S>
void SlidingPlane3x3(const Job& job, const float* in, const float* w, float* out) {
  constexpr int kRows = kSlidingVectors / U;
  using RowsFn = void (*)(const Job&, const float*, const float*, float*, int64_t);
  // kRest[i]: the tile of i rows (1 for the entries past kRows - 1, never called).
  constexpr auto rest = [](int i) { return i < kRows ? i : 1; };
  static constexpr RowsFn kRest[] = {nullptr,
                                     SlidingTile3x3<1, U, S>,
                                     SlidingTile3x3<rest(2), U, S>,
                                     SlidingTile3x3<rest(3), U, S>,
                                     SlidingTile3x3<rest(4), U, S>,
                                     SlidingTile3x3<rest(5), U, S>,
                                     SlidingTile3x3<rest(6), U, S>,
                                     SlidingTile3x3<rest(7), U, S>};
  static_assert(kRows <= 8, "kRest covers the rest of up to eight rows");
  const int64_t rows = job.p->out_height;
  int64_t oh = 0;
  for (; oh + kRows <= rows; oh += kRows) SlidingTile3x3<kRows, U, S>(job, in, w, out, oh);
  if (oh < rows) kRest[rows - oh](job, in, w, out, oh);
}

// The plane of output channel `nc` from input plane `in`, read where it lies at stride S.
template <int S>
void InPlacePlane(const Job& job, const float* in, const float* w, float* out) {
  const Conv2DParams& p = *job.p;
  if (p.kernel_height == 3 && p.kernel_width == 3 && p.dilation_h == 1 && p.dilation_w == 1 && p.stride_h == S) {
    if (job.row_vectors == 1) {
      SlidingPlane3x3<1, S>(job, in, w, out);
    } else {
      SlidingPlane3x3<2, S>(job, in, w, out);
    }
    return;
  }
  const int64_t row_tile_vectors = std::min<int64_t>(job.row_vectors, kTileVectors);
  const int64_t rows_per_tile = kTileVectors / row_tile_vectors;
  int64_t oh = 0;
  if (rows_per_tile > 1) {
    for (; oh + rows_per_tile <= p.out_height; oh += rows_per_tile) {
      if (row_tile_vectors == 1) {
        InPlaceTile<4, 1, S>(job, in, w, out, oh, 0);
      } else {
        InPlaceTile<2, 2, S>(job, in, w, out, oh, 0);
      }
    }
  }
  static constexpr void (*kRowRuns[])(const Job&, const float*, const float*, float*, int64_t, int64_t) = {
      nullptr, InPlaceTile<1, 1, S>, InPlaceTile<1, 2, S>, InPlaceTile<1, 3, S>, InPlaceTile<1, 4, S>};
  for (; oh < p.out_height; ++oh) {
    int64_t v = 0;
    for (; v + kTileVectors <= job.row_vectors; v += kTileVectors) {
      InPlaceTile<1, kTileVectors, S>(job, in, w, out, oh, v);
    }
    if (v < job.row_vectors) kRowRuns[job.row_vectors - v](job, in, w, out, oh, v);
  }
}

// Output channels [begin, end) over all images, the input read where it lies.
void RunPlanesInPlace(int64_t begin, int64_t end, void* context) {
  const Job& job = *static_cast<const Job*>(context);
  const Conv2DParams& p = *job.p;
  const int64_t multiplier = p.out_channels / p.in_channels;
  for (int64_t nc = begin; nc < end; ++nc) {
    int64_t n = nc / p.out_channels, oc = nc % p.out_channels, plane = n * p.in_channels + oc / multiplier;
    const float* in = job.data + plane * p.in_height * p.in_width;
    const float* w = job.weight + oc * p.kernel_height * p.kernel_width;
    float* out = job.out + nc * p.out_height * p.out_width;
    if (p.stride_w == 1) {
      InPlacePlane<1>(job, in, w, out);
    } else {
      InPlacePlane<2>(job, in, w, out);
    }
    if (job.epilogue_size > 0) PlaneEpilogue(job, nc, oc, out);
  }
}

// A run of U vectors of each of R rows.
using TileFn = void (*)(const Job&, const float*, const float*, float*, int64_t, int64_t);

// The epilogue over plane `nc` (batch n, output channel oc), just stored at `out`.
void PlaneEpilogue(const Job& job, int64_t nc, int64_t oc, float* out) {
  const int64_t size = job.p->out_height * job.p->out_width;
  for (int s = 0; s < job.epilogue_size; ++s) {
    const EpilogueStep& step = job.epilogue[s];
    const float* tensor = step.operand == EpilogueStep::kTensor ? step.data + nc * size : nullptr;
    ApplyStepToFloats<kLanes>(step, out, size, tensor, StepOperand(step, oc));
  }
}

void RunPlanes(int64_t begin, int64_t end, void* context) {
  const Job& job = *static_cast<const Job*>(context);
  const Conv2DParams& p = *job.p;
  Workspace workspace(job.copy_rows * job.row_floats * sizeof(float));
  if (!workspace.ok()) {  // reported by DepthwiseConv2D when the loop is done
    job.out_of_workspace->store(true, std::memory_order_relaxed);
    return;
  }
  float* copy = workspace.as<float>();
  const int64_t multiplier = p.out_channels / p.in_channels;
  // Narrow rows: several rows per tile, so that a tile has kTileVectors independent sums.
  const int64_t row_tile_vectors = std::min<int64_t>(job.row_vectors, kTileVectors);
  const int64_t rows_per_tile = kTileVectors / row_tile_vectors;
  static constexpr TileFn kRowRuns[] = {nullptr, Tile<1, 1>, Tile<1, 2>, Tile<1, 3>, Tile<1, 4>};
  const TileFn multi_row = row_tile_vectors == 1 ? Tile<4, 1> : Tile<2, 2>;
  int64_t copied = -1;  // the (batch, input channel) plane in the copy
  for (int64_t nc = begin; nc < end; ++nc) {
    int64_t n = nc / p.out_channels, oc = nc % p.out_channels, plane = n * p.in_channels + oc / multiplier;
    if (plane != copied) {
      CopyPlane(job, job.data + plane * p.in_height * p.in_width, copy);
      copied = plane;
    }
    const float* w = job.weight + oc * p.kernel_height * p.kernel_width;
    float* out = job.out + nc * p.out_height * p.out_width;
    int64_t oh = 0;
    if (rows_per_tile > 1) {
      for (; oh + rows_per_tile <= p.out_height; oh += rows_per_tile) multi_row(job, copy, w, out, oh, 0);
    }
    for (; oh < p.out_height; ++oh) {
      int64_t v = 0;
      for (; v + kTileVectors <= job.row_vectors; v += kTileVectors) Tile<1, kTileVectors>(job, copy, w, out, oh, v);
      if (v < job.row_vectors) kRowRuns[job.row_vectors - v](job, copy, w, out, oh, v);
    }
    if (job.epilogue_size > 0) PlaneEpilogue(job, nc, oc, out);
  }
}

}  // namespace

int DepthwiseConv2D(const Conv2DParams& p, const float* data, const float* weight, float* out,
                    const EpilogueStep* epilogue, int epilogue_size) {
  if (!p.depthwise || p.groups != p.in_channels || p.in_channels < 1 || p.out_channels % p.in_channels != 0 ||
      p.out_height < 1 || p.out_width < 1 || p.stride_h < 1 || p.stride_w < 1) {
    return Fail("DepthwiseConv2D: a depthwise convolution needs one group per input channel");
  }
  Job job{&p, data, weight, out, epilogue, epilogue_size, 0, 0, 0, 0, nullptr, nullptr, nullptr, nullptr};
  job.row_vectors = (p.out_width + kLanes - 1) / kLanes;
  // Read in place where an output row is at most two vectors (at stride 1 or 2); wider rows run
  // faster from the copy (unchecked loads). Measured on one core of an AMD Zen 4, AVX-512 code: 116
  // channels of 14x14 26 -> 17 us with the column table and zero row (in place, against the
  // earlier in-place tile's tests per row and load), 58 of 28x28 42 -> 29 (against the copy),
  // 116 from 28x28 at stride 2 37 -> 26, 58 from 56x56 65 -> 49; 32 of 56x56 (four vectors) 69 ->
  // 97 and 24 of 112x112 160 -> 268 in place (so: the copy). AVX2 code: 116 of 14x14 30 -> 25,
  // 232 of 7x7 28 -> 23.
  const bool in_place = p.in_width <= kMaxInPlaceWidth && p.kernel_width <= kMaxInPlaceKernel &&
                        (p.stride_w == 1 || p.stride_w == 2) && job.row_vectors <= 2;
  if (in_place) {
    // Each tap's columns, the same for every row and plane: [vector][kw][half].
    const int64_t halves = p.stride_w;
    // On the stack: the kernel allocates nothing on this path (a std::vector's bad_alloc would
    // leave the operator's C ABI as an exception).
    ColumnTap column_taps[2 * kMaxInPlaceKernel * 2];
    for (int64_t v = 0; v < job.row_vectors; ++v) {
      for (int64_t kw = 0; kw < p.kernel_width; ++kw) {
        for (int64_t h = 0; h < halves; ++h) {
          int64_t first = v * kLanes * halves - p.pad_left + kw * p.dilation_w + h * kLanes;
          int64_t lo = std::clamp<int64_t>(-first, 0, kLanes), hi = std::clamp<int64_t>(p.in_width - first, 0, kLanes);
          column_taps[(v * p.kernel_width + kw) * halves + h] = {first, static_cast<int>(lo),
                                                                 static_cast<int>(std::max(lo, hi))};
        }
      }
    }
    static const float kZeros[kMaxInPlaceWidth] = {};
    job.column_taps = column_taps;
    job.zero_row = kZeros;
    return ParallelFor(p.batch * p.out_channels, RunPlanesInPlace, &job);
  }
  job.copy_rows = (p.out_height - 1) * p.stride_h + (p.kernel_height - 1) * p.dilation_h + 1;
  job.phase_width = job.row_vectors * kLanes + (p.kernel_width - 1) * p.dilation_w / p.stride_w;
  job.row_floats = p.stride_w * job.phase_width;
  // Tap (kh, kw) reads copied row kh * dilation_h; its column kw * dilation_w is in phase
  // (kw * dilation_w) % stride_w, that many columns along it divided by the stride.
  std::vector<int64_t> taps(p.kernel_height * p.kernel_width);
  for (int64_t kh = 0; kh < p.kernel_height; ++kh) {
    for (int64_t kw = 0; kw < p.kernel_width; ++kw) {
      int64_t column = kw * p.dilation_w;
      taps[kh * p.kernel_width + kw] = kh * p.dilation_h * job.row_floats +
                                       column % p.stride_w * job.phase_width + column / p.stride_w;
    }
  }
  job.taps = taps.data();
  {  // the workspace each thread takes, tried once here so that a failure is reported
    Workspace probe(job.copy_rows * job.row_floats * sizeof(float));
    if (!probe.ok()) return Fail("DepthwiseConv2D: out of workspace memory");
  }
  std::atomic<bool> out_of_workspace{false};
  job.out_of_workspace = &out_of_workspace;
  int status = ParallelFor(p.batch * p.out_channels, RunPlanes, &job);
  // (A thread's allocation can fail after the probe's succeeded: another thread's took the memory.)
  if (status == 0 && out_of_workspace.load()) return Fail("DepthwiseConv2D: out of workspace memory");
  return status;
}

}  // namespace kiln::kernels
