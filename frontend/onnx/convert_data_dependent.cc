// ONNX ops whose output shapes depend on the data: NonZero, Compress, Unique and
// NonMaxSuppression. Each becomes an IR op computing into its static maximum with a count (see
// RaggedAxesFn in ir/op.h); the importer lets such values be outputs of the model only, and the
// executor trims them (docs/architecture.md, "Outputs whose shape depends on the data").
#include <algorithm>

#include "frontend/onnx/converter.h"

namespace kiln::frontend {

using namespace ir;

namespace {

const OpRef kCompress("compress");
const OpRef kNonMaxSuppression("vision.non_max_suppression");
const OpRef kNonZero("nonzero");
const OpRef kReshape("reshape");
const OpRef kUnique("unique");

using Outputs = std::vector<Expr>;
using Ints = std::vector<int64_t>;

constexpr DLDataType kInt64{kDLInt, 64, 1};

// The fields of a tuple-valued call, in order.
Outputs Fields(const Expr& tuple, size_t count) {
  Outputs fields;
  for (size_t i = 0; i < count; ++i) fields.push_back(TupleGetItem(tuple, static_cast<int>(i)));
  return fields;
}

Expr Flatten(const NodeContext& c, const Expr& x) {
  return c.Op(kReshape, {x}, MakeAttrs({{"newshape", Ints{x->type().tensor().NumElements()}}}));
}

Outputs NonZero(const NodeContext& c) { return Fields(c.Op(kNonZero, {c.input(0)}), 1); }

// Without an axis, over the flattened input.
Outputs Compress(const NodeContext& c) {
  Expr data = c.input(0);
  int64_t axis = 0;
  if (c.has_attr("axis")) axis = NormalizeAxis(c.attr_int("axis"), c.input_type(0).ndim(), c);
  else data = Flatten(c, data);
  return Fields(c.Op(kCompress, {data, c.input(1)}, MakeAttrs({{"axis", axis}})), 1);
}

// Y, indices, inverse_indices, counts; without an axis, over the flattened input.
Outputs Unique(const NodeContext& c) {
  Expr data = c.input(0);
  int64_t axis = 0;
  if (c.has_attr("axis")) axis = NormalizeAxis(c.attr_int("axis"), c.input_type(0).ndim(), c);
  else data = Flatten(c, data);
  int64_t sorted = c.attr_int("sorted", 1);
  if (sorted != 0 && sorted != 1) c.FailAt("attribute 'sorted'", "must be 0 or 1");
  return Fields(c.Op(kUnique, {data}, MakeAttrs({{"axis", axis}, {"sorted", sorted}})), 4);
}

// Absent inputs take ONNX's defaults: no box kept, IoU threshold 0, no score threshold. A constant
// max_output_boxes_per_class also bounds the padded result.
Outputs NonMaxSuppression(const NodeContext& c) {
  Expr max_output = c.has_input(2) ? c.input(2) : ScalarOf(kInt64, 0);
  Expr iou = c.has_input(3) ? c.input(3) : ScalarOf(runtime::kFloat32, 0);
  Expr score = c.has_input(4) ? c.input(4) : ScalarOf(runtime::kFloat32, 0);
  int64_t bound = -1;
  if (!c.has_input(2)) {
    bound = 0;
  } else if (c.IsConstant(2)) {
    Ints value = c.ConstantInts(2);
    if (value.size() != 1) c.FailAt("input 2", "max_output_boxes_per_class must hold one value");
    bound = std::max<int64_t>(value[0], 0);
  }
  Attrs attrs = MakeAttrs({{"center_point_box", c.attr_int("center_point_box", 0)},
                           {"max_output_size", bound},
                           {"use_score_threshold", int64_t{c.has_input(4)}}});
  return Fields(c.Op(kNonMaxSuppression, {c.input(0), c.input(1), max_output, iou, score}, attrs), 1);
}

}  // namespace

void AddDataDependentConverters(ConverterTable& table) {
  Register(table, "NonZero", NonZero, 9);
  Register(table, "Compress", Compress, 9);
  Register(table, "Unique", Unique, 11);
  Register(table, "NonMaxSuppression", NonMaxSuppression, 10);
}

}  // namespace kiln::frontend
