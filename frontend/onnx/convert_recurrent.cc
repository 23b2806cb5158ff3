// ONNX's recurrent layers, LSTM, GRU and RNN, unrolled over their static sequence length as TVM's
// ONNX frontend does: the input projection of every step in one dense layer, then per step the
// recurrent projection and the gates as elementwise ops. Forward, reverse and bidirectional;
// initial states, sequence_lens (a batch entry's steps past its length keep its state and output
// zeros), every activation the spec allows with activation_alpha / beta, clip, input_forget,
// peepholes, GRU's linear_before_reset, layout 0 and 1.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <utility>

#include "frontend/onnx/converter.h"
#include "runtime/dtype.h"
#include "runtime/error.h"

namespace kiln::frontend {

using namespace ir;
using runtime::StrCat;

namespace {

const OpRef kAdd("add");
const OpRef kClip("clip");
const OpRef kConcatenate("concatenate");
const OpRef kDense("nn.dense");
const OpRef kElu("nn.elu");
const OpRef kLeakyRelu("nn.leaky_relu");
const OpRef kLess("less");
const OpRef kMultiply("multiply");
const OpRef kRelu("nn.relu");
const OpRef kReshape("reshape");
const OpRef kSigmoid("sigmoid");
const OpRef kSoftplus("nn.softplus");
const OpRef kSoftsign("nn.softsign");
const OpRef kStridedSlice("strided_slice");
const OpRef kSubtract("subtract");
const OpRef kTake("take");
const OpRef kTanh("tanh");
const OpRef kThresholdedRelu("nn.thresholded_relu");
const OpRef kTranspose("transpose");
const OpRef kWhere("where");

using Outputs = std::vector<Expr>;
using Ints = std::vector<int64_t>;

// One activation of the layer with its alpha and beta (those it takes, in activation_alpha/beta order).
struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

// What every recurrent layer shares: the node, its sizes, and the ops it is made of.
class Recurrence {
 public:
  Recurrence(const NodeContext& c, int64_t gates, std::vector<std::string> default_activations,
             std::function<Expr(const Expr&)> hidden_operand = {})
      : c_(c), gates_(gates), hidden_operand_(std::move(hidden_operand)) {
    const TensorType& x = c.input_type(0);
    if (x.ndim() != 3) c.FailAt("input 0", StrCat("must have rank 3, got ", x.ndim()));
    layout_ = c.attr_int("layout", 0);
    if (layout_ != 0 && layout_ != 1) c.FailAt("attribute 'layout'", "must be 0 or 1");
    steps_ = x.shape[layout_ == 0 ? 0 : 1];
    // The layer is unrolled over its steps at import: a bound keeps the graph's size in reason.
    if (steps_ > (int64_t{1} << 14)) {
      c.FailAt("input 0", StrCat(steps_, " time steps exceed the ", int64_t{1} << 14, " kiln unrolls"));
    }
    batch_ = x.shape[layout_ == 0 ? 1 : 0];
    if (batch_ > (int64_t{1} << 24)) c.FailAt("input 0", StrCat("a batch of ", batch_, " is more than kiln unrolls"));
    hidden_ = c.attr_int("hidden_size");
    if (hidden_ < 1 || hidden_ > (int64_t{1} << 24)) c.FailAt("attribute 'hidden_size'", StrCat(hidden_, " must be in [1, 2^24]"));
    std::string direction = c.attr_string("direction", "forward");
    if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
      c.FailAt("attribute 'direction'", "'" + direction + "' is not forward, reverse or bidirectional");
    }
    reverse_ = direction == "reverse";
    directions_ = direction == "bidirectional" ? 2 : 1;
    const TensorType& w = c.input_type(1);
    if (w.ndim() != 3 || w.shape[0] != directions_ || w.shape[1] != gates_ * hidden_ || w.shape[2] != x.shape[2]) {
      c.FailAt("input 1", StrCat("W ", ShapeText(w.shape), " must be [", directions_, ", ", gates_ * hidden_, ", ",
                                 x.shape[2], "]"));
    }
    CheckShape(2, {directions_, gates_ * hidden_, hidden_}, "R");
    if (c.has_input(3)) CheckShape(3, {directions_, 2 * gates_ * hidden_}, "B");
    if (c.has_input(4)) {
      CheckShape(4, {batch_}, "sequence_lens");
      DLDataType lengths = c.input_type(4).dtype;
      if (lengths != DLDataType{kDLInt, 32, 1} && lengths != DLDataType{kDLInt, 64, 1}) {
        c.FailAt("input 4", "sequence_lens must be int32 or int64, got " + runtime::DTypeToString(lengths));
      }
    }
    for (size_t i : {size_t{5}, size_t{6}}) {  // [D, B, H], with layout 1 [B, D, H]
      Ints shape = layout_ == 0 ? Ints{directions_, batch_, hidden_} : Ints{batch_, directions_, hidden_};
      if (c.has_input(i)) CheckShape(i, shape, i == 5 ? "initial_h" : "initial_c");
    }
    if (c.has_input(7)) CheckShape(7, {directions_, 3 * hidden_}, "P");
    ReadActivations(default_activations);
    clip_ = c.attr_float("clip", std::numeric_limits<float>::infinity());
    // Time-major input [T, B, I].
    input_ = layout_ == 0 ? c.input(0) : c.Op(kTranspose, {c.input(0)}, MakeAttrs({{"axes", Ints{1, 0, 2}}}));
  }

