// Max and average pooling element by element, one plane per work item: NCHW data (a plane is one
// (batch, channel)), or NCHW[x]c data whose block has no vector form in pool_nchwc.cc (a plane
// holds x interleaved channels).
#include <algorithm>
#include <limits>

#include "kernels/kernels.h"

namespace kiln::kernels {
namespace {

struct PoolJob {
  const Pool2DParams* p;
  const float* data;
  float* out;
  int64_t block;  // channels interleaved in a plane; 1 for NCHW
  bool average;
};

void PoolPlanes(int64_t begin, int64_t end, void* context) {
  const auto& job = *static_cast<const PoolJob*>(context);
  const Pool2DParams& p = *job.p;
  const int64_t block = job.block;
  for (int64_t plane = begin; plane < end; ++plane) {
    const float* in = job.data + plane * p.in_height * p.in_width * block;
    float* o = job.out + plane * p.out_height * p.out_width * block;
    for (int64_t c = 0; c < block; ++c) {
      for (int64_t oh = 0; oh < p.out_height; ++oh) {
        for (int64_t ow = 0; ow < p.out_width; ++ow) {
          float best = -std::numeric_limits<float>::infinity();
          float sum = 0;
          int64_t inside = 0, padded_window = 0;
          for (int64_t kh = 0; kh < p.pool_h; ++kh) {
            int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
            for (int64_t kw = 0; kw < p.pool_w; ++kw) {
              int64_t iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
              // The window counted with padding stops at the padded input's end (as in PyTorch).
              if (ih < p.in_height + p.pad_bottom && iw < p.in_width + p.pad_right) ++padded_window;
              if (ih < 0 || ih >= p.in_height || iw < 0 || iw >= p.in_width) continue;
              float v = in[(ih * p.in_width + iw) * block + c];
              best = std::max(best, v);
              sum += v;
              ++inside;
            }
          }
          int64_t divisor = p.count_include_pad ? padded_window : inside;
          float value = job.average ? (divisor > 0 ? sum / static_cast<float>(divisor) : 0.0f) : best;
          o[(oh * p.out_width + ow) * block + c] = value;
        }
      }
    }
  }
}

}  // namespace

void Pool2DElementwise(const Pool2DParams& p, int64_t block, const float* data, float* out, bool average) {
  PoolJob job{&p, data, out, block, average};
  ParallelFor(p.batch_channels, PoolPlanes, &job);
}

void MaxPool2D(const Pool2DParams& p, const float* data, float* out) { Pool2DElementwise(p, 1, data, out, false); }

void AvgPool2D(const Pool2DParams& p, const float* data, float* out) { Pool2DElementwise(p, 1, data, out, true); }

}  // namespace kiln::kernels
