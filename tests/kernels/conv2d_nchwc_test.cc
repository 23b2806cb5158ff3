// The blocked-layout kernels (conv2d_nchwc.cc, pool_nchwc.cc) against a naive reference in this
// file and against the NCHW kernels, over random shapes: input and output blocks, strides,
// padding, dilation, groups (depthwise, groups of 2 or 4 channels, and groups of whole blocks), odd widths, fused epilogues, every way of reading the input
// (padded copy, strided gather, flat planes), through the variant of the kernel that each shape
// needs (Conv2DNCHWcAnyVariant); serial and on the thread pool. Compiled for each instruction set
// with a path of its own (tests/CMakeLists.txt).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "conv_test_util.h"
#include "kernel_test_util.h"

namespace kiln::kernels {
namespace {

// OIHW [O, I, KH, KW] -> [O / ob, I / ib, KH, KW, ib, ob] with I = C / groups (block-local: ib = 1).
std::vector<float> PackWeights(const std::vector<float>& w, const Shape& s) {
  int64_t in = s.c / s.Groups(), ib = s.depthwise ? 1 : s.ib, taps = s.kh * s.kw;
  std::vector<float> packed(w.size());
  for (int64_t o = 0; o < s.o; ++o)
    for (int64_t i = 0; i < in; ++i)
      for (int64_t t = 0; t < taps; ++t) {
        int64_t dst = (((o / s.ob) * (in / ib) + i / ib) * taps + t) * ib * s.ob + (i % ib) * s.ob + o % s.ob;
        packed[dst] = w[(o * in + i) * taps + t];
      }
  return packed;
}

// What the input modes of Conv2DNCHWcParams may be for `s` (kernels.h).
struct InputModes {
  bool padded, one_by_one, strided;
  bool CanGather() const { return one_by_one && !padded && strided; }
  bool CanFlatten(bool copy_padded, bool gather_strided) const {
    return one_by_one && (!strided || gather_strided) && (!padded || copy_padded);
  }
};

InputModes ModesOf(const Shape& s) {
  int64_t height = (s.oh() - 1) * s.sh + (s.kh - 1) * s.dh + 1, width = (s.ow() - 1) * s.sw + (s.kw - 1) * s.dw + 1;
  return {s.pt > 0 || s.pl > 0 || s.h + s.pt < height || s.w + s.pl < width, s.kh == 1 && s.kw == 1,
          s.sh > 1 || s.sw > 1};
}

// The parameters with the input modes the compiler would choose (strategy/conv2d.cc).
Conv2DNCHWcParams Params(const Shape& s) {
  InputModes m = ModesOf(s);
  bool copy_padded = !s.depthwise && m.padded, gather_strided = !s.depthwise && m.CanGather();
  bool flat_plane = m.CanFlatten(copy_padded, gather_strided) && s.oh() * s.ow() <= 256;
  return {s.n,  s.c,  s.h,  s.w,  s.depthwise ? s.ob : s.ib, s.o, s.ob, s.kh, s.kw, s.oh(), s.ow(), s.sh, s.sw,
          s.dh, s.dw, s.pt, s.pl, s.Groups(), s.depthwise, copy_padded, gather_strided, flat_plane};
}

// Any input modes the kernel takes for `s`, at random: each way of reading the input computes
// the same convolution.
Conv2DNCHWcParams RandomModes(const Shape& s, std::mt19937& rng) {
  auto coin = [&] { return std::uniform_int_distribution<int>(0, 1)(rng) == 1; };
  InputModes m = ModesOf(s);
  Conv2DNCHWcParams p = Params(s);
  p.gather_strided = !s.depthwise && m.CanGather() && coin();
  p.copy_padded = !s.depthwise && !p.gather_strided && (m.padded || coin());
  p.flat_plane = m.CanFlatten(p.copy_padded, p.gather_strided) && coin();
  return p;
}

// `out_block` 8 or 16, or 0: either at random.
Shape RandomShape(std::mt19937& rng, bool depthwise, int64_t out_block = 0) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  Shape s{};
  s.depthwise = depthwise;
  s.n = pick(1, 2);
  s.ob = out_block != 0 ? out_block : pick(0, 1) ? 16 : 8;
  const int64_t in_blocks[] = {1, 3, 4, 8, 16};
  s.ib = depthwise ? s.ob : in_blocks[pick(0, 4)];
  s.groups = depthwise || pick(0, 2) == 0 ? 1 : pick(2, 4);  // a third grouped
  s.c = depthwise ? s.ob * pick(1, 3) : s.ib * s.groups * pick(1, s.groups > 1 ? 2 : 4);
  // Block-local: half depthwise, half groups of 2 or 4 channels.
  if (depthwise && pick(0, 1) == 1) s.groups = s.c / (pick(0, 1) == 1 ? 4 : 2);
  // Up to five output blocks per group: tiles of three 8-channel blocks (of two 16-lane vectors with
  // AVX-512), and the blocks left.
  s.o = depthwise ? s.c : s.ob * s.groups * pick(1, s.groups > 1 ? 4 : 5);
  PickWindow(rng, s);
  s.h = pick(1, 19);
  s.w = pick(1, 41);
  // Keep the window inside the padded input.
  s.h = std::max(s.h, (s.kh - 1) * s.dh + 1 - s.pt - s.pb);
  s.w = std::max(s.w, (s.kw - 1) * s.dw + 1 - s.pl - s.pr);
  return s;
}

// The epilogue of iteration `i`, cycling through none, the forms applied in registers (a bias per
// channel, a residual, then relu or clip, each optional) and chains that are not of that form.
std::vector<EpilogueStep> EpilogueOfIteration(int i, const std::vector<float>& bias, const std::vector<float>& residual) {
  using S = EpilogueStep;
  switch (i % 10) {
    case 7: return {{S::kAdd, S::kTensor, residual.data(), 0, 0}};
    case 8: return {{S::kAdd, S::kChannel, bias.data(), 0, 0}, {S::kRelu, S::kNone, nullptr, 0, 0},
                    {S::kAdd, S::kTensor, residual.data(), 0, 0}};
    case 9: return {{S::kMultiply, S::kChannel, bias.data(), 0, 0}, {S::kClip, S::kNone, nullptr, -0.5f, 0.5f}};
    case 1: return {{S::kAdd, S::kChannel, bias.data(), 0, 0}};
    case 2: return {{S::kAdd, S::kChannel, bias.data(), 0, 0}, {S::kRelu, S::kNone, nullptr, 0, 0}};
    case 3: return {{S::kAdd, S::kChannel, bias.data(), 0, 0}, {S::kClip, S::kNone, nullptr, -0.25f, 0.5f}};
    case 4: return {{S::kRelu, S::kNone, nullptr, 0, 0}};
    case 5: return {{S::kClip, S::kNone, nullptr, 0.0f, 6.0f}};
    case 6: return {{S::kAdd, S::kChannel, bias.data(), 0, 0}, {S::kAdd, S::kTensor, residual.data(), 0, 0},
                    {S::kRelu, S::kNone, nullptr, 0, 0}};
    default: return {};
  }
}

// The variant computing 8-channel output blocks two to a 16-lane vector (kernels.h) that fits `p`:
// its input block and stride compiled in where it has them. Every instruction set computes it (two
// AVX2 vectors, or the portable form, hold the 16 lanes); the compiler chooses it with AVX-512.
Conv2DNCHWcKernel PairedVariant(const Conv2DNCHWcParams& p) {
  int64_t stride = p.gather_strided ? 1 : p.stride_w;
  if (stride == 1 && p.in_block == 8) return &Conv2DNCHWc<8, 0, 8, 1, 16>;
  if (stride == 1 && p.in_block == 16) return &Conv2DNCHWc<8, 0, 16, 1, 16>;
  if (stride == 2 && p.in_block == 1) return &Conv2DNCHWc<8, 0, 1, 2, 16>;
  return &Conv2DNCHWc<8, 0, 0, 1, 16>;
}

// Random convolutions against the reference: through the variant the compiler would choose, or
// (`paired`) of 8-channel output blocks through the paired variant.
void CheckRandomConvolutions(bool depthwise, bool parallel, unsigned seed, bool paired = false) {
  UseThreads(parallel);
  std::mt19937 rng(seed);
  for (int iteration = 0; iteration < 200; ++iteration) {
    Shape s = RandomShape(rng, depthwise, paired ? 8 : 0);
    std::vector<float> x = Random(s.n * s.c * s.h * s.w, rng);
    std::vector<float> w = Random(s.o * (s.c / s.Groups()) * s.kh * s.kw, rng);
    int64_t ib = depthwise ? s.ob : s.ib, positions = s.oh() * s.ow(), out_size = s.n * s.o * positions;
    std::vector<float> bias = Random(s.o, rng), residual = Random(out_size, rng);  // residual: NCHW
    std::vector<float> blocked_residual = Block(residual, s.n, s.o, positions, s.ob);
    std::vector<EpilogueStep> steps = EpilogueOfIteration(iteration, bias, blocked_residual);
    // Past the output, one block of floats that must stay as they are (a block written past the
    // last one).
    const int64_t guard = positions * s.ob;
    constexpr float kUntouched = 12345.0f;
    std::vector<float> out(out_size + guard, NAN);
    std::fill(out.begin() + out_size, out.end(), kUntouched);
    // Every epilogue form with the compiler's input modes and with random ones.
    Conv2DNCHWcParams p = iteration / 10 % 2 == 0 ? Params(s) : RandomModes(s, rng);
    Conv2DNCHWcKernel kernel = paired ? PairedVariant(p) : &Conv2DNCHWcAnyVariant;
    ASSERT_EQ(kernel(p, Block(x, s.n, s.c, s.h * s.w, ib).data(), PackWeights(w, s).data(), out.data(), steps.data(),
                     static_cast<int>(steps.size())),
              0)
        << TVMGetLastError();
    ASSERT_TRUE(std::all_of(out.begin() + out_size, out.end(), [](float v) { return v == kUntouched; }))
        << s.Text() << ": written past the output";
    out.resize(out_size);
    std::vector<float> conv = ReferenceConv(x, w, s), want = conv;
    std::vector<EpilogueStep> nchw_steps = EpilogueOfIteration(iteration, bias, residual);
    for (int64_t i = 0; i < out_size; ++i) want[i] = ApplySteps(nchw_steps, want[i], i / positions % s.o, i);
    std::string modes = std::string(p.copy_padded ? " copy_padded" : "") + (p.gather_strided ? " gather_strided" : "") +
                        (p.flat_plane ? " flat_plane" : "") + " epilogue of " + std::to_string(steps.size()) + " steps";
    ExpectNear(Unblock(out, s.n, s.o, positions, s.ob), want, s.Text() + modes);
    // The NCHW kernel agrees too (without an epilogue).
    Conv2DParams nchw{s.n, s.c, s.h, s.w, s.o, s.kh, s.kw, s.oh(), s.ow(), s.sh, s.sw, s.dh, s.dw, s.pt, s.pl,
                      s.Groups(), s.Groups() == s.c && iteration % 2 == 0};  // depthwise: by channel or by GEMM
    std::vector<float> old(out_size);
    ASSERT_EQ(Conv2D(nchw, x.data(), w.data(), old.data(), nullptr, 0), 0);
    ExpectNear(old, conv, s.Text() + " (NCHW kernel)");
  }
  UseThreads(false);
}

TEST(Conv2DNCHWc, MatchesTheReferenceOnRandomShapes) { CheckRandomConvolutions(false, false, 1); }
TEST(Conv2DNCHWc, MatchesTheReferenceOnRandomShapesInParallel) { CheckRandomConvolutions(false, true, 2); }
TEST(Conv2DNCHWc, DepthwiseMatchesTheReference) { CheckRandomConvolutions(true, false, 3); }
TEST(Conv2DNCHWc, DepthwiseMatchesTheReferenceInParallel) { CheckRandomConvolutions(true, true, 4); }
// Odd numbers of output blocks per group included: a tile's last vector then holds one block.
TEST(Conv2DNCHWc, PairedEightChannelBlocksMatchTheReference) { CheckRandomConvolutions(false, false, 12, true); }
TEST(Conv2DNCHWc, PairedEightChannelBlocksMatchTheReferenceInParallel) { CheckRandomConvolutions(false, true, 13, true); }

// A convolution of one image with a bias, a residual and relu, by
// `kernel`, against the reference.
void ExpectBiasResidualRelu(const Shape& s, Conv2DNCHWcKernel kernel, std::mt19937& rng) {
  std::vector<float> x = Random(s.c * s.h * s.w, rng), w = Random(s.o * s.c * s.kh * s.kw, rng), bias = Random(s.o, rng);
  int64_t positions = s.oh() * s.ow(), out_size = s.o * positions;
  std::vector<float> residual = Random(out_size, rng);
  std::vector<EpilogueStep> steps = {{EpilogueStep::kAdd, EpilogueStep::kChannel, bias.data(), 0, 0},
                                     {EpilogueStep::kAdd, EpilogueStep::kTensor, residual.data(), 0, 0},
                                     {EpilogueStep::kRelu, EpilogueStep::kNone, nullptr, 0, 0}};
  std::vector<float> out(out_size, NAN);
  ASSERT_EQ(kernel(Params(s), Block(x, 1, s.c, s.h * s.w, s.ib).data(), PackWeights(w, s).data(), out.data(),
                   steps.data(), static_cast<int>(steps.size())),
            0)
      << TVMGetLastError();
  std::vector<float> want = Block(ReferenceConv(x, w, s), 1, s.o, positions, s.ob);
  for (int64_t i = 0; i < out_size; ++i) {
    want[i] = std::max(0.0f, want[i] + bias[i / (positions * s.ob) * s.ob + i % s.ob] + residual[i]);
  }
  ExpectNear(out, want, s.Text() + (Params(s).flat_plane ? " flat_plane" : ""));
}

// Paired 8-channel blocks whose partial sums wait in the output between chunks of input
// channels (128 channels of a 3x3 layer: two and three chunks), with an odd number of blocks (3 and 5:
// a last vector of one block), the epilogue in registers on the last chunk.
TEST(Conv2DNCHWc, PairedPartialSumsAcrossInputChannelChunks) {
  std::mt19937 rng(14);
  for (int64_t o : {24, 40}) {
    Shape s{1, 128, 9, 13, o, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16, 8, false};
    ExpectBiasResidualRelu(s, PairedVariant(Params(s)), rng);
  }
}

// Stride 2 along the row with the input block compiled in (ResNet's 3x3 downsampling layers): 8-
// and 16-channel input blocks, 8-channel output blocks paired and 16-channel ones, with and without
// padding, rows of several tiles and of one, several input channel chunks, odd block counts.
TEST(Conv2DNCHWc, StrideTwoWithTheInputBlockCompiledIn) {
  std::mt19937 rng(15);
  for (int64_t ib : {8, 16}) {
    for (int64_t ob : {8, 16}) {
      for (int64_t pad : {0, 1}) {
        for (int64_t w : {9, 30}) {
          Shape s{1, 128, 11, w, 3 * ob, 3, 3, 2, 2, 1, 1, pad, pad, pad, pad, ib, ob, false};
          Conv2DNCHWcParams p = Params(s);
          Conv2DNCHWcVariant v = Conv2DNCHWcVariantOf(p, kCompiledConfig);
          if (kCompiledConfig.vector_floats == 16 || ob == 16) {
            EXPECT_EQ(v.in_block, ib) << s.Text();
            EXPECT_EQ(v.stride, 2) << s.Text();
          }
          ExpectBiasResidualRelu(s, &Conv2DNCHWcAnyVariant, rng);
        }
      }
    }
  }
}

// A ResNet-like 3x3 layer wide enough for several interior tiles and input channel chunks.
TEST(Conv2DNCHWc, LargeLayerWithChunkedInputChannels) {
  UseThreads(true);
  std::mt19937 rng(5);
  Shape s{1, 96, 30, 57, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16, 16, false};
  std::vector<float> x = Random(s.n * s.c * s.h * s.w, rng), w = Random(s.o * s.c * 9, rng);
  std::vector<float> out(s.n * s.o * s.oh() * s.ow());
  ASSERT_EQ(Conv2DNCHWcAnyVariant(Params(s), Block(x, 1, s.c, s.h * s.w, 16).data(), PackWeights(w, s).data(), out.data(), nullptr, 0), 0);
  ExpectNear(Unblock(out, 1, s.o, s.oh() * s.ow(), 16), ReferenceConv(x, w, s), s.Text());
  UseThreads(false);
}

// 1x1 layers on planes of one position (squeeze-and-excitation's, [N, C, 1, 1]: PointTile): plain,
// 8- and 16-channel input blocks, 8-channel output blocks alone and paired (odd block counts: a
// last vector of one block), groups, input channels in several chunks (1040 of 16-channel blocks),
// two images, every epilogue form, one thread and several, against the reference; nothing
// written past the output.
TEST(Conv2DNCHWc, PlanesOfOnePosition) {
  std::mt19937 rng(31);
  int iteration = 0;
  for (int64_t ib : {1, 8, 16}) {
    for (int64_t ob : {8, 16}) {
      for (int64_t groups : {1, 2}) {
        for (int64_t c_blocks : {1, 7, 65}) {
          for (int64_t o_blocks : {1, 3, 6}) {
            for (bool paired : {false, true}) {
              if (paired && ob != 8) continue;
              UseThreads(iteration % 2 == 1);
              const int64_t c = ib * c_blocks * groups, o = ob * o_blocks * groups;
              Shape s{2, c, 1, 1, o, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, ib, ob, false, groups};
              std::vector<float> x = Random(s.n * c, rng), w = Random(o * (c / groups), rng);
              std::vector<float> bias = Random(o, rng), residual = Random(s.n * o, rng);
              std::vector<float> blocked_residual = Block(residual, s.n, o, 1, ob);
              std::vector<EpilogueStep> steps = EpilogueOfIteration(iteration, bias, blocked_residual);
              std::vector<float> out(s.n * o + ob, 12345.0f);
              Conv2DNCHWcParams p = Params(s);
              Conv2DNCHWcKernel kernel = paired ? PairedVariant(p) : &Conv2DNCHWcAnyVariant;
              ASSERT_EQ(kernel(p, Block(x, s.n, c, 1, ib).data(), PackWeights(w, s).data(), out.data(), steps.data(),
                               static_cast<int>(steps.size())),
                        0)
                  << TVMGetLastError();
              const std::string what =
                  s.Text() + (paired ? " paired" : "") + " epilogue " + std::to_string(iteration % 10);
              ASSERT_TRUE(std::all_of(out.end() - ob, out.end(), [](float v) { return v == 12345.0f; }))
                  << what << ": written past the output";
              out.resize(s.n * o);
              std::vector<float> want = ReferenceConv(x, w, s);
              std::vector<EpilogueStep> nchw_steps = EpilogueOfIteration(iteration, bias, residual);
              for (int64_t i = 0; i < s.n * o; ++i) want[i] = ApplySteps(nchw_steps, want[i], i % o, i);
              ExpectNear(Unblock(out, s.n, o, 1, ob), want, what);
              ++iteration;
            }
          }
        }
      }
    }
  }
  UseThreads(false);
}

// Threads split a layer of small weights (at most 256 KiB) by rows and a larger one by output
// channels (conv2d_nchwc.cc): both orders of the work items, over two images, cover every output
// once.
TEST(Conv2DNCHWc, ThreadsSplitRowsOrChannelsByWeightSize) {
  UseThreads(true);
  std::mt19937 rng(21);
  const Shape shapes[] = {
      {2, 160, 10, 11, 448, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 16, 16, false},  // 280 KiB: channels, a flat plane
      {2, 96, 15, 17, 112, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16, 16, false},   // 378 KiB: channels
      {2, 32, 40, 40, 64, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 16, 16, false},    // 8 KiB: rows
      {1, 24, 14, 14, 144, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 8, 16, false},    // 14 KiB: parts of a flat plane
      {2, 48, 29, 31, 48, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 16, 16, false},    // 81 KiB, strided: rows
      {2, 64, 23, 19, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16, 16, true},     // depthwise: rows
      {1, 192, 17, 19, 192, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 16, 16, true},   // 7 KiB (not 1.3 MiB): rows
  };
  for (const Shape& s : shapes) {
    std::vector<float> x = Random(s.n * s.c * s.h * s.w, rng), w = Random(s.o * (s.c / s.Groups()) * s.kh * s.kw, rng);
    std::vector<float> out(s.n * s.o * s.oh() * s.ow(), NAN);
    ASSERT_EQ(Conv2DNCHWcAnyVariant(Params(s), Block(x, s.n, s.c, s.h * s.w, s.depthwise ? s.ob : s.ib).data(),
                                    PackWeights(w, s).data(), out.data(), nullptr, 0),
              0)
        << TVMGetLastError();
    ExpectNear(Unblock(out, s.n, s.o, s.oh() * s.ow(), s.ob), ReferenceConv(x, w, s), s.Text());
  }
  UseThreads(false);
}

// Depthwise layers of kernel width 3 and 5 at stride 1 and 2 (DepthwiseRowTile: each input loaded
// once per row for every tap that reads it): rows narrower than a tile, of one tile and of many,
// padding of 0 to 2 columns on each side (tiles at the row's ends skip the columns outside), 8- and
// 16-channel blocks, two images, with and without an epilogue; every output against the reference
// and nothing written past the output.
TEST(Conv2DNCHWc, DepthwiseRowsOfKernelWidth3And5) {
  std::mt19937 rng(23);
  int cases = 0;
  for (int64_t ob : {8, 16})
    for (int64_t kernel : {3, 5})
      for (int64_t stride : {1, 2})
        for (int64_t width : {1, 4, 7, 14, 15, 29, 57})
          for (int64_t pad : {0, 1, 2}) {
            if (width + 2 * pad < kernel) continue;
            Shape s{2, 2 * ob, 6, width, 2 * ob, kernel, kernel, stride, stride, 1, 1, pad, pad, pad, pad, ob, ob, true};
            const int64_t positions = s.oh() * s.ow(), out_size = s.n * s.o * positions;
            std::vector<float> x = Random(s.n * s.c * s.h * s.w, rng), w = Random(s.o * kernel * kernel, rng);
            std::vector<float> bias = Random(s.o, rng);
            std::vector<EpilogueStep> steps;
            if (cases % 2 == 1) steps = {{EpilogueStep::kAdd, EpilogueStep::kChannel, bias.data(), 0, 0}};
            std::vector<float> out(out_size + positions * ob, 12345.0f);
            ASSERT_EQ(Conv2DNCHWcAnyVariant(Params(s), Block(x, s.n, s.c, s.h * s.w, ob).data(),
                                            PackWeights(w, s).data(), out.data(), steps.data(),
                                            static_cast<int>(steps.size())),
                      0)
                << TVMGetLastError();
            ASSERT_TRUE(std::all_of(out.begin() + out_size, out.end(), [](float v) { return v == 12345.0f; }))
                << s.Text() << ": written past the output";
            out.resize(out_size);
            std::vector<float> want = ReferenceConv(x, w, s);
            for (int64_t i = 0; i < out_size; ++i) want[i] = ApplySteps(steps, want[i], i / positions % s.o, i);
            ExpectNear(Unblock(out, s.n, s.o, positions, ob), want, s.Text());
            ++cases;
          }
  EXPECT_GT(cases, 150);
}

// A pointwise convolution, its bias and clip or swish, and the depthwise convolution after it in one call
// (Conv2DPointwiseDepthwise), against the two convolutions by their definition: input blocks of 8
// and 16, expanded channels of an odd number of blocks (a set of one block at the end), planes
// narrower than a tile and wider than several, rows so wide that the expanded rows are computed
// in bands (which share rows at their edges), kernel width 3 and 5 with any height, strides 1 and 2
// each way, padding different on every side, a dilated height, one and two images, one thread and
// several, with no epilogue, a bias and relu, a bias, a residual and clip, and a bias and swish.
// Where the build does not compute it (without AVX2), the call is a clear error.
TEST(Conv2DNCHWc, PointwiseThenDepthwiseMatchTheReference) {
  std::mt19937 rng(29);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int iteration = 0; iteration < 80; ++iteration) {
    UseThreads(iteration % 2 == 1);
    const int64_t ib = pick(0, 1) ? 16 : 8, c = ib * pick(1, 3), e = 16 * pick(1, 5);
    const int64_t kh = pick(1, 5), kw = pick(0, 1) ? 3 : 5, sh = pick(1, 2), sw = pick(1, 2);
    const int64_t pt = pick(0, 2), pl = pick(0, 2), pb = pick(0, 2), pr = pick(0, 2), dh = iteration % 7 == 3 ? 2 : 1;
    Shape pw{pick(1, 2), c, pick(1, 19), pick(1, 41), e, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, ib, 16, false};
    if (iteration % 4 == 3) pw.w = pick(260, 600);  // the expanded rows in bands of a few rows
    pw.w = std::max(pw.w, kw - pl - pr);
    pw.h = std::max(pw.h, (kh - 1) * dh + 1 - pt - pb);
    Shape dw{pw.n, e, pw.h, pw.w, e, kh, kw, sh, sw, dh, 1, pt, pl, pb, pr, 16, 16, true};
    const float lo = iteration % 3 == 0 ? 0.0f : -0.5f, hi = iteration % 3 == 0 ? INFINITY : 0.75f;
    std::vector<float> x = Random(pw.n * c * pw.h * pw.w, rng), w1 = Random(e * c, rng), b1 = Random(e, rng);
    std::vector<float> w2 = Random(e * kh * kw, rng), b2 = Random(e, rng);
    const int64_t plane = pw.h * pw.w, positions = dw.oh() * dw.ow(), out_size = dw.n * e * positions;
    std::vector<float> residual = Random(out_size, rng), blocked_residual = Block(residual, dw.n, e, positions, 16);
    using S = EpilogueStep;
    std::vector<EpilogueStep> steps, nchw_steps;
    const bool swish_after = iteration % 5 == 4;
    if (swish_after) {
      steps = {{S::kAdd, S::kChannel, b2.data(), 0, 0}, {S::kSwish, S::kNone, nullptr, 0, 0}};
      nchw_steps = {steps[0]};  // swish by its definition below
    } else if (iteration % 3 == 1) {
      steps = {{S::kAdd, S::kChannel, b2.data(), 0, 0}, {S::kRelu, S::kNone, nullptr, 0, 0}};
      nchw_steps = steps;
    } else if (iteration % 3 == 2) {
      steps = {{S::kAdd, S::kChannel, b2.data(), 0, 0}, {S::kAdd, S::kTensor, blocked_residual.data(), 0, 0},
               {S::kClip, S::kNone, nullptr, 0.0f, 6.0f}};
      nchw_steps = steps;
      nchw_steps[1].data = residual.data();
    }
    const bool swish = iteration % 5 == 2;
    Conv2DPointwiseDepthwiseParams p{pw.n, c, ib, pw.h, pw.w, e, kh, kw, dw.oh(), dw.ow(), sh, sw, dh, 1, pt, pl,
                                     swish, lo, hi};
    std::vector<float> out(out_size + positions * 16, 12345.0f);
    auto kernel_of = ib == 8 ? &Conv2DPointwiseDepthwise<8> : &Conv2DPointwiseDepthwise<16>;
    int status = kernel_of(p, Block(x, pw.n, c, plane, ib).data(), PackWeights(w1, pw).data(), b1.data(),
                           PackWeights(w2, dw).data(), out.data(), steps.data(), static_cast<int>(steps.size()));
    const std::string what = pw.Text() + " then " + dw.Text();
    if (!PointwiseDepthwiseComputes(p, kCompiledConfig)) {
      EXPECT_LT(kCompiledConfig.vector_floats, 8) << what;  // every form drawn here computes with AVX2 and AVX-512
      EXPECT_NE(status, 0) << what;
      EXPECT_THAT(TVMGetLastError(), ::testing::HasSubstr("AVX2 or AVX-512"));
      continue;
    }
    ASSERT_EQ(status, 0) << TVMGetLastError() << " " << what;
    ASSERT_TRUE(std::all_of(out.begin() + out_size, out.end(), [](float v) { return v == 12345.0f; }))
        << what << ": written past the output";
    out.resize(out_size);
    std::vector<float> expanded = ReferenceConv(x, w1, pw);
    for (int64_t i = 0; i < static_cast<int64_t>(expanded.size()); ++i) {
      const double v = expanded[i] + b1[i / plane % e];
      expanded[i] = static_cast<float>(swish ? v / (1 + std::exp(-v)) : std::min<double>(std::max<double>(v, lo), hi));
    }
    std::vector<float> want = ReferenceConv(expanded, w2, dw);
    for (int64_t i = 0; i < out_size; ++i) {
      want[i] = ApplySteps(nchw_steps, want[i], i / positions % e, i);
      if (swish_after) want[i] = static_cast<float>(want[i] / (1 + std::exp(-static_cast<double>(want[i]))));
    }
    ExpectNear(Unblock(out, dw.n, e, positions, 16), want, what + (swish_after ? " swish after" : ""));
  }
  UseThreads(false);
}

