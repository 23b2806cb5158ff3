// Helpers shared by the ops' type inference.
#include "ir/ops/infer_util.h"

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

}  // namespace kiln::ir