  int64_t steps() const { return steps_; }
  int64_t hidden() const { return hidden_; }
  int directions() const { return directions_; }
  bool reverse(int direction) const { return reverse_ || direction == 1; }
  const NodeContext& context() const { return c_; }

  // Input i's entry for a direction ([dirs, ...] -> [...]), or null when the input is absent.
  Expr PerDirection(size_t i, int direction) const {
    if (!c_.has_input(i)) return nullptr;
    return c_.Op(kTake, {c_.input(i), ScalarOf({kDLInt, 64, 1}, static_cast<double>(direction))}, MakeAttrs({{"axis", int64_t{0}}}));
  }

  // x_t W^T + Wb for every step at once: [T, B, gates * H].
  Expr InputProjection(int direction) const {
    int64_t features = c_.input_type(0).shape[2];
    Expr flat = Reshape(input_, {steps_ * batch_, features});
    Expr projected = c_.Op(kDense, {flat, PerDirection(1, direction)});
    if (c_.has_input(3)) projected = c_.Op(kAdd, {projected, BiasSlice(direction, 0)});
    return Reshape(projected, {steps_, batch_, gates_ * hidden_});
  }

  // Half `half` (0: Wb, 1: Rb) of B's entry for a direction: [gates * H].
  Expr BiasSlice(int direction, int half) const {
    return Slice(PerDirection(3, direction), 0, half * gates_ * hidden_, (half + 1) * gates_ * hidden_);
  }

  // Gate `gate` ([B, H]) of a [B, gates * H] tensor.
  Expr Gate(const Expr& all, int64_t gate) const { return Slice(all, 1, gate * hidden_, (gate + 1) * hidden_); }

  // Part k ([H, ...]) along axis 0 of a [gates * H, ...] tensor: a gate's bias, peephole or recurrent weight.
  Expr Part(const Expr& all, int64_t k) const { return Slice(all, 0, k * hidden_, (k + 1) * hidden_); }

  // Step t of [T, B, N]: [B, N].
  Expr Step(const Expr& all, int64_t t) const {
    Expr one = Slice(all, 0, t, t + 1);
    return Reshape(one, Ints(one->type().tensor().shape.begin() + 1, one->type().tensor().shape.end()));
  }

  // The initial state of input i for a direction, zeros when absent: [B, H].
  Expr InitialState(size_t i, int direction) const {
    if (c_.has_input(i)) {
      return c_.Op(kTake, {c_.input(i), ScalarOf({kDLInt, 64, 1}, static_cast<double>(direction))}, MakeAttrs({{"axis", int64_t{layout_ == 0 ? 0 : 1}}}));
    }
    runtime::NDArray zeros = runtime::NDArray::Empty({batch_, hidden_}, c_.input_type(0).dtype);
    std::memset(zeros.data(), 0, zeros.NumBytes());
    return Constant(zeros);
  }