// A library calls the variant its planner named. Any variant whose compiled-in input block and
// stride are the layer's computes it (the generic one always: the choice among them is speed);
// one compiled for another input block refuses.
TEST(Conv2DNCHWc, AVariantComputesTheLayersItFitsAndRefusesOthers) {
  std::mt19937 rng(11);
  Shape s{1, 32, 9, 13, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16, 16, false};
  std::vector<float> x = Random(s.n * s.c * s.h * s.w, rng), w = Random(s.o * s.c * 9, rng);
  std::vector<float> blocked = Block(x, 1, s.c, s.h * s.w, 16), weights = PackWeights(w, s);
  std::vector<float> reference = ReferenceConv(x, w, s);
  for (Conv2DNCHWcKernel kernel : {&Conv2DNCHWc<16, 0, 16, 1, 16>, &Conv2DNCHWc<16, 0, 0, 1, 16>}) {
    std::vector<float> out(s.n * s.o * s.oh() * s.ow(), NAN);
    ASSERT_EQ(kernel(Params(s), blocked.data(), weights.data(), out.data(), nullptr, 0), 0) << TVMGetLastError();
    ExpectNear(Unblock(out, 1, s.o, s.oh() * s.ow(), 16), reference, s.Text());
  }
  std::vector<float> out(s.n * s.o * s.oh() * s.ow());
  Conv2DNCHWcKernel other_block = &Conv2DNCHWc<16, 0, 8, 1, 16>, other_output = &Conv2DNCHWc<8, 0, 0, 1, 8>;
  EXPECT_EQ(other_block(Params(s), blocked.data(), weights.data(), out.data(), nullptr, 0), -1);
  EXPECT_THAT(TVMGetLastError(), ::testing::HasSubstr("need another variant of the kernel than the one called"));
  EXPECT_EQ(other_output(Params(s), blocked.data(), weights.data(), out.data(), nullptr, 0), -1);
}

