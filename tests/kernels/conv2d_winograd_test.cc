// The Winograd F(4x4, 3x3) convolution (conv2d_winograd.cc) against the convolution's definition
// in double, over random shapes: input and output blocks of 8 and 16, planes that are not
// multiples of the 4x4 tile, every padding of a 3x3 window (0 to 2 on each side), batches, fused
// epilogues; serial and on the thread pool. Winograd's transforms add rounding error that grows
// with the sum of |x| |w| under each window, so the tolerance is stated against that sum.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/conv/winograd.h"
#include "kernels/kernels.h"
#include "conv_test_util.h"
#include "kernel_test_util.h"

namespace kiln::kernels {
namespace {

// |got - want| <= kRelativeError * (sum of |x| |w| under the window) + 1e-6. Measured over these
// shapes the worst is 5e-6 of the sum, at the last position of a tile (A^T's coefficient 8; the
// direct convolution's worst is about 2e-7): F(4x4, 3x3)'s known error in float32. A wrong
// transform coefficient, a misplaced tile or a lost window row is off by a sizeable part of the sum.
constexpr double kRelativeError = 2e-5;

std::vector<float> Abs(std::vector<float> v) {
  for (float& x : v) x = std::abs(x);
  return v;
}

Shape RandomShape(std::mt19937& rng) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  Shape s{};
  s.n = pick(1, 2);
  s.ib = pick(0, 1) ? 16 : 8;
  s.ob = pick(0, 1) ? 16 : 8;
  s.c = s.ib * pick(1, 4);
  s.o = s.ob * pick(1, 5);
  s.kh = s.kw = 3;
  s.sh = s.sw = s.dh = s.dw = 1;
  s.pt = pick(0, 2);
  s.pl = pick(0, 2);
  s.pb = pick(0, 2);
  s.pr = pick(0, 2);
  s.h = std::max(pick(1, 19), 3 - s.pt - s.pb);
  s.w = std::max(pick(1, 23), 3 - s.pl - s.pr);
  return s;
}

Conv2DWinogradParams Params(const Shape& s) {
  return {s.n, s.c, s.h, s.w, s.ib, s.o, s.ob, s.oh(), s.ow(), s.pt, s.pl};
}

std::vector<float> Winograd(const Shape& s, const std::vector<float>& x, const std::vector<float>& w,
                            const std::vector<EpilogueStep>& steps = {}) {
  std::vector<float> weight(36 * s.o * s.c), out(s.n * s.o * s.oh() * s.ow(), NAN);
  WinogradWeight(s.o, s.c, s.ib, s.ob, w.data(), weight.data());
  EXPECT_EQ(Conv2DWinograd(Params(s), Block(x, s.n, s.c, s.h * s.w, s.ib).data(), weight.data(), out.data(),
                           steps.data(), static_cast<int>(steps.size()), Conv2DNCHWcAnyVariant),
            0)
      << TVMGetLastError();
  return out;
}

void ExpectWithinWinogradError(const std::vector<float>& got, const std::vector<float>& want,
                               const std::vector<float>& scale, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], kRelativeError * scale[i] + 1e-6) << what << " at " << i;
  }
}

void CheckRandomShapes(bool parallel, unsigned seed) {
  UseThreads(parallel);
  std::mt19937 rng(seed);
  for (int iteration = 0; iteration < 120; ++iteration) {
    Shape s = RandomShape(rng);
    std::vector<float> x = Random(s.n * s.c * s.h * s.w, rng), w = Random(s.o * s.c * 9, rng);
    std::vector<float> got = Unblock(Winograd(s, x, w), s.n, s.o, s.oh() * s.ow(), s.ob);
    ExpectWithinWinogradError(got, ReferenceConv(x, w, s), ReferenceConv(Abs(x), Abs(w), s), s.Text());
  }
  UseThreads(false);
}

TEST(Conv2DWinograd, MatchesTheDefinitionOnRandomShapes) { CheckRandomShapes(false, 11); }
TEST(Conv2DWinograd, MatchesTheDefinitionOnRandomShapesInParallel) { CheckRandomShapes(true, 12); }

// A ResNet layer's size (256 channels on 14x14): the sums of many channels, the error bound held.
TEST(Conv2DWinograd, ResNetLayer) {
  UseThreads(true);
  std::mt19937 rng(13);
  Shape s{1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16, 16, false};
  std::vector<float> x = Random(s.c * s.h * s.w, rng), w = Random(s.o * s.c * 9, rng);
  std::vector<float> got = Unblock(Winograd(s, x, w), 1, s.o, s.oh() * s.ow(), 16);
  ExpectWithinWinogradError(got, ReferenceConv(x, w, s), ReferenceConv(Abs(x), Abs(w), s), s.Text());
  UseThreads(false);
}

