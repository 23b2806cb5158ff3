// Transposed convolution (kernels.h: ConvTranspose) as a matrix product and a scatter: per image,
// one product per group turns the input [C / groups, D * H * W] into columns
// [O / groups * KD * KH * KW, D * H * W] (column (o, k) is every input pixel's contribution to
// output channel o through tap k), then each output row sums the column entries that reach it.
// Summing per output row, not per column, lets the rows be split across threads with no two
// writing one element, and keeps the row in cache while its taps add into it and the fused
// epilogue runs over it. Where a row's two column taps at stride 2 each reach every other element
// (a kernel of width 2, the detectors' upsampling), the row is the two columns interleaved, in
// vectors (a text detector's 24 -> 24 channels, 160x160 -> 320x320, one Intel Xeon core: 4.7 ->
// 3.5 ms, its epilogue, a pass of its own before, included). Where each output row comes from one
// input row (kernel height = stride, no padding: the upsampling layers again), the image goes in
// bands of input rows whose columns stay in cache between the product and the scatter (the text
// detector's 24 -> 24 layer wrote and read back 9.8 MB of columns).
#include <algorithm>

#include "kernels/backend_api.h"
#include "kernels/epilogue.h"
#include "kernels/kernels.h"

namespace kiln::kernels {
namespace {

constexpr int kLanes = kCompiledConfig.vector_floats;

// Columns of a band of input rows: the input's pixels from row first_ih on, column_pixels of them
// (D * H * W when the band is the whole image), are the columns' rows; the scatter writes the
// output rows [first_oh, first_oh + band_oh) of each (channel, depth).
struct ScatterJob {
  const ConvTransposeParams* p;
  const float* columns;  // [O * KD * KH * KW, column_pixels] of one image's band
  int64_t column_pixels, first_ih;
  float* out;            // [O, OD, OH, OW] of that image
  int64_t first_oh, band_oh;
  int64_t out_offset;    // out's place in the whole output (floats), where kTensor operands are read
  const EpilogueStep* epilogue;
  int epilogue_size;
};

// A band's columns take at most this many bytes (in L2 beside the band's input and output rows).
constexpr int64_t kMaxBandColumnBytes = 256 * 1024;

// The input index that reaches output index `o` through tap `k`, if one does:
// o = i * stride - pad + k * dilation with 0 <= i < size.
inline bool SourceOf(int64_t o, int64_t k, int64_t stride, int64_t dilation, int64_t pad, int64_t size, int64_t* i) {
  int64_t scaled = o + pad - k * dilation;
  if (scaled < 0 || scaled % stride != 0) return false;
  *i = scaled / stride;
  return *i < size;
}

// Output rows [begin, end) of (channel, depth, height in the band).
void ScatterRows(int64_t begin, int64_t end, void* context) {
  const auto& job = *static_cast<const ScatterJob*>(context);
  const ConvTransposeParams& p = *job.p;
  const int64_t plane = p.in_height * p.in_width, pixels = job.column_pixels;
  // Each output column reached by exactly one tap of a kernel of width 2 at stride 2.
  const bool interleave = p.kernel_width == 2 && p.stride_w == 2 && p.dilation_w == 1 && p.pad_left == 0 &&
                          p.out_width == 2 * p.in_width;
  for (int64_t row = begin; row < end; ++row) {
    int64_t oh = job.first_oh + row % job.band_oh, od = row / job.band_oh % p.out_depth;
    int64_t oc = row / job.band_oh / p.out_depth;
    float* dst = job.out + ((oc * p.out_depth + od) * p.out_height + oh) * p.out_width;
    std::fill(dst, dst + p.out_width, 0.0f);
    for (int64_t kd = 0; kd < p.kernel_depth; ++kd) {
      int64_t id;
      if (!SourceOf(od, kd, p.stride_d, p.dilation_d, p.pad_front, p.in_depth, &id)) continue;
      for (int64_t kh = 0; kh < p.kernel_height; ++kh) {
        int64_t ih;
        if (!SourceOf(oh, kh, p.stride_h, p.dilation_h, p.pad_top, p.in_height, &ih)) continue;
        for (int64_t kw = 0; kw < p.kernel_width; ++kw) {
          int64_t tap = (kd * p.kernel_height + kh) * p.kernel_width + kw;
          const float* src = job.columns + (oc * p.kernel_depth * p.kernel_height * p.kernel_width + tap) * pixels +
                             id * plane + (ih - job.first_ih) * p.in_width;
          if (interleave) {  // taps 0 and 1 together (tap 1's columns follow tap 0's)
            float* __restrict to = dst;
            const float* __restrict even = src;
            const float* __restrict odd = src + pixels;
            for (int64_t iw = 0; iw < p.in_width; ++iw) {
              to[2 * iw] += even[iw];
              to[2 * iw + 1] += odd[iw];
            }
            break;
          }
          // Input column iw reaches output column iw * stride_w + first, inside [0, OW) for iw in
          // [iw_begin, iw_end).
          int64_t first = kw * p.dilation_w - p.pad_left;
          int64_t iw_begin = first >= 0 ? 0 : (-first + p.stride_w - 1) / p.stride_w;
          int64_t iw_end = p.out_width - 1 - first < 0 ? 0 : std::min(p.in_width, (p.out_width - 1 - first) / p.stride_w + 1);
          if (p.stride_w == 1) {
            for (int64_t iw = iw_begin; iw < iw_end; ++iw) dst[iw + first] += src[iw];
          } else {
            for (int64_t iw = iw_begin; iw < iw_end; ++iw) dst[iw * p.stride_w + first] += src[iw];
          }
        }
      }
    }
    for (int s = 0; s < job.epilogue_size; ++s) {
      const EpilogueStep& step = job.epilogue[s];
      const float* tensor = step.operand == EpilogueStep::kTensor ? step.data + job.out_offset + (dst - job.out) : nullptr;
      ApplyStepToFloats<kLanes>(step, dst, p.out_width, tensor, StepOperand(step, oc));
    }
  }
}

}  // namespace

int ConvTranspose(const ConvTransposeParams& p, const float* data, const float* weight, float* out,
                  const EpilogueStep* epilogue, int epilogue_size) {
  bool valid = p.groups >= 1 && p.in_channels % p.groups == 0 && p.out_channels % p.groups == 0 &&
               p.stride_d >= 1 && p.stride_h >= 1 && p.stride_w >= 1 && p.dilation_d >= 1 && p.dilation_h >= 1 &&
               p.dilation_w >= 1;
  if (!valid) return Fail("ConvTranspose: channels must divide into the groups, strides and dilations be positive");
  const int64_t in_per_group = p.in_channels / p.groups, out_per_group = p.out_channels / p.groups;
  const int64_t taps = p.kernel_depth * p.kernel_height * p.kernel_width;
  const int64_t pixels = p.in_depth * p.in_height * p.in_width;
  const int64_t out_pixels = p.out_depth * p.out_height * p.out_width;
  const int64_t rows = out_per_group * taps;  // of one group's columns
  // Bands of input rows where output row oh comes from input row oh / stride_h alone.
  const bool rows_apart = p.in_depth == 1 && p.out_depth == 1 && p.kernel_height == p.stride_h && p.dilation_h == 1 &&
                          p.pad_top == 0 && p.in_height > 0 && p.out_height == p.in_height * p.stride_h;
  const int64_t row_bytes = p.out_channels * taps * p.in_width * static_cast<int64_t>(sizeof(float));
  const int64_t band_ih = rows_apart ? std::clamp<int64_t>(kMaxBandColumnBytes / row_bytes, 1, p.in_height) : p.in_height;
  const int64_t band_pixels = rows_apart ? band_ih * p.in_width : pixels;
  Workspace columns(p.out_channels * taps * band_pixels * sizeof(float));
  if (!columns.ok()) return Fail("ConvTranspose: out of workspace memory");
  for (int64_t n = 0; n < p.batch; ++n) {
    for (int64_t ih = 0;; ih += band_ih) {
      const int64_t band_rows = rows_apart ? std::min(band_ih, p.in_height - ih) : p.in_height;
      const int64_t band = rows_apart ? band_rows * p.in_width : pixels;
      // Group g: weight rows [g * C / groups, (g + 1) * C / groups) as [C / groups, rows], read
      // transposed, times the group's input [C / groups, band's pixels].
      if (BatchGemm(p.groups, rows, band, in_per_group, weight, rows, in_per_group * rows, true,
                    data + n * p.in_channels * pixels + ih * p.in_width, pixels, in_per_group * pixels, false,
                    columns.as<float>(), band, rows * band) != 0) {
        return -1;
      }
      const int64_t band_oh = rows_apart ? band_rows * p.stride_h : p.out_height;
      ScatterJob job{&p,         columns.as<float>(), band,    ih, out + n * p.out_channels * out_pixels, ih * p.stride_h,
                     band_oh,    n * p.out_channels * out_pixels, epilogue, epilogue_size};
      if (ParallelFor(p.out_channels * p.out_depth * band_oh, ScatterRows, &job) != 0) return -1;
      if (!rows_apart || ih + band_ih >= p.in_height) break;  // (without bands: the whole image at once)
    }
  }
  return 0;
}

}  // namespace kiln::kernels