// 1x1 layers of five 8-channel output blocks (AVX2: tiles of three blocks and of the two left;
// AVX-512: paired, two vectors and one of a single block): rows of the plane and the plane as one
// row, stride 1 and the strided gather, with a bias, a residual and relu. Built for AVX-512
// (kernel_tests_avx512), the stride-1 tiles have their input block (8 or 16) compiled in;
// elsewhere they are the generic tiles.
TEST(Conv2DNCHWc, PointwiseLayersOfEightChannelOutputBlocks) {
  std::mt19937 rng(9);
  for (int64_t ib : {8, 16}) {
    for (int64_t stride : {1, 2}) {
      for (int64_t side : {7, 23}) {
        Shape s{1, 3 * ib, side, side + 2, 40, 1, 1, stride, stride, 1, 1, 0, 0, 0, 0, ib, 8, false};
        ExpectBiasResidualRelu(s, &Conv2DNCHWcAnyVariant, rng);
      }
    }
  }
}

// Every epilogue op with every operand kind, in one chain, against applying the chain to the
// reference result (blocked output positions: channel = block * ob + lane).
TEST(Conv2DNCHWc, EpilogueStepsApplyInOrder) {
  std::mt19937 rng(6);
  for (bool depthwise : {false, true}) {
    Shape s{2, 32, 9, 13, 32, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 16, 16, depthwise};
    std::vector<float> x = Random(s.n * s.c * s.h * s.w, rng), w = Random(s.o * (depthwise ? 1 : s.c) * 9, rng);
    int64_t positions = s.oh() * s.ow(), out_size = s.n * s.o * positions;
    std::vector<float> bias = Random(s.o, rng), scale = Random(s.o, rng), residual = Random(out_size, rng);
    float scalar = 0.25f;
    std::vector<EpilogueStep> steps = {
        {EpilogueStep::kMultiply, EpilogueStep::kChannel, scale.data(), 0, 0},
        {EpilogueStep::kAdd, EpilogueStep::kChannel, bias.data(), 0, 0},
        {EpilogueStep::kSubtract, EpilogueStep::kScalar, &scalar, 0, 0},
        {EpilogueStep::kReverseSubtract, EpilogueStep::kTensor, residual.data(), 0, 0},
        {EpilogueStep::kMaximum, EpilogueStep::kScalar, &scalar, 0, 0},
        {EpilogueStep::kMinimum, EpilogueStep::kChannel, bias.data(), 0, 0},
        {EpilogueStep::kSwish, EpilogueStep::kNone, nullptr, 0, 0},
        {EpilogueStep::kClip, EpilogueStep::kNone, nullptr, -0.5f, 0.75f},
        {EpilogueStep::kRelu, EpilogueStep::kNone, nullptr, 0, 0},
    };
    std::vector<float> out(out_size);
    ASSERT_EQ(Conv2DNCHWcAnyVariant(Params(s), Block(x, s.n, s.c, s.h * s.w, 16).data(), PackWeights(w, s).data(), out.data(),
                          steps.data(), static_cast<int>(steps.size())),
              0);
    std::vector<float> want = Block(ReferenceConv(x, w, s), s.n, s.o, positions, 16);
    for (int64_t i = 0; i < out_size; ++i) {
      int64_t channel = (i / (positions * 16)) % (s.o / 16) * 16 + i % 16;
      want[i] = ApplySteps(steps, want[i], channel, i);
    }
    ExpectNear(out, want, depthwise ? "depthwise epilogue" : "epilogue");
  }
}

