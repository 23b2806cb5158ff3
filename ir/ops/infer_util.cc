// Helpers shared by the ops' type inference.
#include "ir/ops/infer_util.h"

#include <algorithm>
#include <numeric>

namespace kiln::ir {

using runtime::Check;
using runtime::Fail;

const TensorType& TensorArg(const std::vector<Type>& args, size_t i) {
  Check(i < args.size() && args[i].is_tensor(), "argument ", i, " must be a tensor");
  return args[i].tensor();
}

std::vector<int64_t> BroadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      Fail("shapes ", ShapeText(a), " and ", ShapeText(b), " do not broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int NormalizeAxis(int64_t axis, int ndim) {
  Check(axis >= -ndim && axis < ndim, "axis ", axis, " is out of range for ", ndim, " dimensions");
  return static_cast<int>(axis < 0 ? axis + ndim : axis);
}

void CheckSameDType(const std::vector<Type>& args) {
  for (size_t i = 1; i < args.size(); ++i) {
    Check(TensorArg(args, i).dtype == TensorArg(args, 0).dtype, "argument ", i, " is ",
          DTypeToString(TensorArg(args, i).dtype), " but argument 0 is ", DTypeToString(TensorArg(args, 0).dtype));
  }
}

std::vector<SlicedAxis> SlicedAxes(const std::vector<int64_t>& shape, const Attrs& attrs) {
  const auto& begin = attrs.GetInts("begin");
  const auto& end = attrs.GetInts("end");
  const auto& strides = attrs.GetInts("strides");
  std::vector<int64_t> axes = attrs.GetInts("axes");
  if (axes.empty()) {
    axes.resize(begin.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  Check(begin.size() == axes.size() && end.size() == axes.size() && (strides.empty() || strides.size() == axes.size()),
        "begin, end, strides and axes must have equal lengths");
  std::vector<SlicedAxis> sliced;
  for (size_t i = 0; i < axes.size(); ++i) {
    int a = NormalizeAxis(axes[i], static_cast<int>(shape.size()));
    int64_t step = strides.empty() ? 1 : strides[i];
    Check(step != 0, "stride 0 on axis ", a);
    int64_t n = shape[a];
    auto clamp = [&](int64_t v) {
      if (v < 0) v += n;
      if (step > 0) return std::min(std::max<int64_t>(v, 0), n);
      return std::min(std::max<int64_t>(v, -1), n - 1);
    };
    int64_t b = clamp(begin[i]), e = clamp(end[i]);
    int64_t length = step > 0 ? (e > b ? (e - b + step - 1) / step : 0) : (b > e ? (b - e + (-step) - 1) / (-step) : 0);
    sliced.push_back({a, length == 0 ? 0 : b, step, length});
  }
  return sliced;
}


std::vector<int64_t> TransposeAxes(const Attrs& attrs, size_t ndim) {
  std::vector<int64_t> axes = attrs.GetInts("axes");
  if (axes.empty()) {
    for (int64_t d = static_cast<int64_t>(ndim) - 1; d >= 0; --d) axes.push_back(d);
  }
  for (int64_t& axis : axes) axis = axis < 0 ? axis + static_cast<int64_t>(ndim) : axis;
  return axes;
}

bool PartsFollowOneAnother(const TensorType& type, const Attrs& attrs) {
  const int64_t ndim = static_cast<int64_t>(type.shape.size());
  int64_t axis = attrs.GetInt("axis");
  if (axis < 0) axis += ndim;
  if (axis < 0 || axis >= ndim) return false;
  for (int64_t d = 0; d < axis; ++d) {
    if (type.shape[d] != 1) return false;
  }
  return true;
}

}  // namespace kiln::ir
