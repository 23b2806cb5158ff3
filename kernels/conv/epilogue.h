// The fused epilogue of the convolution kernels: one EpilogueStep (kernels.h) on a register of
// results, with the elementwise op's own definition (elementwise/scalar_ops.h) on vectors.
#pragma once

#include "kernels/kernels.h"
#include "kernels/simd.h"

namespace kiln::kernels {

// Step `s` on x; y is its other operand (unused by relu, clip and swish).
template <int N>
KILN_ALWAYS_INLINE Vec<N> Apply(const EpilogueStep& s, Vec<N> x, Vec<N> y) {
  using V = Vec<N>;
  switch (s.op) {
    case EpilogueStep::kAdd: return scalar::Add(x, y);
    case EpilogueStep::kSubtract: return scalar::Subtract(x, y);
    case EpilogueStep::kReverseSubtract: return scalar::Subtract(y, x);
    case EpilogueStep::kMultiply: return scalar::Multiply(x, y);
    case EpilogueStep::kMaximum: return scalar::Maximum(x, y);
    case EpilogueStep::kMinimum: return scalar::Minimum(x, y);
    case EpilogueStep::kRelu: return scalar::Relu(x);
    case EpilogueStep::kClip: return scalar::Clip(x, V::Broadcast(&s.lo), V::Broadcast(&s.hi));
    case EpilogueStep::kSwish: return scalar::Swish(x);
  }
  return x;
}

}  // namespace kiln::kernels