// 1-D layers (height 1) whose rows are longer than one work item takes: split into parts along
// the row, each part applying the epilogue to its own positions; both block widths, serial and
// parallel, with input channel chunks.
TEST(Conv2DNCHWc, LongRowsSplitAcrossWorkItems) {
  std::mt19937 rng(8);
  for (int64_t ob : {8, 16}) {
    for (bool parallel : {false, true}) {
      UseThreads(parallel);
      Shape s{1, 96, 1, 1301, 2 * ob, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1, ob, ob, false};
      std::vector<float> x = Random(s.c * s.w, rng), w = Random(s.o * s.c * 3, rng), bias = Random(s.o, rng);
      int64_t positions = s.ow(), out_size = s.o * positions;
      std::vector<float> residual = Random(out_size, rng);
      std::vector<EpilogueStep> steps = {{EpilogueStep::kAdd, EpilogueStep::kChannel, bias.data(), 0, 0},
                                         {EpilogueStep::kAdd, EpilogueStep::kTensor, residual.data(), 0, 0},
                                         {EpilogueStep::kRelu, EpilogueStep::kNone, nullptr, 0, 0}};
      std::vector<float> out(out_size, NAN);
      ASSERT_EQ(Conv2DNCHWcAnyVariant(Params(s), Block(x, 1, s.c, s.w, ob).data(), PackWeights(w, s).data(), out.data(),
                            steps.data(), static_cast<int>(steps.size())),
                0);
      std::vector<float> want = Block(ReferenceConv(x, w, s), 1, s.o, positions, ob);
      for (int64_t i = 0; i < out_size; ++i) {
        want[i] = std::max(0.0f, want[i] + bias[i / (positions * ob) * ob + i % ob] + residual[i]);
      }
      ExpectNear(out, want, s.Text() + (parallel ? " parallel" : ""));
    }
  }
  UseThreads(false);
}