  // Activation k of a direction applied to x, its input clipped to [-clip, clip] first.
  Expr Activate(int direction, size_t k, Expr x) const {
    if (std::isfinite(clip_)) x = c_.Op(kClip, {x}, MakeAttrs({{"a_min", -clip_}, {"a_max", clip_}}));
    const Activation& a = activations_[direction * per_direction_ + k];
    auto scalar = [&](double v) { return ScalarLike(x, v); };
    if (a.name == "Sigmoid") return c_.Op(kSigmoid, {x});
    if (a.name == "Tanh") return c_.Op(kTanh, {x});
    if (a.name == "Relu") return c_.Op(kRelu, {x});
    if (a.name == "Affine") return c_.Op(kAdd, {c_.Op(kMultiply, {x, scalar(a.alpha)}), scalar(a.beta)});
    if (a.name == "LeakyRelu") return c_.Op(kLeakyRelu, {x}, MakeAttrs({{"alpha", a.alpha}}));
    if (a.name == "ThresholdedRelu") return c_.Op(kThresholdedRelu, {x}, MakeAttrs({{"alpha", a.alpha}}));
    if (a.name == "ScaledTanh") {
      return c_.Op(kMultiply, {c_.Op(kTanh, {c_.Op(kMultiply, {x, scalar(a.beta)})}), scalar(a.alpha)});
    }
    if (a.name == "HardSigmoid") {
      Expr y = c_.Op(kAdd, {c_.Op(kMultiply, {x, scalar(a.alpha)}), scalar(a.beta)});
      return c_.Op(kClip, {y}, MakeAttrs({{"a_min", 0.0}, {"a_max", 1.0}}));
    }
    if (a.name == "Elu") return c_.Op(kElu, {x}, MakeAttrs({{"alpha", a.alpha}}));
    if (a.name == "Softsign") return c_.Op(kSoftsign, {x});
    if (a.name == "Softplus") return c_.Op(kSoftplus, {x});
    c_.FailAt("attribute 'activations'", "'" + a.name + "' is not an activation ONNX's recurrent layers take");
  }

  // Where a batch entry's step t lies past its sequence length: [B, 1] bool, or null when every
  // sequence is full length.
  Expr PastTheEnd(int64_t t) const {
    if (!c_.has_input(4)) return nullptr;
    if (c_.IsConstant(4)) {
      Ints lengths = c_.ConstantInts(4);
      if (std::all_of(lengths.begin(), lengths.end(), [&](int64_t n) { return n == steps_; })) return nullptr;
    }
    Expr lengths = Reshape(c_.input(4), {batch_, 1});
    runtime::NDArray next = runtime::NDArray::Empty({}, c_.input_type(4).dtype);
    if (c_.input_type(4).dtype.bits == 64) {
      *static_cast<int64_t*>(next.data()) = t + 1;
    } else {
      *static_cast<int32_t*>(next.data()) = static_cast<int32_t>(t + 1);
    }
    return c_.Op(kLess, {lengths, Constant(next)});  // length < t + 1: step t is past the end
  }

  // state where the step is past the end, else next.
  Expr Hold(const Expr& past, const Expr& state, const Expr& next) const {
    return past ? c_.Op(kWhere, {past, state, next}) : next;
  }
  Expr ZeroPast(const Expr& past, const Expr& value) const {
    return past ? c_.Op(kWhere, {past, ScalarLike(value, 0.0), value}) : value;
  }

  // Outputs Y [T, D, B, H] (layout 1: [B, T, D, H]) from each direction's per-step outputs, and
  // each final state [D, B, H] (layout 1: [B, D, H]).
  Outputs Assemble(const std::vector<std::vector<Expr>>& per_step, const std::vector<std::vector<Expr>>& finals) const {
    std::vector<Expr> steps;
    for (int64_t t = 0; t < steps_; ++t) {
      std::vector<Expr> directions;
      for (int d = 0; d < directions_; ++d) directions.push_back(Reshape(per_step[d][t], {1, 1, batch_, hidden_}));
      steps.push_back(Concat(directions, 1));
    }
    Expr y = Concat(steps, 0);
    if (layout_ == 1) y = c_.Op(kTranspose, {y}, MakeAttrs({{"axes", Ints{2, 0, 1, 3}}}));
    Outputs outputs = {y};
    for (const std::vector<Expr>& state : finals) {
      std::vector<Expr> directions;
      for (int d = 0; d < directions_; ++d) directions.push_back(Reshape(state[d], {1, batch_, hidden_}));
      Expr s = Concat(directions, 0);
      if (layout_ == 1) s = c_.Op(kTranspose, {s}, MakeAttrs({{"axes", Ints{1, 0, 2}}}));
      outputs.push_back(s);
    }
    return outputs;
  }

  Expr Add(const Expr& a, const Expr& b) const { return c_.Op(kAdd, {a, b}); }
  Expr Mul(const Expr& a, const Expr& b) const { return c_.Op(kMultiply, {a, b}); }
  Expr OneMinus(const Expr& a) const { return c_.Op(kSubtract, {ScalarLike(a, 1.0), a}); }
  // h [B, H] (through the hidden operand's function, when set) times R's entry [gates * H, H]
  // transposed: [B, gates * H].
  Expr Recurrent(const Expr& h, const Expr& r) const {
    return c_.Op(kDense, {hidden_operand_ ? hidden_operand_(h) : h, r});
  }

