// The transposed convolution kernel (conv_transpose.cc) against its definition, written here as a
// scatter of each input element through each tap (the kernel gathers per output row), over random
// 1-D, 2-D and 3-D shapes: strides, dilations, pads, output padding, groups, odd sizes, taps that
// reach outside the output; serial and on the thread pool.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernel_test_util.h"

namespace kiln::kernels {
namespace {

// The output extent of one axis: the input's, stretched by the stride, plus the kernel's reach,
// less the pads, plus the output padding.
int64_t OutExtent(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pad_begin, int64_t pad_end, int64_t extra) {
  return (in - 1) * s + (k - 1) * d + 1 - pad_begin - pad_end + extra;
}

std::string Text(const ConvTransposeParams& p) {
  auto s = [](int64_t v) { return std::to_string(v); };
  return "n" + s(p.batch) + " c" + s(p.in_channels) + " o" + s(p.out_channels) + " g" + s(p.groups) + " in " +
         s(p.in_depth) + "x" + s(p.in_height) + "x" + s(p.in_width) + " out " + s(p.out_depth) + "x" +
         s(p.out_height) + "x" + s(p.out_width) + " k " + s(p.kernel_depth) + "x" + s(p.kernel_height) + "x" +
         s(p.kernel_width) + " s " + s(p.stride_d) + "," + s(p.stride_h) + "," + s(p.stride_w) + " d " +
         s(p.dilation_d) + "," + s(p.dilation_h) + "," + s(p.dilation_w) + " pad " + s(p.pad_front) + "," +
         s(p.pad_top) + "," + s(p.pad_left);
}

// Each input element times each weight, added at the output element it reaches, in double.
std::vector<float> Reference(const ConvTransposeParams& p, const std::vector<float>& x, const std::vector<float>& w) {
  int64_t in_per_group = p.in_channels / p.groups, out_per_group = p.out_channels / p.groups;
  std::vector<double> out(p.batch * p.out_channels * p.out_depth * p.out_height * p.out_width, 0.0);
  for (int64_t n = 0; n < p.batch; ++n)
    for (int64_t c = 0; c < p.in_channels; ++c)
      for (int64_t id = 0; id < p.in_depth; ++id)
        for (int64_t ih = 0; ih < p.in_height; ++ih)
          for (int64_t iw = 0; iw < p.in_width; ++iw) {
            double v = x[(((n * p.in_channels + c) * p.in_depth + id) * p.in_height + ih) * p.in_width + iw];
            for (int64_t m = 0; m < out_per_group; ++m)
              for (int64_t kd = 0; kd < p.kernel_depth; ++kd)
                for (int64_t kh = 0; kh < p.kernel_height; ++kh)
                  for (int64_t kw = 0; kw < p.kernel_width; ++kw) {
                    int64_t od = id * p.stride_d - p.pad_front + kd * p.dilation_d;
                    int64_t oh = ih * p.stride_h - p.pad_top + kh * p.dilation_h;
                    int64_t ow = iw * p.stride_w - p.pad_left + kw * p.dilation_w;
                    if (od < 0 || od >= p.out_depth || oh < 0 || oh >= p.out_height || ow < 0 || ow >= p.out_width) {
                      continue;
                    }
                    int64_t o = c / in_per_group * out_per_group + m;
                    double wv = w[(((c * out_per_group + m) * p.kernel_depth + kd) * p.kernel_height + kh) *
                                      p.kernel_width + kw];
                    out[(((n * p.out_channels + o) * p.out_depth + od) * p.out_height + oh) * p.out_width + ow] += v * wv;
                  }
          }
  return std::vector<float>(out.begin(), out.end());
}

ConvTransposeParams RandomParams(std::mt19937& rng, int spatial) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  ConvTransposeParams p{};
  p.batch = pick(1, 2);
  p.groups = pick(0, 2) == 0 ? pick(2, 3) : 1;
  p.in_channels = p.groups * pick(1, 5);
  p.out_channels = p.groups * pick(1, 5);
  int64_t* in[] = {&p.in_depth, &p.in_height, &p.in_width};
  int64_t* out[] = {&p.out_depth, &p.out_height, &p.out_width};
  int64_t* kernel[] = {&p.kernel_depth, &p.kernel_height, &p.kernel_width};
  int64_t* stride[] = {&p.stride_d, &p.stride_h, &p.stride_w};
  int64_t* dilation[] = {&p.dilation_d, &p.dilation_h, &p.dilation_w};
  int64_t* pad[] = {&p.pad_front, &p.pad_top, &p.pad_left};
  for (int a = 0; a < 3; ++a) {
    *in[a] = *out[a] = *kernel[a] = *stride[a] = *dilation[a] = 1;
    *pad[a] = 0;
    if (a < 3 - spatial) continue;  // the leading axes of 1-D and 2-D data have extent 1
    *in[a] = pick(1, spatial == 3 ? 5 : 13);
    *kernel[a] = pick(1, 4);
    *stride[a] = pick(1, 3);
    *dilation[a] = pick(0, 3) == 0 ? 2 : 1;
    int64_t reach = (*kernel[a] - 1) * *dilation[a];
    *pad[a] = pick(0, reach);
    int64_t pad_end = pick(0, reach), extra = pick(0, *stride[a] - 1);
    *out[a] = OutExtent(*in[a], *kernel[a], *stride[a], *dilation[a], *pad[a], pad_end, extra);
    if (*out[a] < 1) *out[a] = 1;  // pads that take all: keep one element
  }
  return p;
}

// With `epilogue`: a bias and a scale per output channel, a residual of the output's shape, then
// relu, applied to each output row by the kernel and here to the definition's result.
void ExpectMatches(const ConvTransposeParams& p, std::mt19937& rng, bool epilogue = false) {
  int64_t in_size = p.batch * p.in_channels * p.in_depth * p.in_height * p.in_width;
  int64_t w_size = p.in_channels * (p.out_channels / p.groups) * p.kernel_depth * p.kernel_height * p.kernel_width;
  std::vector<float> x = Random(in_size, rng), w = Random(w_size, rng);
  std::vector<float> want = Reference(p, x, w);
  std::vector<float> bias = Random(p.out_channels, rng), scale = Random(p.out_channels, rng);
  std::vector<float> residual = Random(want.size(), rng);
  std::vector<EpilogueStep> steps;
  if (epilogue) {
    steps = {{EpilogueStep::kAdd, EpilogueStep::kChannel, bias.data(), 0, 0},
             {EpilogueStep::kMultiply, EpilogueStep::kChannel, scale.data(), 0, 0},
             {EpilogueStep::kAdd, EpilogueStep::kTensor, residual.data(), 0, 0},
             {EpilogueStep::kRelu, EpilogueStep::kNone, nullptr, 0, 0}};
    const int64_t out_pixels = p.out_depth * p.out_height * p.out_width;
    for (size_t i = 0; i < want.size(); ++i) {
      int64_t channel = static_cast<int64_t>(i) / out_pixels % p.out_channels;
      want[i] = std::max(0.0f, (want[i] + bias[channel]) * scale[channel] + residual[i]);
    }
  }
  std::vector<float> got(want.size(), std::nanf(""));
  ASSERT_EQ(ConvTranspose(p, x.data(), w.data(), got.data(), steps.data(), static_cast<int>(steps.size())), 0)
      << Text(p);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-4f * std::max(1.0f, std::abs(want[i])))
        << Text(p) << (epilogue ? " with its epilogue" : "") << " at " << i;
  }
}