// Bias, residual and swish or hard swish of the epilogue a tile applies itself: the bias once (it
// starts the sums of the first input chunk), the rest once all input channels are summed (320
// channels of 3x3 taps, 1056 of 1x1, are several chunks of input blocks on every instruction set),
// and only to the tile's positions; 1x1 and 3x3, both block widths, two and three output blocks
// (three of 8 channels: ThreeBlockTile with AVX-512, in tiles of odd and even widths), serial and
// parallel.
TEST(Conv2DNCHWc, TileEpilogueOnceOverAllInputChunks) {
  std::mt19937 rng(9);
  for (EpilogueStep::Op activation : {EpilogueStep::kSwish, EpilogueStep::kHardSwish})
  for (int64_t k : {1, 3}) {
    for (int64_t ob : {8, 16}) {
      for (int64_t blocks : {2, 3})
      for (bool parallel : {false, true}) {
        UseThreads(parallel);
        Shape s{1, k == 1 ? 1056 : 320, 9, 11, blocks * ob, k, k, 1, 1, 1, 1, k / 2, k / 2, k / 2, k / 2, 16, ob, false};
        std::vector<float> x = Random(s.c * s.h * s.w, rng), w = Random(s.o * s.c * k * k, rng);
        int64_t positions = s.oh() * s.ow(), out_size = s.o * positions;
        std::vector<float> bias = Random(s.o, rng), residual = Random(out_size, rng);
        std::vector<EpilogueStep> steps = {{EpilogueStep::kAdd, EpilogueStep::kChannel, bias.data(), 0, 0},
                                           {EpilogueStep::kAdd, EpilogueStep::kTensor, residual.data(), 0, 0},
                                           {activation, EpilogueStep::kNone, nullptr, 0, 0}};
        std::vector<float> out(out_size, NAN);
        ASSERT_EQ(Conv2DNCHWcAnyVariant(Params(s), Block(x, 1, s.c, s.h * s.w, 16).data(), PackWeights(w, s).data(),
                                        out.data(), steps.data(), static_cast<int>(steps.size())),
                  0)
            << TVMGetLastError();
        std::vector<float> want = Block(ReferenceConv(x, w, s), 1, s.o, positions, ob);
        for (int64_t i = 0; i < out_size; ++i) {
          EpilogueStep step{activation, EpilogueStep::kNone, nullptr, 0, 0};
          want[i] = ApplyStep(step, want[i] + bias[i / (positions * ob) * ob + i % ob] + residual[i], 0.0f);
        }
        ExpectNear(out, want, s.Text() + (parallel ? " parallel" : ""));
      }
    }
  }
  UseThreads(false);
}

