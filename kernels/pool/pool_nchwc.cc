// Max and average pooling of NCHW[x]c data: each output position is a vector of one channel
// block (simd.h), so the window is walked once for all channels of the block, over the taps
// inside the input only. One output row of a (batch, channel block) plane per work item. Same
// window and divisor rules as pool.cc, which pools blocks without a vector form.
#include <algorithm>
#include <limits>

#include "kernels/kernels.h"
#include "kernels/simd.h"

namespace kiln::kernels {
namespace {

struct PoolJob {
  const Pool2DParams* p;
  const float* data;
  float* out;
  bool average;
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

// Work items: (batch x channel block plane, output row), so that layers of few blocks (ShuffleNet's
// 3-block max pool on 112x112) split evenly across threads.
template <int B>
void PoolRows(int64_t begin, int64_t end, void* context) {
  using V = Vec<B>;
  const auto& job = *static_cast<const PoolJob*>(context);
  const Pool2DParams& p = *job.p;
  const float lowest = -std::numeric_limits<float>::infinity();
  for (int64_t item = begin; item < end; ++item) {
    const int64_t plane = item / p.out_height, oh = item % p.out_height;
    const float* in = job.data + plane * p.in_height * p.in_width * B;
    float* o = job.out + (plane * p.out_height + oh) * p.out_width * B;
    int64_t kh_begin, kh_end, rows_padded;
    WindowTaps(oh * p.stride_h - p.pad_top, p.dilation_h, p.pool_h, p.in_height, p.pad_bottom, &kh_begin, &kh_end,
               &rows_padded);
    for (int64_t ow = 0; ow < p.out_width; ++ow) {
      int64_t kw_begin, kw_end, cols_padded;
      WindowTaps(ow * p.stride_w - p.pad_left, p.dilation_w, p.pool_w, p.in_width, p.pad_right, &kw_begin, &kw_end,
                 &cols_padded);
      V acc = job.average ? V::Zero() : V::Broadcast(&lowest);
      for (int64_t kh = kh_begin; kh < kh_end; ++kh) {
        const float* row = in + (oh * p.stride_h - p.pad_top + kh * p.dilation_h) * p.in_width * B;
        for (int64_t kw = kw_begin; kw < kw_end; ++kw) {
          V x = V::Load(row + (ow * p.stride_w - p.pad_left + kw * p.dilation_w) * B);
          acc = job.average ? V::Add(acc, x) : V::Max(x, acc);  // std::max(best, v)
        }
      }
      if (job.average) {
        int64_t inside = (kh_end - kh_begin) * (kw_end - kw_begin);
        int64_t divisor = p.count_include_pad ? rows_padded * cols_padded : inside;
        float values[B];
        acc.Store(values);
        for (int c = 0; c < B; ++c) values[c] = divisor > 0 ? values[c] / static_cast<float>(divisor) : 0.0f;
        acc = V::Load(values);
      }
      acc.Store(o + ow * B);
    }
  }
}

void Pool(const Pool2DParams& p, int64_t block, const float* data, float* out, bool average) {
  if (block != 16 && block != 8) return Pool2DElementwise(p, block, data, out, average);
  PoolJob job{&p, data, out, average};
  if (block == 16) {
    ParallelFor(p.batch_channels * p.out_height, PoolRows<16>, &job);
  } else {
    ParallelFor(p.batch_channels * p.out_height, PoolRows<8>, &job);
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