TEST(ConvTranspose, MatchesTheDefinitionInOneTwoAndThreeDimensions) {
  std::mt19937 rng(29);
  for (bool parallel : {false, true}) {
    UseThreads(parallel);
    for (int spatial : {1, 2, 3}) {
      for (int i = 0; i < 40; ++i) ExpectMatches(RandomParams(rng, spatial), rng, i % 2 == 1);
    }
  }
  UseThreads(true);
}

// The detector heads' upsampling layers: kernel 2 or 4 at stride 2 (2: rows of two interleaved
// taps), and a 3x3 at stride 2 with pad 1 and output padding 1, with channel counts that fill and
// miss vector widths; with and without an epilogue, in a batch of two (the residual read at each
// image's place).
TEST(ConvTranspose, UpsamplingLayers) {
  std::mt19937 rng(30);
  for (auto [c, o, k, pad, extra] : {std::array<int64_t, 5>{24, 24, 2, 0, 0}, {24, 1, 2, 0, 0}, {16, 8, 4, 1, 0},
                                     {7, 5, 3, 1, 1}}) {
    ConvTransposeParams p{2, c, o, 1, 1, 9, 11, 1, 0, 0, 1, k, k, 1, 2, 2, 1, 1, 1, 0, pad, pad};
    p.out_height = OutExtent(9, k, 2, 1, pad, pad, extra);
    p.out_width = OutExtent(11, k, 2, 1, pad, pad, extra);
    ExpectMatches(p, rng);
    ExpectMatches(p, rng, true);
  }
}

// Upsampling layers whose columns do not fit one band (a kernel as tall as its stride, no dilation
// or padding: the image goes in bands of input rows, kMaxBandColumnBytes of columns each), in rows
// that leave a last band shorter than the others, in a batch of two (each image's bands at its
// place) and in two groups, with and without an epilogue; and a dilated kernel of the same
// extents, whose output rows each take two input rows (no bands).
TEST(ConvTranspose, UpsamplingInBandsOfRows) {
  std::mt19937 rng(31);
  for (auto [batch, c, o, groups, k, height, dilation] :
       {std::array<int64_t, 7>{1, 24, 24, 1, 2, 47, 1}, {2, 16, 8, 1, 2, 33, 1}, {1, 16, 8, 2, 2, 33, 1},
        {1, 8, 4, 1, 3, 29, 1}, {1, 24, 24, 1, 2, 47, 2}}) {
    ConvTransposeParams p{batch, c, o, groups, 1, height, 100, 1, height * k, 100 * k, 1,
                          k,     k, 1, k,      k, 1,      dilation, 1, 0, 0, 0};
    ExpectMatches(p, rng);
    ExpectMatches(p, rng, true);
  }
}

TEST(ConvTranspose, RefusesChannelsThatDoNotDivideIntoTheGroups) {
  ConvTransposeParams p{1, 3, 4, 2, 1, 2, 2, 1, 3, 3, 1, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0};
  std::vector<float> x(12), w(12), out(36);
  EXPECT_NE(ConvTranspose(p, x.data(), w.data(), out.data(), nullptr, 0), 0);
}

}  // namespace
}  // namespace kiln::kernels