// A bias and swish or hard swish after block-local tiles (depthwise, groups of 4 channels) and
// grouped ones of whole blocks, at borders (checked tiles) and in rows of partial tiles: with AVX2
// the bias is added in registers and the activation applied over each stored tile
// (ActivationOverTile).
TEST(Conv2DNCHWc, SmoothActivationsAfterBlockLocalAndGroupedTiles) {
  std::mt19937 rng(10);
  for (EpilogueStep::Op activation : {EpilogueStep::kSwish, EpilogueStep::kHardSwish})
  for (int64_t ob : {8, 16}) {
    for (int kind = 0; kind < 3; ++kind) {  // depthwise, groups of 4 channels, groups of one block
      bool block_local = kind < 2;
      int64_t c = 4 * ob, groups = kind == 0 ? 1 : kind == 1 ? c / 4 : 4;
      Shape s{1, c, 9, 11, c, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, ob, ob, block_local, groups};
      std::vector<float> x = Random(s.c * s.h * s.w, rng), w = Random(s.o * (s.c / s.Groups()) * 9, rng);
      int64_t positions = s.oh() * s.ow(), out_size = s.o * positions;
      std::vector<float> bias = Random(s.o, rng);
      std::vector<EpilogueStep> steps = {{EpilogueStep::kAdd, EpilogueStep::kChannel, bias.data(), 0, 0},
                                         {activation, EpilogueStep::kNone, nullptr, 0, 0}};
      std::vector<float> out(out_size, NAN);
      ASSERT_EQ(Conv2DNCHWcAnyVariant(Params(s), Block(x, 1, s.c, s.h * s.w, ob).data(), PackWeights(w, s).data(),
                                      out.data(), steps.data(), static_cast<int>(steps.size())),
                0)
          << TVMGetLastError() << " " << s.Text();
      std::vector<float> want = Block(ReferenceConv(x, w, s), 1, s.o, positions, ob);
      for (int64_t i = 0; i < out_size; ++i) {
        EpilogueStep step{activation, EpilogueStep::kNone, nullptr, 0, 0};
        want[i] = ApplyStep(step, want[i] + bias[i / (positions * ob) * ob + i % ob], 0.0f);
      }
      ExpectNear(out, want, s.Text());
    }
  }
}

