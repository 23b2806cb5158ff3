// RoiAlign: each region of interest of a feature map pooled to a fixed grid from bilinear samples
// (ONNX RoiAlign, as its reference and ONNX Runtime: max mode takes the largest weighted corner).
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/backend_api.h"
#include "kernels/kernels.h"

namespace kiln::kernels {
namespace {

// One bilinear sample: four positions in a feature map plane and their weights.
struct Sample {
  int64_t at[4] = {0, 0, 0, 0};
  float weight[4] = {0, 0, 0, 0};
};

Sample SampleAt(float y, float x, int64_t height, int64_t width) {
  Sample s;
  // Outside the map (by more than a pixel), or NaN: no sample.
  if (!(y >= -1.0f && y <= static_cast<float>(height) && x >= -1.0f && x <= static_cast<float>(width))) return s;
  y = std::max(y, 0.0f);
  x = std::max(x, 0.0f);
  int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x), y_high, x_high;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = static_cast<float>(y_low);
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    x = static_cast<float>(x_low);
  } else {
    x_high = x_low + 1;
  }
  float ly = y - static_cast<float>(y_low), lx = x - static_cast<float>(x_low), hy = 1 - ly, hx = 1 - lx;
  s.at[0] = y_low * width + x_low;
  s.at[1] = y_low * width + x_high;
  s.at[2] = y_high * width + x_low;
  s.at[3] = y_high * width + x_high;
  s.weight[0] = hy * hx;
  s.weight[1] = hy * lx;
  s.weight[2] = ly * hx;
  s.weight[3] = ly * lx;
  return s;
}

}  // namespace

int RoiAlign(const RoiAlignShape& s, const float* data, const float* rois, const int64_t* batch_indices, float* out) {
  std::vector<Sample> samples;
  int64_t plane = s.height * s.width;
  for (int64_t r = 0; r < s.rois; ++r) {
    int64_t batch = batch_indices[r];
    if (batch < 0 || batch >= s.batch) return Fail("RoiAlign: a batch index is out of range");
    float offset = s.half_pixel ? 0.5f : 0.0f;
    const float* roi = rois + 4 * r;
    float start_w = roi[0] * s.spatial_scale - offset, start_h = roi[1] * s.spatial_scale - offset;
    float roi_w = roi[2] * s.spatial_scale - offset - start_w, roi_h = roi[3] * s.spatial_scale - offset - start_h;
    if (!s.half_pixel) {  // malformed regions become 1 x 1
      roi_w = std::max(roi_w, 1.0f);
      roi_h = std::max(roi_h, 1.0f);
    }
    float bin_h = roi_h / static_cast<float>(s.out_height), bin_w = roi_w / static_cast<float>(s.out_width);
    // Samples per bin: given, or as many as the bin is wide (at least 0; at most 256 a side).
    auto grid = [&](float bin) {
      if (s.sampling_ratio > 0) return s.sampling_ratio;
      float n = std::ceil(bin);
      return n > 0 ? static_cast<int64_t>(std::min(n, 256.0f)) : int64_t{0};
    };
    int64_t grid_h = grid(bin_h), grid_w = grid(bin_w);
    float count = static_cast<float>(std::max<int64_t>(grid_h * grid_w, 1));
    for (int64_t ph = 0; ph < s.out_height; ++ph) {
      for (int64_t pw = 0; pw < s.out_width; ++pw) {
        samples.clear();  // this bin's, shared by every channel
        for (int64_t iy = 0; iy < grid_h; ++iy) {
          float y = start_h + static_cast<float>(ph) * bin_h +
                    (static_cast<float>(iy) + 0.5f) * bin_h / static_cast<float>(grid_h);
          for (int64_t ix = 0; ix < grid_w; ++ix) {
            float x = start_w + static_cast<float>(pw) * bin_w +
                      (static_cast<float>(ix) + 0.5f) * bin_w / static_cast<float>(grid_w);
            samples.push_back(SampleAt(y, x, s.height, s.width));
          }
        }
        for (int64_t c = 0; c < s.channels; ++c) {
          const float* in = data + (batch * s.channels + c) * plane;
          float value = 0;
          for (size_t k = 0; k < samples.size(); ++k) {
            const Sample& sample = samples[k];
            if (s.max_mode) {
              float v = std::max({sample.weight[0] * in[sample.at[0]], sample.weight[1] * in[sample.at[1]],
                                  sample.weight[2] * in[sample.at[2]], sample.weight[3] * in[sample.at[3]]});
              value = k == 0 ? v : std::max(value, v);
            } else {
              for (int corner = 0; corner < 4; ++corner) value += sample.weight[corner] * in[sample.at[corner]];
            }
          }
          out[((r * s.channels + c) * s.out_height + ph) * s.out_width + pw] = s.max_mode ? value : value / count;
        }
      }
    }
  }
  return 0;
}

}  // namespace kiln::kernels
