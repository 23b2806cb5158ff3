// Parsing layouts, converting shapes between blocked and primal forms, and moving data between
// layouts.
#include "ir/layout.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "ir/ops/eval_util.h"
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

std::optional<runtime::NDArray> TransformLayout(const runtime::NDArray& data, const Layout& src, const Layout& dst) {
  std::string letters = src.primal();
  std::string dst_letters = dst.primal();
  bool same_axes = letters.size() == dst_letters.size();
  for (char c : dst_letters) same_axes = same_axes && letters.find(c) != std::string::npos;
  Check(same_axes, "cannot transform layout ", src.name(), " to ", dst.name(), ": the primal axes differ");
  std::vector<int64_t> src_primal = src.ToPrimal(data.shape());
  std::vector<int64_t> dst_primal;
  for (char c : dst_letters) dst_primal.push_back(src_primal[letters.find(c)]);
  std::vector<int64_t> dst_shape = dst.FromPrimal(dst_primal);

  // Each primal axis splits into three factors, outer to inner: [size / big, big / small, small],
  // where big and small are the larger and smaller of the two layouts' blocks of it (a missing
  // block counts as the other one; neither: 1). Every axis of either layout is a run of these
  // factors, so the transform is a strided gather over them.
  struct Split {
    int64_t factors[3];
    int64_t big;
  };
  std::map<char, Split> splits;
  for (size_t i = 0; i < letters.size(); ++i) {
    char c = letters[i];
    int64_t a = src.BlockOf(c), b = dst.BlockOf(c);
    int64_t big = std::max<int64_t>({a, b, 1}), small = a == 0 ? (b == 0 ? 1 : b) : (b == 0 ? a : std::min(a, b));
    if (big % small != 0) return std::nullopt;
    splits[c] = {{src_primal[i] / big, big / small, small}, big};
  }
  // The factors an axis of `layout` covers, as (primal letter, factor index) pairs.
  auto covered = [&](const Layout& layout, const Layout::Axis& axis) {
    char c = static_cast<char>(std::toupper(static_cast<unsigned char>(axis.name)));
    int64_t block = layout.BlockOf(c);
    int first = 0, last = 2;
    if (axis.factor == 0 && block != 0) last = block == splits[c].big ? 0 : 1;
    if (axis.factor != 0) first = axis.factor == splits[c].big ? 1 : 2;
    std::vector<std::pair<char, int>> factors;
    for (int k = first; k <= last; ++k) factors.push_back({c, k});
    return factors;
  };
  std::map<std::pair<char, int>, int64_t> stride;  // in elements of `data`
  std::vector<std::pair<char, int>> src_factors;
  for (const Layout::Axis& axis : src.axes()) {
    for (const auto& f : covered(src, axis)) src_factors.push_back(f);
  }
  int64_t next = 1;
  for (auto it = src_factors.rbegin(); it != src_factors.rend(); ++it) {
    stride[*it] = next;
    next *= splits[it->first].factors[it->second];
  }
  std::vector<int64_t> gather_shape, gather_strides;
  for (const Layout::Axis& axis : dst.axes()) {
    for (const auto& f : covered(dst, axis)) {
      int64_t size = splits[f.first].factors[f.second];
      if (size == 1) continue;
      gather_shape.push_back(size);
      gather_strides.push_back(stride[f]);
    }
  }
  return GatherStrided(data, gather_shape, gather_strides, 0).CreateView(dst_shape, data.dtype());
}

}  // namespace kiln::ir
