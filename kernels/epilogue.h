// The fused epilogue of the convolution kernels and the matrix product: EpilogueSteps (kernels.h)
// over results just stored, with the elementwise op's own definition (elementwise/scalar_ops.h) on vectors. Each
// step is one loop of its own op over the stored results: with the op chosen per vector instead,
// GCC called the op out of line for each vector (swish then cost five times the 1x1
// convolution it followed).
#pragma once

#include "kernels/kernels.h"
#include "kernels/simd.h"

namespace kiln::kernels {

// f(x, y) over `count` vectors at `x`, y from `tensor` (same positions) or else `y`.
template <int N, typename F>
KILN_ALWAYS_INLINE void EachVector(float* x, int64_t count, const float* tensor, Vec<N> y, F f) {
  using V = Vec<N>;
  if (tensor != nullptr) {
    for (int64_t i = 0; i < count; ++i) f(V::Load(x + i * N), V::Load(tensor + i * N)).Store(x + i * N);
  } else {
    for (int64_t i = 0; i < count; ++i) f(V::Load(x + i * N), y).Store(x + i * N);
  }
}

// Step `s` over `count` vectors of N floats at `x`; its other operand is `tensor` at the same
// positions when not null, else `y` (a kScalar or kChannel value; unused by the activations).
template <int N>
void ApplyStep(const EpilogueStep& s, float* x, int64_t count, const float* tensor, Vec<N> y) {
  using V = Vec<N>;
  switch (s.op) {
    case EpilogueStep::kAdd: return EachVector<N>(x, count, tensor, y, [](V a, V b) { return scalar::Add(a, b); });
    case EpilogueStep::kSubtract:
      return EachVector<N>(x, count, tensor, y, [](V a, V b) { return scalar::Subtract(a, b); });
    case EpilogueStep::kReverseSubtract:
      return EachVector<N>(x, count, tensor, y, [](V a, V b) { return scalar::Subtract(b, a); });
    case EpilogueStep::kMultiply:
      return EachVector<N>(x, count, tensor, y, [](V a, V b) { return scalar::Multiply(a, b); });
    case EpilogueStep::kMaximum:
      return EachVector<N>(x, count, tensor, y, [](V a, V b) { return scalar::Maximum(a, b); });
    case EpilogueStep::kMinimum:
      return EachVector<N>(x, count, tensor, y, [](V a, V b) { return scalar::Minimum(a, b); });
    case EpilogueStep::kRelu: return EachVector<N>(x, count, nullptr, y, [](V a, V) { return scalar::Relu(a); });
    case EpilogueStep::kClip: {
      V lo = V::Broadcast(&s.lo), hi = V::Broadcast(&s.hi);
      return EachVector<N>(x, count, nullptr, y, [lo, hi](V a, V) { return scalar::Clip(a, lo, hi); });
    }
    case EpilogueStep::kSwish: return EachVector<N>(x, count, nullptr, y, [](V a, V) { return scalar::Swish(a); });
    case EpilogueStep::kGelu:
      return EachVector<N>(x, count, nullptr, y, [](V a, V) { return scalar::GeluOfFloats(a); });
    case EpilogueStep::kHardSwish:
      return EachVector<N>(x, count, nullptr, y, [](V a, V) { return scalar::HardSwish(a); });
    case EpilogueStep::kSigmoid: return EachVector<N>(x, count, nullptr, y, [](V a, V) { return scalar::Sigmoid(a); });
  }
}

// The kChannel or kScalar operand of `s` for output channel `channel`; 0 for other operands.
inline float StepOperand(const EpilogueStep& s, int64_t channel) {
  return s.operand == EpilogueStep::kChannel ? s.data[channel] : s.operand == EpilogueStep::kScalar ? s.data[0] : 0.0f;
}

// Step `s` over `count` floats at `x` of one output channel (a plain output's plane, or a row of a
// matrix product): whole vectors of N, then the floats past them one by one; the other operand is
// `tensor` at the same positions when not null, else `operand`.
template <int N>
void ApplyStepToFloats(const EpilogueStep& s, float* x, int64_t count, const float* tensor, float operand) {
  const int64_t vectors = count / N, done = vectors * N;
  ApplyStep<N>(s, x, vectors, tensor, Vec<N>::Broadcast(&operand));
  if (done < count) {
    ApplyStep<1>(s, x + done, count - done, tensor != nullptr ? tensor + done : nullptr, Vec<1>::Broadcast(&operand));
  }
}

// Steps [0, size) in order over `count` vectors at `x`, of output channel block `block`; `offset`
// is x's place in the output (floats), where a kTensor operand is read.
template <int N>
void ApplySteps(const EpilogueStep* steps, int size, int64_t block, float* x, int64_t count, int64_t offset) {
  using V = Vec<N>;
  for (int s = 0; s < size; ++s) {
    const EpilogueStep& step = steps[s];
    const float* tensor = step.operand == EpilogueStep::kTensor ? step.data + offset : nullptr;
    V y = step.operand == EpilogueStep::kChannel  ? V::Load(step.data + block * N)
          : step.operand == EpilogueStep::kScalar ? V::Broadcast(step.data)
                                                  : V::Zero();
    ApplyStep<N>(step, x, count, tensor, y);
  }
}

// The common tail of a kernel's result that kernels apply to their accumulators before storing
// them (the convolution's tiles, the dense layer's matrix tiles): a bias per channel, a residual
// of the output's layout, then relu, clip, swish, hard swish or gelu, each optional.
struct RegisterEpilogue {
  bool active = false;              // the steps had this form
  const float* bias = nullptr;      // one value per channel; null: none
  bool bias_per_row = false;        // a matrix tile's channels are its rows (else its columns)
  const float* residual = nullptr;  // of the output's shape and layout; null: none
  enum Activation { kNone, kRelu, kClip, kSwish, kHardSwish, kGelu } activation = kNone;
  float lo = 0, hi = 0;  // kClip
};

// The register form of `steps` (swish and hard swish only where `swish` allows them, gelu where
// `gelu` does), or an inactive one when they are not of that form.
inline RegisterEpilogue RegisterEpilogueOf(const EpilogueStep* steps, int size, bool swish, bool gelu = false) {
  RegisterEpilogue r;
  int s = 0;
  if (s < size && steps[s].op == EpilogueStep::kAdd && steps[s].operand == EpilogueStep::kChannel) {
    r.bias = steps[s++].data;
  }
  if (s < size && steps[s].op == EpilogueStep::kAdd && steps[s].operand == EpilogueStep::kTensor) {
    r.residual = steps[s++].data;
  }
  if (s < size && steps[s].op == EpilogueStep::kRelu) {
    r.activation = RegisterEpilogue::kRelu;
    ++s;
  } else if (s < size && steps[s].op == EpilogueStep::kClip) {
    r.activation = RegisterEpilogue::kClip;
    r.lo = steps[s].lo;
    r.hi = steps[s].hi;
    ++s;
  } else if (swish && s < size && (steps[s].op == EpilogueStep::kSwish || steps[s].op == EpilogueStep::kHardSwish)) {
    r.activation = steps[s++].op == EpilogueStep::kSwish ? RegisterEpilogue::kSwish : RegisterEpilogue::kHardSwish;
  } else if (gelu && s < size && steps[s].op == EpilogueStep::kGelu) {
    r.activation = RegisterEpilogue::kGelu;
    ++s;
  }
  r.active = size > 0 && s == size;
  return r;
}

}  // namespace kiln::kernels
