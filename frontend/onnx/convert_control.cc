// ONNX control flow, resolved at import (docs/architecture.md, "Control flow"): an If whose
// condition folds to a constant becomes the taken branch; one decided at run time imports both
// branches and selects each output with `if_then_else`, whose sides the graph executor runs only
// when taken. Loop and Scan are unrolled: a Loop's trip count
// and every iteration's condition must fold to constants, a Scan's sequence length is its input's
// static length; each iteration is the body imported again with that iteration's values.
#include <algorithm>

#include "frontend/onnx/converter.h"
#include "runtime/error.h"

namespace kiln::frontend {

using namespace ir;
using runtime::StrCat;

namespace {

const OpRef kConcatenate("concatenate");
const OpRef kExpandDims("expand_dims");
const OpRef kReshape("reshape");
const OpRef kIfThenElse("if_then_else");
const OpRef kTake("take");

using Outputs = std::vector<Expr>;
using Ints = std::vector<int64_t>;

// More iterations than this, or more body nodes imported in all, are refused rather than unrolled
// (the graph grows by the body each time).
constexpr int64_t kMaxUnrolledIterations = 1024;
constexpr int64_t kMaxUnrolledNodes = 1 << 16;

// Throws Error when `iterations` copies of the body would hold too many nodes.
void CheckUnrolledSize(const NodeContext& c, int64_t iterations) {
  int64_t nodes = 0;
  for (const auto& attr : c.node().attribute()) {
    if (attr.name() == "body") nodes = attr.g().node_size();
  }
  if (iterations > kMaxUnrolledIterations || iterations * std::max<int64_t>(nodes, 1) > kMaxUnrolledNodes) {
    c.Fail(StrCat("unrolling ", iterations, " iterations of a body of ", nodes, " nodes exceeds kiln's bound (",
                  kMaxUnrolledIterations, " iterations, ", kMaxUnrolledNodes, " nodes)"));
  }
}

// The one value of a constant boolean or number, as a condition; nullopt when `value` is not a
// constant.
std::optional<bool> ConstantCondition(const NodeContext& c, const Expr& value, const std::string& what) {
  const auto* constant = value->As<ConstantNode>();
  if (constant == nullptr) return std::nullopt;
  const runtime::NDArray& a = constant->value;
  int64_t count = value->type().tensor().NumElements();
  if (count != 1) c.Fail(StrCat(what, " must hold one value, it holds ", count));
  DLDataType d = a.dtype();
  const auto* bytes = static_cast<const uint8_t*>(a.data());
  bool nonzero = false;
  for (int64_t i = 0; i < runtime::DTypeBytes(d); ++i) nonzero = nonzero || bytes[i] != 0;
  return nonzero;
}

// If: the taken branch when the condition folds; else both branches, each output selected at run time.
Outputs If(const NodeContext& c) {
  if (std::optional<bool> taken = ConstantCondition(c, c.input(0), "the condition (input 0)")) {
    return c.ImportGraph(*taken ? "then_branch" : "else_branch", {});
  }
  if (c.input_type(0).NumElements() != 1) {
    c.FailAt("input 0", StrCat("the condition must hold one value, it holds ", c.input_type(0).NumElements()));
  }
  Outputs then_outputs = c.ImportGraph("then_branch", {}), else_outputs = c.ImportGraph("else_branch", {});
  if (then_outputs.size() != else_outputs.size()) {
    c.Fail(StrCat("the then branch gives ", then_outputs.size(), " outputs and the else branch ", else_outputs.size()));
  }
  Expr condition = c.Op(kReshape, {c.input(0)}, MakeAttrs({{"newshape", Ints{}}}));
  Outputs outputs;
  for (size_t k = 0; k < then_outputs.size(); ++k) {
    const Type& a = then_outputs[k]->type();
    const Type& b = else_outputs[k]->type();
    if (!(a == b)) {
      c.Fail(StrCat("output ", k, ": the then branch gives ", a.ToString(), " and the else branch ", b.ToString(),
                    "; an If whose condition is known only at run time must give one type on both branches"));
    }
    outputs.push_back(c.Op(kIfThenElse, {condition, then_outputs[k], else_outputs[k]}));
  }
  return outputs;
}

// The values of one scan output over the iterations, stacked along `axis` (in order, or reversed).
Expr Stack(const NodeContext& c, std::vector<Expr> values, int64_t axis, bool reverse) {
  if (reverse) std::reverse(values.begin(), values.end());
  int64_t rank = values[0]->type().tensor().ndim() + 1;
  axis = NormalizeAxis(axis, rank, c);
  for (Expr& v : values) v = c.Op(kExpandDims, {v}, MakeAttrs({{"axis", axis}}));
  return values.size() == 1 ? values[0] : c.Op(kConcatenate, values, MakeAttrs({{"axis", axis}}));
}

// Loop: body(iteration, condition, carried...) -> (condition, carried..., scanned...), unrolled.
Outputs Loop(const NodeContext& c) {
  std::optional<int64_t> trips;
  if (c.has_input(0)) {
    if (!c.IsConstant(0)) c.FailAt("input 0", "the trip count must be a constant (kiln unrolls loops at import)");
    Ints m = c.ConstantInts(0);
    if (m.size() != 1) c.FailAt("input 0", StrCat("the trip count must hold one value, it holds ", m.size()));
    trips = std::max<int64_t>(m[0], 0);
  }
  bool running = true;
  if (c.has_input(1)) {
    std::optional<bool> condition = ConstantCondition(c, c.input(1), "the condition (input 1)");
    if (!condition) c.FailAt("input 1", "the condition must be a constant (kiln unrolls loops at import)");
    running = *condition;
  }
  std::vector<Expr> carried;
  for (size_t i = 2; i < c.num_inputs(); ++i) carried.push_back(c.input(i));
  std::vector<std::vector<Expr>> scanned;
  int64_t iteration = 0;
  for (; running && (!trips || iteration < *trips); ++iteration) {
    CheckUnrolledSize(c, iteration + 1);
    std::vector<Expr> inputs = {ScalarOf({kDLInt, 64, 1}, static_cast<double>(iteration)), ScalarOf({kDLUInt, 1, 1}, 1)};
    inputs.insert(inputs.end(), carried.begin(), carried.end());
    std::vector<Expr> outputs = c.ImportGraph("body", inputs);
    if (outputs.size() < 1 + carried.size()) {
      c.Fail(StrCat("the body gives ", outputs.size(), " outputs; it must give the condition and ", carried.size(),
                    " carried values"));
    }
    std::optional<bool> condition = ConstantCondition(c, outputs[0], "the body's condition");
    if (!condition) {
      c.Fail(StrCat("the body's condition after iteration ", iteration,
                    " is computed at run time; kiln unrolls loops whose condition folds at import"));
    }
    running = *condition;
    std::copy(outputs.begin() + 1, outputs.begin() + 1 + static_cast<int64_t>(carried.size()), carried.begin());
    scanned.resize(outputs.size() - 1 - carried.size());
    for (size_t k = 0; k < scanned.size(); ++k) scanned[k].push_back(outputs[1 + carried.size() + k]);
  }
  if (iteration == 0 && c.num_outputs() > carried.size()) {
    c.Fail("runs no iteration, so its scan outputs are empty tensors of unknown shape");
  }
  Outputs results = carried;
  for (auto& values : scanned) results.push_back(Stack(c, values, 0, false));
  return results;
}

// One Scan over its scan inputs' slices along `axes` (reversed where `directions` says), the body
// imported once per step: the final state values, then each scan output's values over the steps.
struct ScanResult {
  std::vector<Expr> state;
  std::vector<std::vector<Expr>> scanned;
};

ScanResult RunScan(const NodeContext& c, std::vector<Expr> state, const std::vector<Expr>& sequences, Ints axes,
                   const Ints& directions) {
  if (axes.size() != sequences.size() || directions.size() != sequences.size()) {
    c.Fail(StrCat("the scan axes and directions must give each of the ", sequences.size(), " scan inputs"));
  }
  int64_t length = -1;
  for (size_t j = 0; j < sequences.size(); ++j) {
    const TensorType& t = sequences[j]->type().tensor();
    axes[j] = NormalizeAxis(axes[j], t.ndim(), c);
    if (length >= 0 && t.shape[axes[j]] != length) {
      c.Fail(StrCat("scan input ", j, " has ", t.shape[axes[j]], " steps; the first has ", length));
    }
    length = t.shape[axes[j]];
  }
  if (length == 0) c.Fail("the scan inputs have no steps, so the scan outputs are empty tensors of unknown shape");
  CheckUnrolledSize(c, length);
  ScanResult result{std::move(state), {}};
  auto states = static_cast<int64_t>(result.state.size());
  for (int64_t step = 0; step < length; ++step) {
    std::vector<Expr> inputs = result.state;
    for (size_t j = 0; j < sequences.size(); ++j) {
      int64_t at = directions[j] != 0 ? length - 1 - step : step;
      inputs.push_back(c.Op(kTake, {sequences[j], ScalarOf({kDLInt, 64, 1}, static_cast<double>(at))}, MakeAttrs({{"axis", axes[j]}})));
    }
    std::vector<Expr> outputs = c.ImportGraph("body", inputs);
    if (static_cast<int64_t>(outputs.size()) < states) {
      c.Fail(StrCat("the body gives ", outputs.size(), " outputs for ", states, " state values"));
    }
    std::copy(outputs.begin(), outputs.begin() + states, result.state.begin());
    result.scanned.resize(outputs.size() - states);
    for (size_t k = 0; k < result.scanned.size(); ++k) result.scanned[k].push_back(outputs[states + k]);
  }
  return result;
}

// Scan from opset 9: body(state..., slices...) -> (state..., scanned...) over the scan inputs'
// slices along their axes, unrolled; scan outputs stacked along their axes.
Outputs Scan(const NodeContext& c) {
  int64_t scan_inputs = c.attr_int("num_scan_inputs");
  if (scan_inputs < 1 || scan_inputs > static_cast<int64_t>(c.num_inputs())) {
    c.FailAt("attribute 'num_scan_inputs'", StrCat(scan_inputs, " does not fit the ", c.num_inputs(), " inputs"));
  }
  auto states = static_cast<int64_t>(c.num_inputs()) - scan_inputs;
  std::vector<Expr> state, sequences;
  for (int64_t i = 0; i < states; ++i) state.push_back(c.input(i));
  for (int64_t j = 0; j < scan_inputs; ++j) sequences.push_back(c.input(states + j));
  ScanResult r = RunScan(c, state, sequences, c.attr_ints("scan_input_axes", Ints(scan_inputs, 0)),
                         c.attr_ints("scan_input_directions", Ints(scan_inputs, 0)));
  auto count = static_cast<int64_t>(r.scanned.size());
  Ints out_axes = c.attr_ints("scan_output_axes", Ints(count, 0));
  Ints out_directions = c.attr_ints("scan_output_directions", Ints(count, 0));
  if (static_cast<int64_t>(out_axes.size()) != count || static_cast<int64_t>(out_directions.size()) != count) {
    c.Fail(StrCat("scan_output_axes and scan_output_directions must give each of the ", count, " scan outputs"));
  }
  Outputs results = r.state;
  for (int64_t k = 0; k < count; ++k) results.push_back(Stack(c, r.scanned[k], out_axes[k], out_directions[k] != 0));
  return results;
}

// Scan at opset 8: every input has a batch axis first, scanned along axis 1; each batch element is
// scanned on its own and the results stacked. sequence_lens (input 0) must be absent or the full
// length everywhere.
Outputs Scan8(const NodeContext& c) {
  int64_t scan_inputs = c.attr_int("num_scan_inputs");
  if (scan_inputs < 1 || scan_inputs >= static_cast<int64_t>(c.num_inputs())) {
    c.FailAt("attribute 'num_scan_inputs'", StrCat(scan_inputs, " does not fit the ", c.num_inputs(), " inputs"));
  }
  auto states = static_cast<int64_t>(c.num_inputs()) - 1 - scan_inputs;
  const TensorType& first = c.input_type(1 + states);
  if (first.ndim() < 2) c.FailAt(StrCat("input ", 1 + states), "must have a batch axis and a sequence axis");
  int64_t batch = first.shape[0], length = first.shape[1];
  if (c.has_input(0)) {
    for (int64_t n : c.ConstantInts(0)) {
      if (n != length) c.FailAt("input 0", StrCat("sequence length ", n, " differs from the full ", length));
    }
  }
  CheckUnrolledSize(c, std::min<int64_t>(batch, 1 << 20) * std::min<int64_t>(length, 1 << 20));
  Ints directions = c.attr_ints("directions", Ints(scan_inputs, 0));
  std::vector<std::vector<Expr>> per_output;
  for (int64_t b = 0; b < batch; ++b) {
    auto element = [&](size_t input) {
      return c.Op(kTake, {c.input(input), ScalarOf({kDLInt, 64, 1}, static_cast<double>(b))}, MakeAttrs({{"axis", int64_t{0}}}));
    };
    std::vector<Expr> state, sequences;
    for (int64_t i = 0; i < states; ++i) state.push_back(element(1 + i));
    for (int64_t j = 0; j < scan_inputs; ++j) sequences.push_back(element(1 + states + j));
    ScanResult r = RunScan(c, state, sequences, Ints(scan_inputs, 0), directions);
    Outputs results = r.state;
    for (auto& values : r.scanned) results.push_back(Stack(c, values, 0, false));
    per_output.resize(results.size());
    for (size_t k = 0; k < results.size(); ++k) per_output[k].push_back(results[k]);
  }
  Outputs results;
  for (auto& values : per_output) results.push_back(Stack(c, values, 0, false));
  return results;
}

// Scan: its opset-8 form (batched) or the later one.
Outputs AnyScan(const NodeContext& c) { return c.opset() < 9 ? Scan8(c) : Scan(c); }

}  // namespace

void AddControlConverters(ConverterTable& table) {
  Register(table, "If", If, 1);
  Register(table, "Loop", Loop, 1);
  Register(table, "Scan", AnyScan, 8);
}

}  // namespace kiln::frontend
