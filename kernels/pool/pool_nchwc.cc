// Max and average pooling of NCHW[x]c data: each output position is a vector of one channel
// block (simd.h), so the window is walked once for all channels of the block, over the taps
// inside the input only. One output row of a (batch, channel block) plane per work item. Same
// window and divisor rules as pool.cc, which pools blocks without a vector form.
#include <algorithm>
#include <limits>
#include <type_traits>

#include "kernels/kernels.h"
#include "kernels/simd.h"

namespace kiln::kernels {
namespace {

struct PoolJob {
  const Pool2DParams* p;
  const float* data;
  float* out;
};

// The taps k in [0, size) of a window starting at `first` (stride `dilation`) inside [0, extent):
// [*begin, *end); and how many are before extent + pad_after (inside the padded input).
inline void WindowTaps(int64_t first, int64_t dilation, int64_t size, int64_t extent, int64_t pad_after,
                       int64_t* begin, int64_t* end, int64_t* padded) {
  *begin = size, *end = 0, *padded = 0;
  for (int64_t k = 0; k < size; ++k) {
    int64_t i = first + k * dilation;
    if (i >= 0 && i < extent) {
      *begin = std::min(*begin, k);
      *end = k + 1;
    }
    if (i < extent + pad_after) ++*padded;
  }
  if (*end < *begin) *end = *begin;
}

// Pools positions [ow_begin, ow_end) of an output row whose windows lie inside the input along
// the row (their taps kw = 0 .. pool_w - 1 all read), kRun of them at a time: each position's maxima
// or sums are a chain of dependent operations, and interleaving independent ones hides their
// latency (SqueezeNet's 3x3 max pool on 111x111: 178 us on one Zen 5 core, position by position
// with each window's bounds worked out again).
template <int B, bool kAverage>
void PoolInsideRow(const Pool2DParams& p, const float* in, float* o, int64_t oh, int64_t kh_begin, int64_t kh_end,
                   int64_t ow_begin, int64_t ow_end, float divisor) {
  using V = Vec<B>;
  constexpr int kRun = 4;
  const float lowest = -std::numeric_limits<float>::infinity();
  const int64_t step = p.stride_w * B, tap = p.dilation_w * B;
  auto pool = [&](auto run, int64_t ow) {
    constexpr int R = decltype(run)::value;
    V acc[R];
    for (V& a : acc) a = kAverage ? V::Zero() : V::Broadcast(&lowest);
    const float* first = in + (ow * p.stride_w - p.pad_left) * B;
    for (int64_t kh = kh_begin; kh < kh_end; ++kh) {
      const float* row = first + (oh * p.stride_h - p.pad_top + kh * p.dilation_h) * p.in_width * B;
      for (int64_t kw = 0; kw < p.pool_w; ++kw) {
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          V x = V::Load(row + r * step + kw * tap);
          acc[r] = kAverage ? V::Add(acc[r], x) : V::Max(x, acc[r]);  // std::max(best, v)
        }
      }
    }
    const V d = V::Broadcast(&divisor);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) (kAverage ? V::Div(acc[r], d) : acc[r]).Store(o + (ow + r) * B);
  };
  int64_t ow = ow_begin;
  for (; ow + kRun <= ow_end; ow += kRun) pool(std::integral_constant<int, kRun>(), ow);
  for (; ow < ow_end; ++ow) pool(std::integral_constant<int, 1>(), ow);
}