 private:
  void ReadActivations(const std::vector<std::string>& defaults) {
    per_direction_ = defaults.size();
    std::vector<std::string> names = c_.attr_strings("activations", std::vector<std::string>{});
    if (names.empty()) {
      for (int d = 0; d < directions_; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
    }
    if (names.size() != per_direction_ * directions_) {
      c_.FailAt("attribute 'activations'", StrCat("needs ", per_direction_ * directions_, " names, it has ", names.size()));
    }
    std::vector<float> alphas = c_.attr_floats("activation_alpha", std::vector<float>{});
    std::vector<float> betas = c_.attr_floats("activation_beta", std::vector<float>{});
    size_t next_alpha = 0, next_beta = 0;
    for (const std::string& name : names) {
      // ONNX's defaults for the activations that take alpha and beta.
      static const std::map<std::string, std::pair<double, double>> kDefaults = {
          {"Affine", {1.0, 0.0}}, {"LeakyRelu", {0.01, 0.0}}, {"ThresholdedRelu", {1.0, 0.0}},
          {"ScaledTanh", {1.0, 1.0}}, {"HardSigmoid", {0.2, 0.5}}, {"Elu", {1.0, 0.0}}};
      Activation a{name};
      auto it = kDefaults.find(name);
      if (it != kDefaults.end()) {
        a.alpha = next_alpha < alphas.size() ? alphas[next_alpha++] : it->second.first;
        bool takes_beta = name == "Affine" || name == "ScaledTanh" || name == "HardSigmoid";
        if (takes_beta) a.beta = next_beta < betas.size() ? betas[next_beta++] : it->second.second;
      }
      activations_.push_back(a);
    }
  }

  void CheckShape(size_t i, const Ints& shape, const char* name) const {
    if (c_.input_type(i).shape != shape) {
      c_.FailAt(StrCat("input ", i), StrCat(name, " ", ShapeText(c_.input_type(i).shape), " must be ", ShapeText(shape)));
    }
  }

  Expr Reshape(const Expr& x, const Ints& shape) const {
    if (x->type().tensor().shape == shape) return x;
    return c_.Op(kReshape, {x}, MakeAttrs({{"newshape", shape}}));
  }
  Expr Slice(const Expr& x, int64_t axis, int64_t begin, int64_t end) const {
    return c_.Op(kStridedSlice, {x}, MakeAttrs({{"begin", Ints{begin}}, {"end", Ints{end}}, {"axes", Ints{axis}}}));
  }
  Expr Concat(const std::vector<Expr>& parts, int64_t axis) const {
    return parts.size() == 1 ? parts[0] : c_.Op(kConcatenate, {parts}, MakeAttrs({{"axis", axis}}));
  }

  const NodeContext& c_;
  int64_t gates_, layout_ = 0, steps_ = 0, batch_ = 0, hidden_ = 0;
  bool reverse_ = false;
  int directions_ = 1;
  size_t per_direction_ = 0;
  std::vector<Activation> activations_;
  double clip_ = 0;
  Expr input_;
  std::function<Expr(const Expr&)> hidden_operand_;
};

// What a step reads besides its input: one direction's weights, sliced once.
struct DirectionWeights {
  Expr recurrent;       // R's entry [gates * H, H]
  Expr recurrent_bias;  // Rb [gates * H], or null
  Expr peephole;        // P's entry [3H] (LSTM), or null
};

// The hidden state, and the cell state of an LSTM (else null).
struct State {
  Expr h, cell;
};

// One step of a layer: the projected input x_t [B, gates * H] and the state before -> the state after.
using StepFn = std::function<State(const Recurrence& r, int direction, const DirectionWeights& w, const Expr& x,
                                   const State& state)>;

// Runs each direction over its steps in its order (backwards for reverse), holding the state of
// batch entries past their length, and assembles Y, Y_h (and Y_c with a cell state).
Outputs Run(const Recurrence& r, bool with_cell, const StepFn& step) {
  const NodeContext& c = r.context();
  std::vector<std::vector<Expr>> ys(r.directions(), std::vector<Expr>(r.steps()));
  std::vector<Expr> hs, cells;
  for (int d = 0; d < r.directions(); ++d) {
    DirectionWeights w{r.PerDirection(2, d), c.has_input(3) ? r.BiasSlice(d, 1) : nullptr,
                       with_cell ? r.PerDirection(7, d) : nullptr};
    Expr projected = r.InputProjection(d);
    State state{r.InitialState(5, d), with_cell ? r.InitialState(6, d) : nullptr};
    for (int64_t k = 0; k < r.steps(); ++k) {
      int64_t t = r.reverse(d) ? r.steps() - 1 - k : k;
      State next = step(r, d, w, r.Step(projected, t), state);
      Expr past = r.PastTheEnd(t);
      ys[d][t] = r.ZeroPast(past, next.h);
      state.h = r.Hold(past, state.h, next.h);
      if (with_cell) state.cell = r.Hold(past, state.cell, next.cell);
    }
    hs.push_back(state.h);
    cells.push_back(state.cell);
  }
  return with_cell ? r.Assemble(ys, {hs, cells}) : r.Assemble(ys, {hs});
}

}  // namespace

// LSTM (gates i, o, f, c in W, R and B): outputs Y, Y_h, Y_c.
Outputs LstmOf(const NodeContext& c, const std::function<Expr(const Expr&)>& hidden_operand) {
  bool couple = c.attr_int("input_forget", 0) != 0;
  return Run(Recurrence(c, 4, {"Sigmoid", "Tanh", "Tanh"}, hidden_operand), true,
             [couple](const Recurrence& r, int d, const DirectionWeights& w, const Expr& x, const State& s) {
               Expr gates = r.Add(x, r.Recurrent(s.h, w.recurrent));
               if (w.recurrent_bias) gates = r.Add(gates, w.recurrent_bias);
               auto peep = [&](int64_t k, const Expr& cell, const Expr& pre) {  // pre + P[k] (.) cell
                 return w.peephole ? r.Add(pre, r.Mul(cell, r.Part(w.peephole, k))) : pre;
               };
               Expr i = r.Activate(d, 0, peep(0, s.cell, r.Gate(gates, 0)));
               Expr f = couple ? r.OneMinus(i) : r.Activate(d, 0, peep(2, s.cell, r.Gate(gates, 2)));
               Expr cell = r.Add(r.Mul(f, s.cell), r.Mul(i, r.Activate(d, 1, r.Gate(gates, 3))));
               Expr o = r.Activate(d, 0, peep(1, cell, r.Gate(gates, 1)));
               return State{r.Mul(o, r.Activate(d, 2, cell)), cell};
             });
}

namespace {

Outputs LSTM(const NodeContext& c) { return LstmOf(c, {}); }

// GRU (gates z, r, h): outputs Y, Y_h.
Outputs GRU(const NodeContext& c) {
  bool linear_before_reset = c.attr_int("linear_before_reset", 0) != 0;
  return Run(Recurrence(c, 3, {"Sigmoid", "Tanh"}), false,
             [linear_before_reset](const Recurrence& r, int d, const DirectionWeights& w, const Expr& x,
                                   const State& s) {
               Expr hr = r.Recurrent(s.h, w.recurrent);
               if (w.recurrent_bias) hr = r.Add(hr, w.recurrent_bias);
               Expr z = r.Activate(d, 0, r.Add(r.Gate(x, 0), r.Gate(hr, 0)));
               Expr reset = r.Activate(d, 0, r.Add(r.Gate(x, 1), r.Gate(hr, 1)));
               Expr candidate;
               if (linear_before_reset) {
                 candidate = r.Add(r.Gate(x, 2), r.Mul(reset, r.Gate(hr, 2)));
               } else {
                 // (r (.) h) R_h^T + Rb_h: the reset applied before the recurrent projection.
                 candidate = r.Add(r.Gate(x, 2), r.Recurrent(r.Mul(reset, s.h), r.Part(w.recurrent, 2)));
                 if (w.recurrent_bias) candidate = r.Add(candidate, r.Part(w.recurrent_bias, 2));
               }
               Expr hidden = r.Activate(d, 1, candidate);
               return State{r.Add(r.Mul(r.OneMinus(z), hidden), r.Mul(z, s.h)), nullptr};
             });
}

// RNN: H_t = f(x_t W^T + H_{t-1} R^T + Wb + Rb); outputs Y, Y_h.
Outputs RNN(const NodeContext& c) {
  return Run(Recurrence(c, 1, {"Tanh"}), false,
             [](const Recurrence& r, int d, const DirectionWeights& w, const Expr& x, const State& s) {
               Expr pre = r.Add(x, r.Recurrent(s.h, w.recurrent));
               if (w.recurrent_bias) pre = r.Add(pre, w.recurrent_bias);
               return State{r.Activate(d, 0, pre), nullptr};
             });
}

}  // namespace

void AddRecurrentConverters(ConverterTable& table) {
  Register(table, "LSTM", LSTM, 7);
  Register(table, "GRU", GRU, 7);
  Register(table, "RNN", RNN, 7);
}

}  // namespace kiln::frontend
