// Reductions over axes: sum, mean, max, min, prod; the index of the largest or smallest element
// along one axis: argmax, argmin; and the determinant of the last two axes: det.
#include "ir/op.h"
#include "ir/ops/infer_util.h"

namespace kiln::ir {
namespace {

using runtime::Check;

Type Reduce(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  const auto& axes = attrs.GetInts("axis");
  bool keepdims = attrs.GetInt("keepdims") != 0;
  std::vector<bool> reduced(data.shape.size(), axes.empty());
  for (int64_t axis : axes) {
    int a = NormalizeAxis(axis, data.ndim());
    Check(!reduced[a], "axis ", axis, " is listed twice");
    reduced[a] = true;
  }
  std::vector<int64_t> shape;
  for (size_t d = 0; d < data.shape.size(); ++d) {
    if (!reduced[d]) {
      shape.push_back(data.shape[d]);
    } else if (keepdims) {
      shape.push_back(1);
    }
  }
  return Type::Tensor(shape, data.dtype);
}

// argmax / argmin: int64 indices, the axis removed (or kept with size 1).
Type ArgReduce(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  Check(data.ndim() > 0, "needs a tensor of at least one dimension");
  int axis = NormalizeAxis(attrs.GetInt("axis"), data.ndim());
  Check(data.shape[axis] > 0, "the axis is empty: no index to return");
  std::vector<int64_t> shape = data.shape;
  if (attrs.GetInt("keepdims") != 0) {
    shape[axis] = 1;
  } else {
    shape.erase(shape.begin() + axis);
  }
  return Type::Tensor(shape, DLDataType{kDLInt, 64, 1});
}

// det: [..., n, n] -> [...], floats.
Type Det(const std::vector<Type>& args, const Attrs&) {
  const TensorType& data = TensorArg(args, 0);
  Check(data.ndim() >= 2 && data.shape[data.ndim() - 1] == data.shape[data.ndim() - 2], "det takes square matrices",
        " [..., n, n], got ", ShapeText(data.shape));
  Check(data.dtype.code == kDLFloat && data.dtype.bits >= 32, "det takes float32 or float64, got ",
        DTypeToString(data.dtype));
  return Type::Tensor(std::vector<int64_t>(data.shape.begin(), data.shape.end() - 2), data.dtype);
}

}  // namespace

void RegisterReduceOps(OpTable& table) {
  table["det"] = OpDef{"det", 1, 1, {}, OpPattern::kOpaque, Det, "the determinant of each matrix (the last two axes)",
                       nullptr, LayoutRule::kPlain};
  // prod has no blocked kernel: over H and W it takes plain NCHW.
  for (const char* name : {"sum", "mean", "max", "min", "prod"}) {
    LayoutRule layout = std::string(name) == "prod" ? LayoutRule::kPlain : LayoutRule::kSpatialReduce;
    table[name] = OpDef{name, 1, 1,
                        {{"axis", AttrKind::kInts, std::vector<int64_t>{}, "reduced axes; empty: all"},
                         {"keepdims", AttrKind::kInt, int64_t{0}, "keep reduced axes with size 1"}},
                        OpPattern::kCommReduce, Reduce, "reduction over axes", nullptr, layout};
  }
  for (const char* name : {"argmax", "argmin"}) {
    table[name] = OpDef{name, 1, 1,
                        {{"axis", AttrKind::kInt, int64_t{0}, "the axis searched"},
                         {"keepdims", AttrKind::kInt, int64_t{1}, "keep the axis with size 1"},
                         {"select_last_index", AttrKind::kInt, int64_t{0}, "on ties, the last index (else the first)"}},
                        OpPattern::kCommReduce, ArgReduce, "index of the largest / smallest element along an axis",
                        nullptr, LayoutRule::kPlain};
  }
}

}  // namespace kiln::ir
