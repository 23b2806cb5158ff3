// The depthwise NCHW kernel (depthwise_conv2d.cc) against the definition over random shapes: any
// channel count and channel multiplier, kernels up to 5x5, strides up to 3 (short rows read in
// place, the phase split of the copy), dilations, pads on every side, rows
// narrower and wider than the vector tiles, the input between NaN guards, with a random chain of
// epilogue steps; serial and on the thread pool. Compiled for each instruction set, like the other
// kernel tests (the masked loads and the even lanes of the in-place reads, at stride 2 the
// shuffles that split rows into phases).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "conv_test_util.h"
#include "kernel_test_util.h"

namespace kiln::kernels {
namespace {

// Any window (PickWindow), or 3x3 windows at dilation 1 and the same stride (1 or 2) both ways
// over rows of at most two vectors of the widest instruction set: the sliding tiles' case, with
// output heights over several of their tiles and every remainder.
Shape RandomDepthwiseShape(std::mt19937& rng, bool sliding_3x3) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  Shape s{};
  s.depthwise = true;
  s.n = pick(1, 2);
  s.c = pick(1, 13);
  s.o = s.c * pick(1, 3);
  PickWindow(rng, s);
  if (sliding_3x3) {
    s.kh = s.kw = 3;
    s.dh = s.dw = 1;
    s.sh = s.sw = pick(1, 2);
    s.h = std::max(pick(1, 40), 3 - s.pt - s.pb);
    s.w = std::max(pick(1, 32 * s.sw), 3 - s.pl - s.pr);
    return s;
  }
  s.h = std::max(pick(1, 19), (s.kh - 1) * s.dh + 1 - s.pt - s.pb);
  s.w = std::max(pick(1, 75), (s.kw - 1) * s.dw + 1 - s.pl - s.pr);
  return s;
}

void CheckRandomDepthwise(bool parallel, unsigned seed, bool sliding_3x3 = false) {
  UseThreads(parallel);
  std::mt19937 rng(seed);
  for (int iteration = 0; iteration < 300; ++iteration) {
    Shape s = RandomDepthwiseShape(rng, sliding_3x3);
    // The input between guards of NaN: a lane read outside it (a mask off by one) poisons a sum.
    const int64_t guard = 64, input_size = s.n * s.c * s.h * s.w;
    std::vector<float> guarded(input_size + 2 * guard, NAN), w = Random(s.o * s.kh * s.kw, rng);
    std::vector<float> x = Random(input_size, rng);
    std::copy(x.begin(), x.end(), guarded.begin() + guard);
    int64_t positions = s.oh() * s.ow(), out_size = s.n * s.o * positions;
    std::vector<float> channel = Random(s.o, rng), tensor = Random(out_size, rng);
    float scalar = 0.25f;
    std::vector<EpilogueStep> steps = RandomEpilogue(rng, channel, tensor, &scalar);
    Conv2DParams p{s.n, s.c, s.h, s.w, s.o, s.kh, s.kw, s.oh(), s.ow(), s.sh, s.sw, s.dh, s.dw, s.pt, s.pl, s.c, true};
    std::vector<float> out(out_size, NAN);
    ASSERT_EQ(DepthwiseConv2D(p, guarded.data() + guard, w.data(), out.data(), steps.data(),
                              static_cast<int>(steps.size())),
              0)
        << TVMGetLastError();
    std::vector<float> want = ReferenceConv(x, w, s);
    for (int64_t i = 0; i < out_size; ++i) {
      for (const EpilogueStep& step : steps) {
        float operand = step.operand == EpilogueStep::kChannel  ? step.data[i / positions % s.o]
                        : step.operand == EpilogueStep::kScalar ? step.data[0]
                        : step.operand == EpilogueStep::kTensor ? step.data[i]
                                                                : 0.0f;
        want[i] = ApplyStep(step, want[i], operand);
      }
    }
    ExpectNear(out, want, s.Text() + " with " + std::to_string(steps.size()) + " epilogue steps");
  }
  UseThreads(false);
}

TEST(DepthwiseConv2D, MatchesTheReferenceOnRandomShapes) { CheckRandomDepthwise(false, 11); }
TEST(DepthwiseConv2D, MatchesTheReferenceOnRandomShapesInParallel) { CheckRandomDepthwise(true, 12); }
TEST(DepthwiseConv2D, ThreeByThreeWindowsOverShortRowsMatchTheReference) { CheckRandomDepthwise(false, 13, true); }

TEST(DepthwiseConv2D, RejectsAConvolutionThatIsNotDepthwise) {
  Conv2DParams p{1, 4, 5, 5, 4, 3, 3, 3, 3, 1, 1, 1, 1, 0, 0, 2, true};
  std::vector<float> x(100), w(36), out(36);
  EXPECT_NE(DepthwiseConv2D(p, x.data(), w.data(), out.data(), nullptr, 0), 0);
  EXPECT_NE(std::string(TVMGetLastError()).find("one group per input channel"), std::string::npos);
}

// The kernel tries a workspace before its loop, so that running out is an error; a thread whose
// own workspace fails after that (another thread's took the memory) makes it an error too, not an
// output left unwritten. (At stride 3 the input is copied on every instruction set.)
TEST(DepthwiseConv2D, AWorkspaceRefusedInTheLoopIsAnError) {
  UseThreads(false);
  Conv2DParams p{1, 4, 9, 9, 4, 3, 3, 3, 3, 3, 3, 1, 1, 1, 1, 4, true};
  std::vector<float> x(4 * 81, 1.0f), w(36, 1.0f), out(4 * 9);
  for (int grant : {0, 1}) {
    workspace_grants = grant;  // 0: the try fails; 1: the try gets it, the loop's does not
    __TVMBackendAllocWorkspace = RationedWorkspace;
    int status = DepthwiseConv2D(p, x.data(), w.data(), out.data(), nullptr, 0);
    __TVMBackendAllocWorkspace = TVMBackendAllocWorkspace;
    EXPECT_NE(status, 0) << "with " << grant << " workspace granted";
    EXPECT_NE(std::string(TVMGetLastError()).find("out of workspace memory"), std::string::npos);
  }
  ASSERT_EQ(DepthwiseConv2D(p, x.data(), w.data(), out.data(), nullptr, 0), 0);  // enough memory again
  EXPECT_EQ(out[4], 9.0f);  // output (1, 1) of channel 0, input rows and columns 2-4: nine taps of 1 x 1
}

}  // namespace
}  // namespace kiln::kernels
