// Legalize: nn.conv2d_transpose as the convolution of the zero-stuffed input with the flipped
// weight, in IR text (its numerics against ONNX Runtime: tests/python/test_onnx_ops.py's
// conv_transpose group).
#include <gtest/gtest.h>

#include "tests/transform/pass_test_util.h"
#include "transform/legalize.h"

namespace kiln::transform {
namespace {

// Stride 2: one zero after each element (reshape, pad, reshape), then pads of the kernel's extent
// less the op's, the end's grown by output_padding less the stuffed input's trailing zero.
TEST(Legalize, StridedConv2DTransposeIsAConvolutionOfTheZeroStuffedInput) {
  ExpectPass(Legalize, R"(fn (%x: Tensor[(1, 2, 3, 3), float32], %w: Tensor[(2, 1, 3, 3), float32]) {
    %0 = nn.conv2d_transpose(%x, %w, strides=[2, 2], padding=[1, 1, 1, 1], output_padding=[1, 1]);
    %0
  })",
             R"(fn (%x: Tensor[(1, 2, 3, 3), float32], %w: Tensor[(2, 1, 3, 3), float32]) {
    %0 = reshape(%x, newshape=[1, 2, 3, 1, 3, 1]);
    %1 = nn.pad(%0, pad_width=[0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1]);
    %2 = reshape(%1, newshape=[1, 2, 6, 6]);
    %3 = reshape(%w, newshape=[1, 2, 1, 3, 3]);
    %4 = transpose(%3, axes=[0, 2, 1, 3, 4]);
    %5 = reshape(%4, newshape=[1, 2, 3, 3]);
    %6 = strided_slice(%5, begin=[-1, -1], end=[-4611686018427387904, -4611686018427387904], strides=[-1, -1], axes=[2, 3]);
    %7 = nn.conv2d(%2, %6, strides=[1, 1], dilation=[1, 1], padding=[1, 1, 1, 1], groups=1);
    %7
  })");
}

// Stride 1 needs no stuffing; a pad larger than the kernel's extent crops the input instead.
TEST(Legalize, PadsLargerThanTheKernelCropTheInput) {
  ExpectPass(Legalize, R"(fn (%x: Tensor[(1, 1, 4, 4), float32], %w: Tensor[(1, 1, 2, 2), float32]) {
    %0 = nn.conv2d_transpose(%x, %w, padding=[2, 0, 0, 0]);
    %0
  })",
             R"(fn (%x: Tensor[(1, 1, 4, 4), float32], %w: Tensor[(1, 1, 2, 2), float32]) {
    %0 = strided_slice(%x, begin=[1, 0], end=[4, 4], strides=[1, 1], axes=[2, 3]);
    %1 = reshape(%w, newshape=[1, 1, 1, 2, 2]);
    %2 = transpose(%1, axes=[0, 2, 1, 3, 4]);
    %3 = reshape(%2, newshape=[1, 1, 2, 2]);
    %4 = strided_slice(%3, begin=[-1, -1], end=[-4611686018427387904, -4611686018427387904], strides=[-1, -1], axes=[2, 3]);
    %5 = nn.conv2d(%0, %4, padding=[0, 1, 1, 1]);
    %5
  })");
}

TEST(Legalize, LeavesOtherOpsAlone) {
  const char* text = R"(fn (%x: Tensor[(1, 2, 5, 5), float32], %w: Tensor[(4, 2, 3, 3), float32]) {
    %0 = nn.conv2d(%x, %w);
    %0
  })";
  ExpectPass(Legalize, text, text);
}

}  // namespace
}  // namespace kiln::transform
