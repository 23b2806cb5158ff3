// Ops that walk along one axis and keep it: cumsum (running sums) and topk (the k largest or
// smallest elements, with their indices). Relay's names and attributes; cumsum adds ONNX's
// `reverse`.
#include "ir/op.h"
#include "ir/ops/infer_util.h"

namespace kiln::ir {
namespace {

using runtime::Check;

Type Cumsum(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  Check(data.ndim() > 0, "needs a tensor of at least one dimension");
  NormalizeAxis(attrs.GetInt("axis"), data.ndim());
  return Type::Tensor(data);
}

// topk: (values, int64 indices), the axis cut to k.
Type Topk(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  Check(data.ndim() > 0, "needs a tensor of at least one dimension");
  int axis = NormalizeAxis(attrs.GetInt("axis"), data.ndim());
  int64_t k = attrs.GetInt("k");
  Check(k >= 0 && k <= data.shape[axis], "k = ", k, " must be in [0, ", data.shape[axis], "], the axis' length");
  Check(attrs.GetString("ret_type") == "both", "ret_type '", attrs.GetString("ret_type"),
        "' is not supported (only both: values and indices)");
  std::vector<int64_t> shape = data.shape;
  shape[axis] = k;
  return Type::Tuple({Type::Tensor(shape, data.dtype), Type::Tensor(shape, DLDataType{kDLInt, 64, 1})});
}

void Add(OpTable& table, OpDef op) { table[op.name] = std::move(op); }

}  // namespace

void RegisterAlongAxisOps(OpTable& table) {
  Add(table, {"cumsum", 1, 1,
              {{"axis", AttrKind::kInt, int64_t{0}, "the axis summed along"},
               {"exclusive", AttrKind::kInt, int64_t{0}, "each sum leaves out its own element"},
               {"reverse", AttrKind::kInt, int64_t{0}, "sum from the end of the axis"}},
              OpPattern::kOpaque, Cumsum, "running sums along an axis"});
  Add(table, {"topk", 1, 1,
              {{"k", AttrKind::kInt, {}, "how many"},
               {"axis", AttrKind::kInt, int64_t{-1}, "the axis searched"},
               {"ret_type", AttrKind::kString, std::string("both"), "both: values and indices"},
               {"is_ascend", AttrKind::kInt, int64_t{0}, "the smallest (else the largest), in ascending order"}},
              OpPattern::kOpaque, Topk,
              "the k largest (or smallest) elements along an axis, sorted, and their indices (ties: lower first)"});
}

}  // namespace kiln::ir
