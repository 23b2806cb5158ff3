// Tensor layouts written as strings, as TVM writes them: a primal axis is an upper-case letter
// (N, C, H, W for data; O, I, H, W for weights) and a block of a primal axis is the block size
// followed by the axis' lower-case letter. "NCHW16c" is [N, C/16, H, W, 16];
// "OIHW16i16o" is [O/16, I/16, H, W, 16 (of I), 16 (of O)]. A layout splits each primal axis at
// most once, and its primal shape is the shape in the order of its upper-case letters.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/ndarray.h"

namespace kiln::ir {

class Layout {
 public:
  struct Axis {
    char name;       // 'N', 'C', ... for primal axes; 'c', ... for blocks
    int64_t factor;  // the block size of a block axis; 0 for a primal axis
  };

  // Throws Error naming the text when it is not a layout (unknown characters, a block without a
  // size or without its primal axis, an axis twice).
  static Layout Parse(const std::string& text);

  const std::string& name() const { return name_; }
  const std::vector<Axis>& axes() const { return axes_; }
  int ndim() const { return static_cast<int>(axes_.size()); }
  // The upper-case letters in order: "NCHW" for "NCHW16c".
  std::string primal() const;
  // The block size of a primal axis ('C'), or 0 when it is not split.
  int64_t BlockOf(char primal_axis) const;

  // The shape in this layout of a tensor whose primal shape is `primal_shape`; throws Error when
  // a split axis is not divisible by its block.
  std::vector<int64_t> FromPrimal(const std::vector<int64_t>& primal_shape) const;
  // The primal shape of a tensor of this layout; throws Error when the rank or a block size does
  // not match.
  std::vector<int64_t> ToPrimal(const std::vector<int64_t>& shape) const;

 private:
  std::string name_;
  std::vector<Axis> axes_;
};

// "NCHW16c" for NCHW with channel block 16; "NCHW" for block 0.
std::string BlockedDataLayout(int64_t block);
// The channel block of a data layout: 0 for "NCHW", 16 for "NCHW16c".
int64_t ChannelBlock(const std::string& data_layout);

// `data` (laid out as `src`) laid out as `dst`, which has the same primal axes in any order and
// blocking: a strided copy of any dtype, the layout_transform op's reference semantics, used to
// pack constant weights at build time and as the reference in tests. std::nullopt when the two
// blocks of an axis do not divide one another (8 and 12); throws Error when the primal axes differ
// or `data`'s shape does not fit `src`.
std::optional<runtime::NDArray> TransformLayout(const runtime::NDArray& data, const Layout& src, const Layout& dst);

}  // namespace kiln::ir