// Work items: (batch x channel block plane, output row), so that layers of few blocks (ShuffleNet's
// 3-block max pool on 112x112) split evenly across threads. The positions whose windows cross the
// row's ends walk only the taps inside; the others go through PoolInsideRow.
template <int B, bool kAverage>
void PoolRows(int64_t begin, int64_t end, void* context) {
  using V = Vec<B>;
  const auto& job = *static_cast<const PoolJob*>(context);
  const Pool2DParams& p = *job.p;
  const float lowest = -std::numeric_limits<float>::infinity();
  // Outputs [inside_begin, inside_end) read only columns inside the input.
  const int64_t last_tap = (p.pool_w - 1) * p.dilation_w;
  const int64_t inside_begin = std::min(p.out_width, (p.pad_left + p.stride_w - 1) / p.stride_w);
  const int64_t inside_end =
      p.in_width - 1 - last_tap + p.pad_left < 0
          ? inside_begin
          : std::max(inside_begin, std::min(p.out_width, (p.in_width - 1 - last_tap + p.pad_left) / p.stride_w + 1));
  for (int64_t item = begin; item < end; ++item) {
    const int64_t plane = item / p.out_height, oh = item % p.out_height;
    const float* in = job.data + plane * p.in_height * p.in_width * B;
    float* o = job.out + (plane * p.out_height + oh) * p.out_width * B;
    int64_t kh_begin, kh_end, rows_padded;
    WindowTaps(oh * p.stride_h - p.pad_top, p.dilation_h, p.pool_h, p.in_height, p.pad_bottom, &kh_begin, &kh_end,
               &rows_padded);
    auto border = [&](int64_t ow) {
      int64_t kw_begin, kw_end, cols_padded;
      WindowTaps(ow * p.stride_w - p.pad_left, p.dilation_w, p.pool_w, p.in_width, p.pad_right, &kw_begin, &kw_end,
                 &cols_padded);
      V acc = kAverage ? V::Zero() : V::Broadcast(&lowest);
      for (int64_t kh = kh_begin; kh < kh_end; ++kh) {
        const float* row = in + (oh * p.stride_h - p.pad_top + kh * p.dilation_h) * p.in_width * B;
        for (int64_t kw = kw_begin; kw < kw_end; ++kw) {
          V x = V::Load(row + (ow * p.stride_w - p.pad_left + kw * p.dilation_w) * B);
          acc = kAverage ? V::Add(acc, x) : V::Max(x, acc);  // std::max(best, v)
        }
      }
      if constexpr (kAverage) {
        int64_t inside = (kh_end - kh_begin) * (kw_end - kw_begin);
        int64_t divisor = p.count_include_pad ? rows_padded * cols_padded : inside;
        float values[B];
        acc.Store(values);
        for (int c = 0; c < B; ++c) values[c] = divisor > 0 ? values[c] / static_cast<float>(divisor) : 0.0f;
        acc = V::Load(values);
      }
      acc.Store(o + ow * B);
    };
    for (int64_t ow = 0; ow < inside_begin; ++ow) border(ow);
    // Inside along the row, every column tap is read and inside the padded input too.
    const int64_t inside_rows = kh_end - kh_begin;
    const int64_t divisor = (p.count_include_pad ? rows_padded : inside_rows) * p.pool_w;
    if (divisor > 0 || !kAverage) {
      PoolInsideRow<B, kAverage>(p, in, o, oh, kh_begin, kh_end, inside_begin, inside_end, static_cast<float>(divisor));
    } else {
      for (int64_t ow = inside_begin; ow < inside_end; ++ow) border(ow);
    }
    for (int64_t ow = inside_end; ow < p.out_width; ++ow) border(ow);
  }
}

void Pool(const Pool2DParams& p, int64_t block, const float* data, float* out, bool average) {
  if (block != 16 && block != 8) return Pool2DElementwise(p, block, data, out, average);
  PoolJob job{&p, data, out};
  const int64_t items = p.batch_channels * p.out_height;
  if (block == 16) {
    ParallelFor(items, average ? PoolRows<16, true> : PoolRows<16, false>, &job);
  } else {
    ParallelFor(items, average ? PoolRows<8, true> : PoolRows<8, false>, &job);
  }
}

}  // namespace

void MaxPool2DNCHWc(const Pool2DParams& p, int64_t block, const float* data, float* out) {
  Pool(p, block, data, out, false);
}

void AvgPool2DNCHWc(const Pool2DParams& p, int64_t block, const float* data, float* out) {
  Pool(p, block, data, out, true);
}

}  // namespace kiln::kernels
