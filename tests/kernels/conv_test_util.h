// Shared by the convolution kernel tests: a convolution's shape, its definition computed in
// double, and the epilogue steps applied one value at a time.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"

namespace kiln::kernels {

struct Shape {
  int64_t n, c, h, w, o, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, ib, ob;
  bool depthwise;  // block-local: one channel per group, or (groups > 1) c / groups = 2 or 4 per group
  int64_t groups = 1;  // not depthwise: each group's channels whole blocks
  int64_t Groups() const { return depthwise && groups == 1 ? c : groups; }
  int64_t oh() const { return (h + pt + pb - (kh - 1) * dh - 1) / sh + 1; }
  int64_t ow() const { return (w + pl + pr - (kw - 1) * dw - 1) / sw + 1; }
  std::string Text() const {
    return "n" + std::to_string(n) + " c" + std::to_string(c) + " " + std::to_string(h) + "x" + std::to_string(w) +
           " o" + std::to_string(o) + " k" + std::to_string(kh) + "x" + std::to_string(kw) + " s" +
           std::to_string(sh) + "," + std::to_string(sw) + " d" + std::to_string(dh) + "," + std::to_string(dw) +
           " p" + std::to_string(pt) + "," + std::to_string(pl) + "," + std::to_string(pb) + "," + std::to_string(pr) +
           " ib" + std::to_string(ib) + " ob" + std::to_string(ob) + (depthwise ? " depthwise" : "") +
           (groups > 1 ? " groups" + std::to_string(groups) : "");
  }
};

// NCHW -> NCHW[b]c and back.
inline std::vector<float> Block(const std::vector<float>& x, int64_t n, int64_t c, int64_t hw, int64_t b) {
  std::vector<float> y(x.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t p = 0; p < hw; ++p) y[((i * (c / b) + k / b) * hw + p) * b + k % b] = x[(i * c + k) * hw + p];
  return y;
}
inline std::vector<float> Unblock(const std::vector<float>& y, int64_t n, int64_t c, int64_t hw, int64_t b) {
  std::vector<float> x(y.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t p = 0; p < hw; ++p) x[(i * c + k) * hw + p] = y[((i * (c / b) + k / b) * hw + p) * b + k % b];
  return x;
}

// A random window for `s`: kernel 1 to 5, strides 1 to 3, dilations 1 or 2, pads 0 to 3 on each
// side.
template <typename Rng>
void PickWindow(Rng& rng, Shape& s) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  s.kh = pick(1, 5);
  s.kw = pick(1, 5);
  s.sh = pick(1, 3);
  s.sw = pick(1, 3);
  s.dh = pick(1, 2);
  s.dw = pick(1, 2);
  s.pt = pick(0, 3);
  s.pl = pick(0, 3);
  s.pb = pick(0, 3);
  s.pr = pick(0, 3);
}

// The convolution by its definition, in double.
inline std::vector<float> ReferenceConv(const std::vector<float>& x, const std::vector<float>& w, const Shape& s) {
  int64_t oh = s.oh(), ow = s.ow(), groups = s.Groups();
  int64_t in_per_group = s.c / groups, out_per_group = s.o / groups;
  std::vector<float> out(s.n * s.o * oh * ow);
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t o = 0; o < s.o; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t z = 0; z < ow; ++z) {
          double sum = 0;
          for (int64_t i = 0; i < in_per_group; ++i) {
            int64_t c = (o / out_per_group) * in_per_group + i;
            for (int64_t a = 0; a < s.kh; ++a)
              for (int64_t b = 0; b < s.kw; ++b) {
                int64_t ih = y * s.sh - s.pt + a * s.dh, iw = z * s.sw - s.pl + b * s.dw;
                if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) continue;
                sum += double(x[((n * s.c + c) * s.h + ih) * s.w + iw]) * w[((o * in_per_group + i) * s.kh + a) * s.kw + b];
              }
          }
          out[((n * s.o + o) * oh + y) * ow + z] = static_cast<float>(sum);
        }
  return out;
}

inline void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-4f * std::max(1.0f, std::abs(want[i]))) << what << " at " << i;
  }
}

// Epilogue step `step` on one value.
inline float ApplyStep(const EpilogueStep& step, float v, float operand) {
  switch (step.op) {
    case EpilogueStep::kAdd: return v + operand;
    case EpilogueStep::kSubtract: return v - operand;
    case EpilogueStep::kReverseSubtract: return operand - v;
    case EpilogueStep::kMultiply: return v * operand;
    case EpilogueStep::kMaximum: return std::max(v, operand);
    case EpilogueStep::kMinimum: return std::min(v, operand);
    case EpilogueStep::kRelu: return v > 0 ? v : 0.0f;
    case EpilogueStep::kClip: return std::min(std::max(v, step.lo), step.hi);
    case EpilogueStep::kSwish: return v * (1.0f / (1.0f + std::exp(-v)));
    case EpilogueStep::kGelu: return static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
    case EpilogueStep::kHardSwish: return v * std::min(1.0f, std::max(0.0f, v / 6.0f + 0.5f));
    case EpilogueStep::kSigmoid: return 1.0f / (1.0f + std::exp(-v));
  }
  return v;
}

// Up to three epilogue steps of random ops and operands.
inline std::vector<EpilogueStep> RandomEpilogue(std::mt19937& rng, const std::vector<float>& channel,
                                         const std::vector<float>& tensor, const float* scalar) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<EpilogueStep> steps(pick(0, 3));
  for (EpilogueStep& step : steps) {
    step.op = static_cast<EpilogueStep::Op>(pick(EpilogueStep::kAdd, EpilogueStep::kSigmoid));
    bool unary = step.op >= EpilogueStep::kRelu;
    step.operand = unary ? EpilogueStep::kNone : static_cast<EpilogueStep::Operand>(pick(1, 3));
    step.data = step.operand == EpilogueStep::kChannel  ? channel.data()
                : step.operand == EpilogueStep::kTensor ? tensor.data()
                : step.operand == EpilogueStep::kScalar ? scalar
                                                        : nullptr;
    step.lo = -0.5f;
    step.hi = 0.75f;
  }
  return steps;
}

// The steps applied in order to value `index` of a blocked output, of output channel `channel`.
inline float ApplySteps(const std::vector<EpilogueStep>& steps, float v, int64_t channel, int64_t index) {
  for (const EpilogueStep& step : steps) {
    float operand = step.operand == EpilogueStep::kChannel  ? step.data[channel]
                    : step.operand == EpilogueStep::kScalar ? step.data[0]
                    : step.operand == EpilogueStep::kTensor ? step.data[index]
                                                            : 0.0f;
    v = ApplyStep(step, v, operand);
  }
  return v;
}

}  // namespace kiln::kernels