// The epilogue runs over each output row once, in order, with its operands at the right channel
// and position (both block widths, a batch of two, a plane not a multiple of the tile).
TEST(Conv2DWinograd, EpilogueStepsApplyInOrder) {
  std::mt19937 rng(14);
  for (int64_t block : {8, 16}) {
    Shape s{2, 2 * block, 10, 13, 3 * block, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, block, block, false};
    std::vector<float> x = Random(s.n * s.c * s.h * s.w, rng), w = Random(s.o * s.c * 9, rng);
    int64_t positions = s.oh() * s.ow(), out_size = s.n * s.o * positions;
    std::vector<float> bias = Random(s.o, rng), residual = Random(out_size, rng);
    float scalar = 0.25f;
    std::vector<EpilogueStep> steps = {
        {EpilogueStep::kAdd, EpilogueStep::kChannel, bias.data(), 0, 0},
        {EpilogueStep::kSubtract, EpilogueStep::kScalar, &scalar, 0, 0},
        {EpilogueStep::kAdd, EpilogueStep::kTensor, residual.data(), 0, 0},
        {EpilogueStep::kRelu, EpilogueStep::kNone, nullptr, 0, 0},
    };
    std::vector<float> got = Winograd(s, x, w, steps);
    std::vector<float> want = Block(ReferenceConv(x, w, s), s.n, s.o, positions, block);
    std::vector<float> scale = Block(ReferenceConv(Abs(x), Abs(w), s), s.n, s.o, positions, block);
    for (int64_t i = 0; i < out_size; ++i) {
      int64_t channel = (i / (positions * block)) % (s.o / block) * block + i % block;
      want[i] = ApplySteps(steps, want[i], channel, i);
    }
    ExpectWithinWinogradError(got, want, scale, "epilogue, block " + std::to_string(block));
  }
}

// A plane large enough to be taken in strips of rows of tiles (a text detector's 96 -> 24 channels:
// strips of 5 of its 16 rows of tiles, the last of one), in a batch of two, with the epilogue
// (its operands read at each strip's rows of each image).
TEST(Conv2DWinograd, ImagesInStripsOfTileRows) {
  UseThreads(true);
  std::mt19937 rng(15);
  Shape s{2, 96, 62, 43, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16, 8, false};
  std::vector<float> x = Random(s.n * s.c * s.h * s.w, rng), w = Random(s.o * s.c * 9, rng);
  int64_t positions = s.oh() * s.ow(), out_size = s.n * s.o * positions;
  std::vector<float> bias = Random(s.o, rng), residual = Random(out_size, rng);
  std::vector<EpilogueStep> steps = {{EpilogueStep::kAdd, EpilogueStep::kChannel, bias.data(), 0, 0},
                                     {EpilogueStep::kAdd, EpilogueStep::kTensor, residual.data(), 0, 0},
                                     {EpilogueStep::kRelu, EpilogueStep::kNone, nullptr, 0, 0}};
  std::vector<float> got = Winograd(s, x, w, steps);
  std::vector<float> want = Block(ReferenceConv(x, w, s), s.n, s.o, positions, 8);
  std::vector<float> scale = Block(ReferenceConv(Abs(x), Abs(w), s), s.n, s.o, positions, 8);
  for (int64_t i = 0; i < out_size; ++i) {
    int64_t channel = (i / (positions * 8)) % (s.o / 8) * 8 + i % 8;
    want[i] = ApplySteps(steps, want[i], channel, i);
  }
  ExpectWithinWinogradError(got, want, scale, s.Text() + " with its epilogue");
  UseThreads(false);
}

TEST(Conv2DWinograd, UnsupportedShapesAreErrors) {
  std::vector<float> buffer(4096);
  Conv2DWinogradParams p{1, 12, 4, 4, 4, 16, 16, 4, 4, 1, 1};  // input block 4
  EXPECT_EQ(Conv2DWinograd(p, buffer.data(), buffer.data(), buffer.data(), nullptr, 0, Conv2DNCHWcAnyVariant), -1);
  EXPECT_THAT(TVMGetLastError(), ::testing::HasSubstr("blocks of 8 or 16"));
  p = {1, 16, 4, 4, 16, 16, 16, 4, 4, -1, 1};
  EXPECT_EQ(Conv2DWinograd(p, buffer.data(), buffer.data(), buffer.data(), nullptr, 0, Conv2DNCHWcAnyVariant), -1);
  EXPECT_THAT(TVMGetLastError(), ::testing::HasSubstr("padding not negative"));
}

}  // namespace
}  // namespace kiln::kernels
