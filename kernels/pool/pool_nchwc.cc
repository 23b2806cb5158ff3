// Max and average pooling of NCHW[x]c data: each output position is a vector of one channel
// block (simd.h), so the window is walked once for all channels of the block. One (batch,
// channel block) plane per work item. Same window and divisor rules as pool.cc, which pools
// blocks without a vector form.
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

template <int B>
void PoolPlanes(int64_t begin, int64_t end, void* context) {
  using V = Vec<B>;
  const auto& job = *static_cast<const PoolJob*>(context);
  const Pool2DParams& p = *job.p;
  const float lowest = -std::numeric_limits<float>::infinity();
  for (int64_t plane = begin; plane < end; ++plane) {
    const float* in = job.data + plane * p.in_height * p.in_width * B;
    float* o = job.out + plane * p.out_height * p.out_width * B;
    for (int64_t oh = 0; oh < p.out_height; ++oh) {
      for (int64_t ow = 0; ow < p.out_width; ++ow) {
        V acc = job.average ? V::Zero() : V::Broadcast(&lowest);
        int64_t inside = 0, padded_window = 0;
        for (int64_t kh = 0; kh < p.pool_h; ++kh) {
          int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
          for (int64_t kw = 0; kw < p.pool_w; ++kw) {
            int64_t iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
            if (ih < p.in_height + p.pad_bottom && iw < p.in_width + p.pad_right) ++padded_window;
            if (ih < 0 || ih >= p.in_height || iw < 0 || iw >= p.in_width) continue;
            V x = V::Load(in + (ih * p.in_width + iw) * B);
            acc = job.average ? V::Add(acc, x) : V::Max(x, acc);  // std::max(best, v)
            ++inside;
          }
        }
        if (job.average) {
          int64_t divisor = p.count_include_pad ? padded_window : inside;
          float values[B];
          acc.Store(values);
          for (int c = 0; c < B; ++c) values[c] = divisor > 0 ? values[c] / static_cast<float>(divisor) : 0.0f;
          acc = V::Load(values);
        }
        acc.Store(o + (oh * p.out_width + ow) * B);
      }
    }
  }
}

void Pool(const Pool2DParams& p, int64_t block, const float* data, float* out, bool average) {
  if (block != 16 && block != 8) return Pool2DElementwise(p, block, data, out, average);
  PoolJob job{&p, data, out, average};
  if (block == 16) {
    ParallelFor(p.batch_channels, PoolPlanes<16>, &job);
  } else {
    ParallelFor(p.batch_channels, PoolPlanes<8>, &job);
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