// Groups of one 8-channel block (RegNetY's): with AVX-512, two groups to a 16-lane vector
// (PairsOneBlockGroups), an odd count's last group alone; 3 taps wide at stride 1 and 2 along the
// row, any height, vertical stride and dilation; rows of interior tiles and rows too narrow for
// them (checked tiles of one group); with and without padding, read as it is (tiles at a row's
// ends skip the columns past them) or copied with the padding written out; a bias and relu in
// registers, and other epilogues over the stored tile; serial and parallel.
TEST(Conv2DNCHWc, GroupsOfOneBlockInPairs) {
  struct Form {
    int64_t w, kh, sh, sw, dh, pt, pl;  // padding: pt rows top and bottom, pl columns left and right
  };
  const Form forms[] = {{5, 3, 1, 1, 1, 1, 1},  {16, 3, 1, 1, 1, 0, 0}, {29, 3, 1, 1, 1, 1, 1},
                        {5, 3, 2, 2, 1, 1, 1},  {16, 3, 2, 2, 1, 0, 0}, {45, 3, 2, 2, 1, 1, 1},
                        {30, 1, 1, 1, 1, 0, 1}, {33, 5, 2, 1, 2, 4, 1}, {40, 3, 1, 2, 1, 1, 0}};
  std::mt19937 rng(11);
  for (const Form& f : forms) {
    for (int64_t groups : {5, 6}) {
      for (bool parallel : {false, true}) {
        UseThreads(parallel);
        int64_t c = 8 * groups;
        Shape s{2, c, 9, f.w, c, f.kh, 3, f.sh, f.sw, f.dh, 1, f.pt, f.pl, f.pt, f.pl, 8, 8, false, groups};
        Conv2DNCHWcParams p = Params(s);
        p.copy_padded = p.copy_padded && parallel;  // serial: read as it is
        EXPECT_EQ(PairsOneBlockGroups(p, kCompiledConfig), kCompiledConfig.vector_floats == 16) << s.Text();
        std::vector<float> x = Random(s.n * s.c * s.h * s.w, rng), w = Random(s.o * 8 * f.kh * 3, rng);
        std::vector<float> bias = Random(s.o, rng), tensor = Random(s.n * s.o * s.oh() * s.ow(), rng);
        float scalar = 0.5f;
        std::vector<EpilogueStep> steps = {{EpilogueStep::kAdd, EpilogueStep::kChannel, bias.data(), 0, 0},
                                           {EpilogueStep::kRelu, EpilogueStep::kNone, nullptr, 0, 0}};
        if (parallel) steps = RandomEpilogue(rng, bias, tensor, &scalar);
        std::vector<float> out(tensor.size(), NAN);
        ASSERT_EQ(Conv2DNCHWcAnyVariant(p, Block(x, s.n, s.c, s.h * s.w, 8).data(), PackWeights(w, s).data(), out.data(),
                                        steps.data(), static_cast<int>(steps.size())),
                  0)
            << TVMGetLastError() << " " << s.Text();
        std::vector<float> want = Block(ReferenceConv(x, w, s), s.n, s.o, s.oh() * s.ow(), 8);
        for (size_t i = 0; i < want.size(); ++i) {
          int64_t channel = i / (s.oh() * s.ow() * 8) % (s.o / 8) * 8 + i % 8;
          want[i] = ApplySteps(steps, want[i], channel, static_cast<int64_t>(i));
        }
        ExpectNear(out, want, s.Text() + (parallel ? " parallel" : ""));
      }
    }
  }
  UseThreads(false);
}

// The vector exp behind swish, over the whole float range that matters: an identity 1x1
// convolution passes x through, the epilogue computes x * sigmoid(x).
TEST(Conv2DNCHWc, SwishIsAccurateOverTheWholeRange) {
  for (int64_t ob : {16, 8}) {
    int64_t positions = 4001;
    Shape s{1, ob, 1, positions, ob, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, ob, ob, false};
    std::vector<float> w(ob * ob, 0.0f), x(ob * positions);
    for (int64_t c = 0; c < ob; ++c) w[c * ob + c] = 1.0f;
    for (size_t i = 0; i < x.size(); ++i) x[i] = -100.0f + 200.0f * static_cast<float>(i) / static_cast<float>(x.size());
    EpilogueStep swish{EpilogueStep::kSwish, EpilogueStep::kNone, nullptr, 0, 0};
    std::vector<float> out(x.size());
    ASSERT_EQ(Conv2DNCHWcAnyVariant(Params(s), Block(x, 1, ob, positions, ob).data(), PackWeights(w, s).data(), out.data(), &swish, 1), 0);
    std::vector<float> got = Unblock(out, 1, ob, positions, ob);
    for (size_t i = 0; i < x.size(); ++i) {
      double want = x[i] / (1.0 + std::exp(-static_cast<double>(x[i])));
      ASSERT_NEAR(got[i], want, 1e-6 * std::abs(want) + 1e-30) << "swish(" << x[i] << ")";
    }
  }
}

