// 2-D convolution (NCHW data, OIHW weights): depthwise convolutions as DepthwiseConv2D
// (depthwise_conv2d.cc); others as im2col into workspace followed by a matrix product per image
// and group, which applies the epilogue to each tile of its result.
#include <algorithm>
#include <cstring>

#include "kernels/backend_api.h"
#include "kernels/kernels.h"

namespace kiln::kernels {
namespace {

struct Im2ColJob {
  const Conv2DParams* p;
  const float* data;  // the group's first input channel
  float* col;         // [channels * KH * KW, OH * OW]
};

void Im2ColRows(int64_t begin, int64_t end, void* context) {
  const auto& job = *static_cast<const Im2ColJob*>(context);
  const Conv2DParams& p = *job.p;
  int64_t kernel = p.kernel_height * p.kernel_width, pixels = p.out_height * p.out_width;
  for (int64_t row = begin; row < end; ++row) {
    int64_t c = row / kernel, kh = (row % kernel) / p.kernel_width, kw = row % p.kernel_width;
    const float* in = job.data + c * p.in_height * p.in_width;
    float* dst = job.col + row * pixels;
    for (int64_t oh = 0; oh < p.out_height; ++oh) {
      int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
      float* d = dst + oh * p.out_width;
      if (ih < 0 || ih >= p.in_height) {
        std::fill(d, d + p.out_width, 0.0f);
        continue;
      }
      for (int64_t ow = 0; ow < p.out_width; ++ow) {
        int64_t iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
        d[ow] = (iw < 0 || iw >= p.in_width) ? 0.0f : in[ih * p.in_width + iw];
      }
    }
  }
}

}  // namespace

int Conv2D(const Conv2DParams& p, const float* data, const float* weight, float* out, const EpilogueStep* epilogue,
           int epilogue_size) {
  if (p.depthwise) return DepthwiseConv2D(p, data, weight, out, epilogue, epilogue_size);
  int64_t in_per_group = p.in_channels / p.groups, out_per_group = p.out_channels / p.groups;
  int64_t kernel_size = in_per_group * p.kernel_height * p.kernel_width;
  int64_t pixels = p.out_height * p.out_width;
  bool direct = p.kernel_height == 1 && p.kernel_width == 1 && p.stride_h == 1 && p.stride_w == 1 &&
                p.pad_top == 0 && p.pad_left == 0 && p.out_height == p.in_height && p.out_width == p.in_width;
  Workspace col(direct ? 0 : kernel_size * pixels * sizeof(float));
  if (!direct && !col.ok()) return -1;
  // The epilogue's steps with their operands moved to each group's and image's first channel.
  Workspace steps_memory(epilogue_size * sizeof(EpilogueStep));
  if (!steps_memory.ok()) return -1;
  EpilogueStep* steps = steps_memory.as<EpilogueStep>();
  for (int64_t n = 0; n < p.batch; ++n) {
    for (int64_t g = 0; g < p.groups; ++g) {
      const float* group_data = data + (n * p.in_channels + g * in_per_group) * p.in_height * p.in_width;
      const float* matrix = group_data;
      if (!direct) {
        Im2ColJob job{&p, group_data, col.as<float>()};
        ParallelFor(kernel_size, Im2ColRows, &job);
        matrix = col.as<float>();
      }
      // The epilogue's operands from this group's first channel of this image on.
      const int64_t first = n * p.out_channels + g * out_per_group;
      for (int s = 0; s < epilogue_size; ++s) {
        steps[s] = epilogue[s];
        if (steps[s].operand == EpilogueStep::kChannel) steps[s].data += g * out_per_group;
        if (steps[s].operand == EpilogueStep::kTensor) steps[s].data += first * pixels;
      }
      if (GemmWithEpilogue(out_per_group, pixels, kernel_size, weight + g * out_per_group * kernel_size, kernel_size,
                           matrix, pixels, out + first * pixels, pixels, steps, epilogue_size) != 0) {
        return -1;
      }
    }
  }
  return 0;
}

}  // namespace kiln::kernels
