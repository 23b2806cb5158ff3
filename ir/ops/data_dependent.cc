// Ops whose result extents depend on the data, computed into their static maximum with a count
// (RaggedAxesFn in ir/op.h): nonzero (ONNX NonZero), compress (ONNX Compress along an axis), unique
// (ONNX Unique along an axis) and vision.non_max_suppression (ONNX NonMaxSuppression's selected
// indices). Relay runs these with dynamic shapes; kiln's graphs are static, so each result is
// padded and its count travels beside it.
#include <algorithm>

#include "ir/op.h"
#include "ir/ops/infer_util.h"

namespace kiln::ir {
namespace {

using runtime::Check;

constexpr DLDataType kInt64{kDLInt, 64, 1};
constexpr DLDataType kBool{kDLUInt, 1, 1};

Type Count() { return Type::Tensor({}, kInt64); }

// nonzero: ([rank, elements] int64 coordinates of the non-zero elements in row-major order, count).
Type NonZero(const std::vector<Type>& args, const Attrs&) {
  const TensorType& data = TensorArg(args, 0);
  Check(data.ndim() > 0, "needs a tensor of at least one dimension, got a scalar");
  return Type::Tuple({Type::Tensor({data.ndim(), data.NumElements()}, kInt64), Count()});
}
std::vector<int> NonZeroRagged(const Attrs&, const Type&) { return {1, -1}; }

// compress: (the slices of data along `axis` whose condition is true, count). A condition shorter
// than the axis drops the slices after it.
Type Compress(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  const TensorType& condition = TensorArg(args, 1);
  Check(data.ndim() > 0, "needs a tensor of at least one dimension, got a scalar");
  int axis = NormalizeAxis(attrs.GetInt("axis"), data.ndim());
  Check(condition.ndim() == 1 && condition.dtype == kBool, "the condition must be a 1-D bool tensor, got ",
        ShapeText(condition.shape));
  Check(condition.shape[0] <= data.shape[axis], "the condition has ", condition.shape[0],
        " values, more than the ", data.shape[axis], " slices along axis ", axis);
  std::vector<int64_t> shape = data.shape;
  shape[axis] = condition.shape[0];
  return Type::Tuple({Type::Tensor(shape, data.dtype), Count()});
}
std::vector<int> CompressRagged(const Attrs& attrs, const Type& result) {
  int ndim = result.fields()[0].tensor().ndim();
  return {NormalizeAxis(attrs.GetInt("axis"), ndim), -1};
}

// unique: (the distinct slices along `axis`, the index of each one's first occurrence, for every
// slice the index of its distinct slice, each distinct slice's number of occurrences, count).
Type Unique(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& data = TensorArg(args, 0);
  Check(data.ndim() > 0, "needs a tensor of at least one dimension, got a scalar");
  int axis = NormalizeAxis(attrs.GetInt("axis"), data.ndim());
  int64_t slices = data.shape[axis];
  Type per_slice = Type::Tensor({slices}, kInt64);
  return Type::Tuple({Type::Tensor(data), per_slice, per_slice, per_slice, Count()});
}
std::vector<int> UniqueRagged(const Attrs& attrs, const Type& result) {
  int ndim = result.fields()[0].tensor().ndim();
  return {NormalizeAxis(attrs.GetInt("axis"), ndim), 0, -1, 0, -1};
}

// vision.non_max_suppression(boxes [batches, boxes, 4], scores [batches, classes, boxes],
// max_output_boxes_per_class, iou_threshold, score_threshold): ([selected, 3] int64 rows of
// (batch, class, box), count). `max_output_size` bounds the boxes kept per class when the model
// gives the bound as a constant (-1: as many as there are boxes).
Type NonMaxSuppression(const std::vector<Type>& args, const Attrs& attrs) {
  const TensorType& boxes = TensorArg(args, 0);
  const TensorType& scores = TensorArg(args, 1);
  Check(boxes.ndim() == 3 && boxes.shape[2] == 4, "boxes must be [batches, boxes, 4], got ", ShapeText(boxes.shape));
  Check(scores.ndim() == 3 && scores.shape[0] == boxes.shape[0] && scores.shape[2] == boxes.shape[1],
        "scores must be [batches, classes, boxes] = [", boxes.shape[0], ", classes, ", boxes.shape[1], "], got ",
        ShapeText(scores.shape));
  Check(boxes.dtype == runtime::kFloat32 && scores.dtype == runtime::kFloat32, "boxes and scores must be float32");
  const char* names[] = {"max_output_boxes_per_class", "iou_threshold", "score_threshold"};
  for (size_t i = 2; i < 5; ++i) {
    const TensorType& t = TensorArg(args, i);
    Check(t.NumElements() == 1, names[i - 2], " must hold one value, got ", ShapeText(t.shape));
    Check(t.dtype == (i == 2 ? kInt64 : runtime::kFloat32), names[i - 2], " must be ",
          i == 2 ? "int64" : "float32");
  }
  int64_t center_point_box = attrs.GetInt("center_point_box");
  Check(center_point_box == 0 || center_point_box == 1, "center_point_box must be 0 or 1, got ", center_point_box);
  int64_t bound = attrs.GetInt("max_output_size");
  int64_t per_class = bound < 0 ? boxes.shape[1] : std::min(bound, boxes.shape[1]);
  return Type::Tuple({Type::Tensor({boxes.shape[0] * scores.shape[1] * per_class, 3}, kInt64), Count()});
}
std::vector<int> NonMaxSuppressionRagged(const Attrs&, const Type&) { return {0, -1}; }

void Add(OpTable& table, OpDef op) { table[op.name] = std::move(op); }

OpDef WithRaggedAxes(OpDef op, RaggedAxesFn ragged_axes) {
  op.ragged_axes = ragged_axes;
  return op;
}

}  // namespace

void RegisterDataDependentOps(OpTable& table) {
  Add(table, WithRaggedAxes({"nonzero", 1, 1, {}, OpPattern::kOpaque, NonZero,
                             "the coordinates of the non-zero elements, one row per dimension"},
                            NonZeroRagged));
  Add(table, WithRaggedAxes({"compress", 2, 2, {{"axis", AttrKind::kInt, {}, "the axis whose slices are kept or dropped"}},
                             OpPattern::kOpaque, Compress, "the slices along an axis whose condition is true"},
                            CompressRagged));
  Add(table, WithRaggedAxes({"unique", 1, 1,
                             {{"axis", AttrKind::kInt, {}, "the axis whose slices are compared"},
                              {"sorted", AttrKind::kInt, int64_t{1}, "ascending order (else first occurrence)"}},
                             OpPattern::kOpaque, Unique,
                             "the distinct slices along an axis, their first indices, inverse indices and counts"},
                            UniqueRagged));
  Add(table, WithRaggedAxes({"vision.non_max_suppression", 5, 5,
                             {{"center_point_box", AttrKind::kInt, int64_t{0}, "boxes as (x, y, w, h) (else two corners)"},
                              {"max_output_size", AttrKind::kInt, int64_t{-1}, "a static bound on the boxes kept per class"},
                              {"use_score_threshold", AttrKind::kInt, int64_t{0}, "drop boxes scoring at most the threshold"}},
                             OpPattern::kOpaque, NonMaxSuppression,
                             "greedy non-maximum suppression per batch and class: the kept (batch, class, box) rows"},
                            NonMaxSuppressionRagged));
}

}  // namespace kiln::ir