TEST(Conv2DNCHWc, UnsupportedBlocksAreErrors) {
  Shape s{1, 16, 4, 4, 12, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 16, 12, false};
  std::vector<float> buffer(4096);
  EXPECT_EQ(Conv2DNCHWcAnyVariant(Params(s), buffer.data(), buffer.data(), buffer.data(), nullptr, 0), -1);
  EXPECT_THAT(TVMGetLastError(), ::testing::HasSubstr("output block must be 8 or 16"));
  Shape d{1, 32, 4, 4, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16, 16, true};
  Conv2DNCHWcParams p = Params(d);
  p.in_block = 8;
  EXPECT_EQ(Conv2DNCHWcAnyVariant(p, buffer.data(), buffer.data(), buffer.data(), nullptr, 0), -1);
  EXPECT_THAT(TVMGetLastError(), ::testing::HasSubstr("depthwise"));
  // Block-local groups of 8 channels: only 1, 2 or 4 per group are computed inside a block.
  p = Params(d);
  p.groups = 4;
  EXPECT_EQ(Conv2DNCHWcAnyVariant(p, buffer.data(), buffer.data(), buffer.data(), nullptr, 0), -1);
  EXPECT_THAT(TVMGetLastError(), ::testing::HasSubstr("1, 2 or 4 channels per group"));
  // Input modes that do not fit the convolution.
  p = Params(d);
  p.copy_padded = true;  // a depthwise convolution reads its input as it is
  EXPECT_EQ(Conv2DNCHWcAnyVariant(p, buffer.data(), buffer.data(), buffer.data(), nullptr, 0), -1);
  Shape dense{1, 16, 4, 4, 16, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 16, 16, false};
  p = Params(dense);
  p.gather_strided = true;  // not 1x1
  EXPECT_EQ(Conv2DNCHWcAnyVariant(p, buffer.data(), buffer.data(), buffer.data(), nullptr, 0), -1);
  EXPECT_THAT(TVMGetLastError(), ::testing::HasSubstr("gather_strided"));
  Shape grouped{1, 32, 4, 4, 32, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 16, 16, false, 4};  // 8 channels per group
  EXPECT_EQ(Conv2DNCHWcAnyVariant(Params(grouped), buffer.data(), buffer.data(), buffer.data(), nullptr, 0), -1);
  EXPECT_THAT(TVMGetLastError(), ::testing::HasSubstr("each group's input and output channels must fill whole blocks"));
  p = Params(dense);
  p.flat_plane = true;  // not 1x1
  EXPECT_EQ(Conv2DNCHWcAnyVariant(p, buffer.data(), buffer.data(), buffer.data(), nullptr, 0), -1);
  EXPECT_THAT(TVMGetLastError(), ::testing::HasSubstr("flat_plane"));
}

// Blocked pooling equals NCHW pooling, for max and average (with and without the padding in the
// divisor), blocks 16, 8 and 4 (the element-by-element path).
TEST(PoolNCHWc, MatchesTheNchwKernels) {
  std::mt19937 rng(7);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int iteration = 0; iteration < 120; ++iteration) {
    UseThreads(iteration % 2 == 0);
    int64_t block = std::vector<int64_t>{16, 8, 4}[pick(0, 2)];
    int64_t n = pick(1, 2), c = block * pick(1, 3);
    Pool2DParams p{};
    p.pool_h = pick(1, 3);
    p.pool_w = pick(1, 3);
    p.stride_h = pick(1, 2);
    p.stride_w = pick(1, 2);
    p.dilation_h = pick(1, 2);
    p.dilation_w = pick(1, 2);
    p.pad_top = pick(0, p.pool_h - 1);
    p.pad_left = pick(0, p.pool_w - 1);
    p.pad_bottom = pick(0, p.pool_h - 1);
    p.pad_right = pick(0, p.pool_w - 1);
    p.in_height = pick(3, 15) + (p.pool_h - 1) * p.dilation_h;
    p.in_width = pick(3, 15) + (p.pool_w - 1) * p.dilation_w;
    p.out_height = (p.in_height + p.pad_top + p.pad_bottom - (p.pool_h - 1) * p.dilation_h - 1) / p.stride_h + 1;
    p.out_width = (p.in_width + p.pad_left + p.pad_right - (p.pool_w - 1) * p.dilation_w - 1) / p.stride_w + 1;
    p.count_include_pad = pick(0, 1) == 1;
    std::vector<float> x = Random(n * c * p.in_height * p.in_width, rng);
    int64_t out_hw = p.out_height * p.out_width;
    for (bool average : {false, true}) {
      std::vector<float> want(n * c * out_hw), got(n * c * out_hw);
      p.batch_channels = n * c;
      (average ? AvgPool2D : MaxPool2D)(p, x.data(), want.data());
      p.batch_channels = n * c / block;
      (average ? AvgPool2DNCHWc : MaxPool2DNCHWc)(p, block, Block(x, n, c, p.in_height * p.in_width, block).data(),
                                                   got.data());
      ExpectNear(Unblock(got, n, c, out_hw, block), want, (average ? "avg" : "max") + std::string(" pool"));
    }
  }
  UseThreads(false);
}

// Rows whose windows are all at the borders (wider than the input, or partly past it as a
// ceil-mode pool's last one), and long rows of interior windows in fours and a remainder: maxima
// equal to the NCHW kernel's exactly, averages within rounding.
TEST(PoolNCHWc, BorderWindowsAndInteriorRuns) {
  std::mt19937 rng(8);
  struct Row {
    int64_t pool, stride, dilation, pad_before, pad_after, in;
  };
  const Row rows[] = {{3, 1, 1, 1, 1, 1},  {3, 2, 2, 2, 2, 2},   {2, 1, 1, 0, 1, 5},
                      {3, 2, 1, 0, 0, 111}, {3, 1, 1, 1, 1, 9},   {3, 2, 1, 1, 1, 14},
                      {5, 1, 2, 4, 4, 3},  {2, 2, 1, 0, 1, 23}};
  for (const Row& r : rows) {
    for (bool include_pad : {false, true}) {
      Pool2DParams p{};
      p.pool_h = p.pool_w = r.pool;
      p.stride_h = p.stride_w = r.stride;
      p.dilation_h = p.dilation_w = r.dilation;
      p.pad_top = p.pad_left = r.pad_before;
      p.pad_bottom = p.pad_right = r.pad_after;
      p.in_height = p.in_width = r.in;
      p.out_height = p.out_width = (r.in + r.pad_before + r.pad_after - (r.pool - 1) * r.dilation - 1) / r.stride + 1;
      p.count_include_pad = include_pad;
      const int64_t c = 16, out_hw = p.out_height * p.out_width;
      std::vector<float> x = Random(c * r.in * r.in, rng);
      for (bool average : {false, true}) {
        std::vector<float> want(c * out_hw), got(c * out_hw);
        p.batch_channels = c;
        (average ? AvgPool2D : MaxPool2D)(p, x.data(), want.data());
        p.batch_channels = 1;
        (average ? AvgPool2DNCHWc : MaxPool2DNCHWc)(p, 16, Block(x, 1, c, r.in * r.in, 16).data(), got.data());
        std::vector<float> unblocked = Unblock(got, 1, c, out_hw, 16);
        std::string what = (average ? "avg" : "max") + std::string(" pool of ") + std::to_string(r.pool) + " over " +
                           std::to_string(r.in);
        if (average) {
          ExpectNear(unblocked, want, what);
        } else {
          EXPECT_EQ(unblocked, want) << what;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kiln::kernels
