// Parsing layouts, converting shapes between blocked and primal forms, and moving data between
// layouts.
#include "ir/layout.h"

#include <cctype>
#include <cstring>

#include "ir/type.h"
#include "runtime/error.h"

namespace kiln::ir {

using runtime::Check;
using runtime::Fail;

Layout Layout::Parse(const std::string& text) {
  Layout layout;
  layout.name_ = text;
  size_t i = 0;
  while (i < text.size()) {
    int64_t factor = 0;
    size_t digits = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      factor = factor * 10 + (text[i] - '0');
      Check(factor <= (int64_t{1} << 30), "layout '", text, "': block size too large");
      ++i;
    }
    bool has_factor = i > digits;
    Check(i < text.size(), "layout '", text, "' ends with a number");
    char c = text[i++];
    Check(std::isalpha(static_cast<unsigned char>(c)), "layout '", text, "': unexpected character '", c, "'");
    bool upper = std::isupper(static_cast<unsigned char>(c)) != 0;
    Check(!upper || !has_factor, "layout '", text, "': primal axis '", c, "' cannot have a block size");
    Check(upper || has_factor, "layout '", text, "': block axis '", c, "' needs a size, as in 16", c);
    Check(!has_factor || factor > 0, "layout '", text, "': block size of '", c, "' must be positive");
    for (const Axis& a : layout.axes_) Check(a.name != c, "layout '", text, "' repeats axis '", c, "'");
    layout.axes_.push_back({c, factor});
  }
  for (const Axis& a : layout.axes_) {
    if (a.factor == 0) continue;
    bool primal = false;
    for (const Axis& b : layout.axes_) primal = primal || b.name == std::toupper(static_cast<unsigned char>(a.name));
    Check(primal, "layout '", text, "': block axis '", a.name, "' has no primal axis '",
          static_cast<char>(std::toupper(static_cast<unsigned char>(a.name))), "'");
  }
  Check(!layout.axes_.empty(), "empty layout");
  return layout;
}

std::string Layout::primal() const {
  std::string letters;
  for (const Axis& a : axes_) {
    if (a.factor == 0) letters += a.name;
  }
  return letters;
}

int64_t Layout::BlockOf(char primal_axis) const {
  char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(primal_axis)));
  for (const Axis& a : axes_) {
    if (a.name == lower) return a.factor;
  }
  return 0;
}

std::vector<int64_t> Layout::FromPrimal(const std::vector<int64_t>& primal_shape) const {
  std::string letters = primal();
  Check(primal_shape.size() == letters.size(), "layout ", name_, " needs a ", letters.size(), "-D primal shape, got ",
        ShapeText(primal_shape));
  std::vector<int64_t> shape;
  for (const Axis& a : axes_) {
    char upper = static_cast<char>(std::toupper(static_cast<unsigned char>(a.name)));
    int64_t size = primal_shape[letters.find(upper)];
    if (a.factor != 0) {
      shape.push_back(a.factor);
      continue;
    }
    int64_t block = BlockOf(a.name);
    Check(block == 0 || size % block == 0, "axis ", a.name, " of size ", size, " is not divisible by the block ", block,
          " of layout ", name_);
    shape.push_back(block == 0 ? size : size / block);
  }
  return shape;
}

std::vector<int64_t> Layout::ToPrimal(const std::vector<int64_t>& shape) const {
  Check(static_cast<int>(shape.size()) == ndim(), "a tensor of layout ", name_, " must be ", ndim(), "-D, got ",
        ShapeText(shape));
  std::vector<int64_t> primal_shape;
  for (size_t d = 0; d < axes_.size(); ++d) {
    const Axis& a = axes_[d];
    if (a.factor != 0) {
      Check(shape[d] == a.factor, "dimension ", d, " of ", ShapeText(shape), " must be ", a.factor, " in layout ", name_);
      continue;
    }
    int64_t block = BlockOf(a.name);
    primal_shape.push_back(shape[d] * (block == 0 ? 1 : block));
  }
  return primal_shape;
}

std::string BlockedDataLayout(int64_t block) { return block == 0 ? "NCHW" : "NCHW" + std::to_string(block) + "c"; }

int64_t ChannelBlock(const std::string& data_layout) { return Layout::Parse(data_layout).BlockOf('C'); }

runtime::NDArray TransformLayout(const runtime::NDArray& data, const Layout& src, const Layout& dst) {
  std::string letters = src.primal();
  std::string dst_letters = dst.primal();
  bool same_axes = letters.size() == dst_letters.size();
  for (char c : dst_letters) same_axes = same_axes && letters.find(c) != std::string::npos;
  Check(same_axes, "cannot transform layout ", src.name(), " to ", dst.name(), ": the primal axes differ");
  std::vector<int64_t> src_primal = src.ToPrimal(data.shape());
  std::vector<int64_t> dst_primal;
  for (char c : dst_letters) dst_primal.push_back(src_primal[letters.find(c)]);
  std::vector<int64_t> dst_shape = dst.FromPrimal(dst_primal);
  runtime::NDArray out = runtime::NDArray::Empty(dst_shape, data.dtype());

  // Source strides per source dimension, and for each destination dimension the source
  // dimensions it feeds: a primal destination index i of a primal axis with destination block
  // bd is coordinate i * bd; a block index adds to the coordinate.
  std::vector<int64_t> src_strides(src.ndim(), 1);
  for (int d = src.ndim() - 2; d >= 0; --d) src_strides[d] = src_strides[d + 1] * data.shape()[d + 1];
  size_t element = (data.dtype().bits * data.dtype().lanes + 7) / 8;
  const char* in = static_cast<const char*>(data.data());
  char* o = static_cast<char*>(out.data());
  int64_t total = 1;
  for (int64_t s : dst_shape) total *= s;
  std::vector<int64_t> index(dst.ndim(), 0);
  std::vector<int64_t> coordinate(26, 0);  // primal coordinate per letter
  for (int64_t flat = 0; flat < total; ++flat) {
    std::fill(coordinate.begin(), coordinate.end(), 0);
    for (int d = 0; d < dst.ndim(); ++d) {
      const Layout::Axis& a = dst.axes()[d];
      int letter = std::toupper(static_cast<unsigned char>(a.name)) - 'A';
      int64_t block = a.factor == 0 ? dst.BlockOf(a.name) : 0;
      coordinate[letter] += a.factor != 0 ? index[d] : index[d] * (block == 0 ? 1 : block);
    }
    int64_t offset = 0;
    for (int d = 0; d < src.ndim(); ++d) {
      const Layout::Axis& a = src.axes()[d];
      int64_t c = coordinate[std::toupper(static_cast<unsigned char>(a.name)) - 'A'];
      int64_t block = a.factor == 0 ? src.BlockOf(a.name) : a.factor;
      int64_t i = a.factor != 0 ? c % block : (block == 0 ? c : c / block);
      offset += i * src_strides[d];
    }
    std::memcpy(o + flat * element, in + offset * element, element);
    for (int d = dst.ndim() - 1; d >= 0; --d) {
      if (++index[d] < dst_shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace kiln::ir
