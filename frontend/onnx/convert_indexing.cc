// ONNX ops that index with a tensor or walk along an axis: GatherElements, GatherND, Scatter,
// ScatterElements, ScatterND, OneHot, Tile, CumSum and TopK.
#include <cmath>

#include "frontend/onnx/converter.h"
#include "runtime/error.h"

namespace kiln::frontend {

using namespace ir;
using runtime::StrCat;

namespace {

const OpRef kCast("cast");
const OpRef kReshape("reshape");
const OpRef kCumsum("cumsum");
const OpRef kDynCumsum("dyn.cumsum");
const OpRef kDynTopk("dyn.topk");
const OpRef kDynTile("dyn.tile");
const OpRef kDynTileShape("dyn.tile_shape");
const OpRef kDynOneHot("dyn.one_hot");
const OpRef kDynOneHotShape("dyn.one_hot_shape");
const OpRef kGather("gather");
const OpRef kGatherNd("gather_nd");
const OpRef kOneHot("one_hot");
const OpRef kScatterElements("scatter_elements");
const OpRef kScatterNd("scatter_nd");
const OpRef kTake("take");
const OpRef kTile("tile");
const OpRef kTopk("topk");
const OpRef kTranspose("transpose");

using Outputs = std::vector<Expr>;
using Ints = std::vector<int64_t>;

// ONNX's index tuples lie along the last dimension of its indices; the IR's gather_nd and
// scatter_nd want them along the first (Relay's layout).
Expr TuplesFirst(const NodeContext& c, const Expr& indices) {
  int64_t rank = indices->type().tensor().ndim();
  Ints axes = {rank - 1};
  for (int64_t d = 0; d + 1 < rank; ++d) axes.push_back(d);
  return c.Op(kTranspose, {indices}, MakeAttrs({{"axes", axes}}));
}

// ScatterElements' and ScatterND's reduction (opset 16 on; none before).
std::string Reduction(const NodeContext& c) {
  std::string reduction = c.opset() >= 16 ? c.attr_string("reduction", "none") : "none";
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "min" && reduction != "max") {
    c.FailAt("attribute 'reduction'", StrCat("'", reduction, "' is not none, add, mul, min or max"));
  }
  return reduction == "none" ? "update" : reduction;
}

Outputs GatherElements(const NodeContext& c) {
  int64_t axis = NormalizeAxis(c.attr_int("axis", 0), c.input_type(0).ndim(), c);
  return {c.Op(kGather, {c.input(0), c.input(1)}, MakeAttrs({{"axis", axis}}))};
}

Outputs GatherND(const NodeContext& c) {
  return {c.Op(kGatherNd, {c.input(0), TuplesFirst(c, c.input(1))},
               MakeAttrs({{"batch_dims", c.attr_int("batch_dims", 0)}}))};
}

// ScatterElements, and Scatter (its name before opset 11).
Outputs ScatterElements(const NodeContext& c) {
  int64_t axis = NormalizeAxis(c.attr_int("axis", 0), c.input_type(0).ndim(), c);
  return {c.Op(kScatterElements, {c.input(0), c.input(1), c.input(2)},
               MakeAttrs({{"axis", axis}, {"reduction", Reduction(c)}}))};
}

Outputs ScatterND(const NodeContext& c) {
  return {c.Op(kScatterNd, {c.input(0), TuplesFirst(c, c.input(1)), c.input(2)}, MakeAttrs({{"mode", Reduction(c)}}))};
}

Outputs Tile(const NodeContext& c) {
  if (!c.IsConstant(1)) {
    return {SizedAtRunTime(c, kDynTileShape, kDynTile, {c.input(0), c.input(1)}, {c.input(0), c.input(1)})};
  }
  return {c.Op(kTile, {c.input(0)}, MakeAttrs({{"reps", c.ConstantInts(1)}}))};
}

// Indices of another type than int64 cast to it, as ONNX says (ONNX Runtime 1.19 compared floats
// unconverted; later versions cast).
Expr Int64(const NodeContext& c, const Expr& x) {
  if (x->type().tensor().dtype == DLDataType{kDLInt, 64, 1}) return x;
  return c.Op(kCast, {x}, MakeAttrs({{"dtype", std::string("int64")}}));
}

// OneHot of a depth given at run time (ir/ops/run_time_sized.cc): the depth truncated to int64.
Outputs OneHotAtRunTime(const NodeContext& c) {
  if (c.input_type(1).NumElements() != 1) c.FailAt("input 1", "the depth must be one value");
  if (c.input_type(2).NumElements() != 2) c.FailAt("input 2", "values must hold 2 values (off, on)");
  Expr depth = c.Op(kReshape, {Int64(c, c.input(1))}, MakeAttrs({{"newshape", Ints{}}}));
  Expr indices = Int64(c, c.input(0));
  int64_t axis = NormalizeAxis(c.attr_int("axis", -1), c.input_type(0).ndim() + 1, c);
  Expr values = c.Op(kReshape, {c.input(2)}, MakeAttrs({{"newshape", Ints{2}}}));
  Attrs attrs = MakeAttrs({{"axis", axis}});
  return {SizedAtRunTime(c, kDynOneHotShape, kDynOneHot, {indices, depth}, {indices, values, depth}, attrs)};
}

// OneHot: indices of any numeric type, depth one constant value, values [off_value, on_value].
Outputs OneHot(const NodeContext& c) {
  if (!c.IsConstant(1)) return OneHotAtRunTime(c);
  double depth = c.ConstantScalar(1);
  if (!(depth >= 1 && depth <= double{1 << 30})) c.FailAt("input 1", StrCat("depth ", depth, " must be in [1, 2^30]"));
  if (c.input_type(2).NumElements() != 2) {
    c.FailAt("input 2", StrCat("values must hold 2 values (off, on), it holds ", c.input_type(2).NumElements()));
  }
  Expr indices = c.input_type(0).dtype.code == kDLInt ? c.input(0) : Int64(c, c.input(0));
  auto value = [&](int64_t i) { return c.Op(kTake, {c.input(2), ScalarOf({kDLInt, 64, 1}, static_cast<double>(i))}); };
  int64_t axis = NormalizeAxis(c.attr_int("axis", -1), c.input_type(0).ndim() + 1, c);
  return {c.Op(kOneHot, {indices, value(1), value(0)},
               MakeAttrs({{"depth", static_cast<int64_t>(std::trunc(depth))}, {"axis", axis}}))};
}

Outputs CumSum(const NodeContext& c) {
  if (!c.IsConstant(1)) {  // the axis given at run time (ir/ops/run_time_shaped.cc)
    return {c.Op(kDynCumsum, {c.input(0), c.input(1)},
                 MakeAttrs({{"exclusive", c.attr_int("exclusive", 0)}, {"reverse", c.attr_int("reverse", 0)}}))};
  }
  Ints axis = c.ConstantInts(1);
  if (axis.size() != 1) c.FailAt("input 1", StrCat("axis must hold one value, it holds ", axis.size()));
  return {c.Op(kCumsum, {c.input(0)},
               MakeAttrs({{"axis", NormalizeAxis(axis[0], c.input_type(0).ndim(), c)},
                          {"exclusive", c.attr_int("exclusive", 0)},
                          {"reverse", c.attr_int("reverse", 0)}}))};
}

// TopK: k an attribute before opset 10, then an input; always sorted (sorted = 0 allows any order).
Outputs TopK(const NodeContext& c) {
  int64_t k = 0;
  if (c.opset() < 10) {
    k = c.attr_int("k");
  } else if (!c.IsConstant(1)) {  // K given at run time (ir/ops/run_time_shaped.cc)
    Expr all = c.Op(kDynTopk, {c.input(0), c.input(1)},
                    MakeAttrs({{"axis", c.attr_int("axis", -1)}, {"largest", c.attr_int("largest", 1)}}));
    return {TupleGetItem(all, 0), TupleGetItem(all, 1)};
  } else {
    Ints values = c.ConstantInts(1);
    if (values.size() != 1) c.FailAt("input 1", StrCat("K must hold one value, it holds ", values.size()));
    k = values[0];
  }
  int64_t axis = NormalizeAxis(c.attr_int("axis", -1), c.input_type(0).ndim(), c);
  Expr both = c.Op(kTopk, {c.input(0)},
                   MakeAttrs({{"k", k}, {"axis", axis}, {"is_ascend", int64_t{c.attr_int("largest", 1) == 0}}}));
  return {TupleGetItem(both, 0), TupleGetItem(both, 1)};
}

}  // namespace

void AddIndexingConverters(ConverterTable& table) {
  Register(table, "GatherElements", GatherElements);
  Register(table, "GatherND", GatherND);
  Register(table, "Scatter", ScatterElements, 9);
  Register(table, "ScatterElements", ScatterElements);
  Register(table, "ScatterND", ScatterND);
  Register(table, "Tile", Tile, 6);
  Register(table, "OneHot", OneHot, 9);
  Register(table, "CumSum", CumSum);
  Register(table, "TopK", TopK, 1);
}

}  // namespace kiln::frontend
