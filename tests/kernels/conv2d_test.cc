// The plain NCHW convolution (conv2d.cc: im2col, or the input itself for a 1x1 layer, then a matrix
// product per image and group that applies the epilogue to each tile of its result) against the
// definition over random shapes: groups, batches, windows, strides, dilations and pads, 1x1
// layers read in place, channel counts that leave partial tiles and partial vectors of columns,
// products over more than one K block,
// with a random chain of epilogue steps (one value per channel, a tensor of the output's shape, a
// scalar); serial and on the thread pool. GemmWithEpilogue's own tiles: gemm_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "conv_test_util.h"
#include "kernel_test_util.h"

namespace kiln::kernels {
namespace {

Shape RandomPlainShape(std::mt19937& rng) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  Shape s{};
  s.groups = pick(1, 3);
  s.n = pick(1, 2);
  // Up to 128 channels per group: with a 3x3 window or larger, K passes the product's K block
  // (1024), so the epilogue must wait for the last one.
  s.c = s.groups * (pick(0, 3) == 0 ? pick(115, 128) : pick(1, 9));
  s.o = s.groups * pick(1, 21);
  if (pick(0, 2) == 0) {  // a 1x1 layer that reads its input in place
    s.kh = s.kw = s.sh = s.sw = s.dh = s.dw = 1;
  } else {
    PickWindow(rng, s);
  }
  s.h = std::max(pick(1, 15), (s.kh - 1) * s.dh + 1 - s.pt - s.pb);
  s.w = std::max(pick(1, 40), (s.kw - 1) * s.dw + 1 - s.pl - s.pr);
  return s;
}

void CheckRandomPlain(bool parallel, unsigned seed) {
  UseThreads(parallel);
  std::mt19937 rng(seed);
  for (int iteration = 0; iteration < 200; ++iteration) {
    Shape s = RandomPlainShape(rng);
    std::vector<float> x = Random(s.n * s.c * s.h * s.w, rng), w = Random(s.o * (s.c / s.groups) * s.kh * s.kw, rng);
    int64_t positions = s.oh() * s.ow(), out_size = s.n * s.o * positions;
    std::vector<float> channel = Random(s.o, rng), tensor = Random(out_size, rng);
    float scalar = 0.25f;
    std::vector<EpilogueStep> steps = RandomEpilogue(rng, channel, tensor, &scalar);
    Conv2DParams p{s.n,  s.c,  s.h,  s.w,  s.o,  s.kh, s.kw,     s.oh(), s.ow(),
                   s.sh, s.sw, s.dh, s.dw, s.pt, s.pl, s.groups, false};
    std::vector<float> out(out_size, NAN);
    ASSERT_EQ(Conv2D(p, x.data(), w.data(), out.data(), steps.data(), static_cast<int>(steps.size())), 0)
        << TVMGetLastError();
    std::vector<float> want = ReferenceConv(x, w, s);
    for (int64_t i = 0; i < out_size; ++i) want[i] = ApplySteps(steps, want[i], i / positions % s.o, i);
    ExpectNear(out, want, s.Text() + " with " + std::to_string(steps.size()) + " epilogue steps");
  }
  UseThreads(false);
}

TEST(Conv2D, MatchesTheReferenceWithItsEpilogueOnRandomShapes) { CheckRandomPlain(false, 21); }
TEST(Conv2D, MatchesTheReferenceWithItsEpilogueOnRandomShapesInParallel) { CheckRandomPlain(true, 22); }

}  // namespace
}  // namespace kiln::kernels
