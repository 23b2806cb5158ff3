// ONNX Runtime's transformer ops (com.microsoft), as its transformers optimizer fuses them, composed
// of the IR ops their unfused graphs import as: Attention, QAttention (quantize_dynamic's) and
// MultiHeadAttention (dense layers or integer products, batched products and a softmax), the layer
// normalizations with a skip, embeddings, the Gelu family, BiasAdd and RotaryEmbedding.
#include <cmath>
#include <cstring>

#include "frontend/onnx/converter.h"
#include "runtime/dtype.h"
#include "runtime/error.h"

namespace kiln::frontend {

using namespace ir;
using runtime::StrCat;

namespace {

const OpRef kAdd("add");
const OpRef kConcatenate("concatenate");
const OpRef kEqual("equal");
const OpRef kExpandDims("expand_dims");
const OpRef kGreater("greater");
const OpRef kGreaterEqual("greater_equal");
const OpRef kLess("less");
const OpRef kLogicalOr("logical_or");
const OpRef kMultiply("multiply");
const OpRef kReshape("reshape");
const OpRef kSigmoid("sigmoid");
const OpRef kSoftmax("nn.softmax");
const OpRef kStridedSlice("strided_slice");
const OpRef kSubtract("subtract");
const OpRef kSum("sum");
const OpRef kTake("take");
const OpRef kTranspose("transpose");
const OpRef kWhere("where");

using Outputs = std::vector<Expr>;
using Ints = std::vector<int64_t>;

Expr Reshape(const NodeContext& c, const Expr& x, const Ints& shape) {
  return c.Op(kReshape, {x}, MakeAttrs({{"newshape", shape}}));
}

Expr Transpose(const NodeContext& c, const Expr& x, const Ints& axes) {
  return c.Op(kTranspose, {x}, MakeAttrs({{"axes", axes}}));
}

// x[..., begin:end] along `axis`.
Expr Slice(const NodeContext& c, const Expr& x, int64_t axis, int64_t begin, int64_t end) {
  return c.Op(kStridedSlice, {x}, MakeAttrs({{"begin", Ints{begin}}, {"end", Ints{end}}, {"axes", Ints{axis}}}));
}

Expr Concatenate(const NodeContext& c, std::vector<Expr> parts, int64_t axis) {
  return c.Op(kConcatenate, std::move(parts), MakeAttrs({{"axis", axis}}));
}

// Input i, which must have `rank` dimensions (`what` says what they are).
const TensorType& RequireRank(const NodeContext& c, size_t i, int64_t rank, const std::string& what) {
  const TensorType& t = c.input_type(i);
  if (t.ndim() != rank) c.FailAt(StrCat("input ", i), StrCat("must be ", what, ", it is ", ShapeText(t.shape)));
  return t;
}

// Input i, a vector of `length` values (a bias or scale along the hidden axis).
const Expr& RequireVector(const NodeContext& c, size_t i, int64_t length) {
  const TensorType& t = c.input_type(i);
  if (t.ndim() != 1 || t.shape[0] != length) {
    c.FailAt(StrCat("input ", i), StrCat("must be a vector of ", length, " values, it is ", ShapeText(t.shape)));
  }
  return c.input(i);
}

int64_t NumHeads(const NodeContext& c) {
  int64_t heads = c.attr_int("num_heads");
  if (heads < 1) c.FailAt("attribute 'num_heads'", StrCat("must be positive, it is ", heads));
  return heads;
}

// [B, S, N * H] as [B, N, S, H].
Expr SplitHeads(const NodeContext& c, const Expr& x, int64_t heads) {
  const Ints& s = x->type().tensor().shape;
  if (s[2] % heads != 0) c.Fail(StrCat("a hidden size of ", s[2], " does not divide into ", heads, " heads"));
  return Transpose(c, Reshape(c, x, {s[0], s[1], heads, s[2] / heads}), {0, 2, 1, 3});
}

// The additive mask of causal attention: `mask_filter` where key position t lies after query
// position s (t > past + s), 0 elsewhere; [S, T].
Expr CausalMask(const NodeContext& c, int64_t queries, int64_t keys, double mask_filter) {
  CheckConstantElements(c, queries * keys, "the causal mask");
  runtime::NDArray mask = runtime::NDArray::Empty({queries, keys}, runtime::kFloat32);
  auto* values = static_cast<float*>(mask.data());
  int64_t past = keys - queries;
  for (int64_t s = 0; s < queries; ++s) {
    for (int64_t t = 0; t < keys; ++t) values[s * keys + t] = t > past + s ? static_cast<float>(mask_filter) : 0.0f;
  }
  return Constant(mask);
}

// Key positions 0 .. keys - 1 as an int32 constant [keys].
Expr Positions(int64_t keys) {
  runtime::NDArray positions = runtime::NDArray::Empty({keys}, DLDataType{kDLInt, 32, 1});
  for (int64_t t = 0; t < keys; ++t) static_cast<int32_t*>(positions.data())[t] = static_cast<int32_t>(t);
  return Constant(positions);
}

// Attention's and MultiHeadAttention's key mask (input i) as an additive mask broadcasting to
// [B, N, S, T]: `mask_filter` where a key is masked, 0 where it is kept. Its forms, as ONNX Runtime
// reads them: [B, T] or [B, S, T] of 1 (keep) and 0; [B] the end of each sequence's keys; [2B] the
// ends, then the starts.
Expr KeyMask(const NodeContext& c, size_t i, int64_t batch, int64_t queries, int64_t keys, double mask_filter) {
  const TensorType& t = c.input_type(i);
  Expr m = CastTo(c, c.input(i), DLDataType{kDLInt, 32, 1});
  Expr zero = ScalarOf(runtime::kFloat32, 0.0), filter = ScalarOf(runtime::kFloat32, mask_filter);
  Expr masked;
  if (t.shape == Ints{batch, keys}) {
    masked = Reshape(c, c.Op(kGreater, {m, ScalarLike(m, 0)}), {batch, 1, 1, keys});
    return c.Op(kWhere, {masked, zero, filter});
  }
  if (t.shape == Ints{batch, queries, keys}) {
    masked = Reshape(c, c.Op(kGreater, {m, ScalarLike(m, 0)}), {batch, 1, queries, keys});
    return c.Op(kWhere, {masked, zero, filter});
  }
  if (t.shape == Ints{batch} || t.shape == Ints{2 * batch}) {
    Expr positions = Positions(keys);
    Expr ends = Reshape(c, Slice(c, m, 0, 0, batch), {batch, 1});
    masked = c.Op(kGreaterEqual, {positions, ends});
    if (t.shape[0] == 2 * batch) {
      Expr starts = Reshape(c, Slice(c, m, 0, batch, 2 * batch), {batch, 1});
      masked = c.Op(kLogicalOr, {masked, c.Op(kLess, {positions, starts})});
    }
    return c.Op(kWhere, {Reshape(c, masked, {batch, 1, 1, keys}), filter, zero});
  }
  c.FailAt(StrCat("input ", i), StrCat("a mask of shape ", ShapeText(t.shape), " is not supported (kiln reads [B], [2B], ",
                                       "[B, T] and [B, S, T] masks; here B = ", batch, ", S = ", queries,
                                       ", T = ", keys, ")"));
}

// Scaled dot-product attention: q [B, N, S, H] over k [B, N, T, H] and v [B, N, T, Hv], with an
// additive bias of the scores (null, or broadcasting to [B, N, S, T]); [B, S, N * Hv].
Expr AttentionOf(const NodeContext& c, const Expr& q, const Expr& k, const Expr& v, const Expr& bias, double scale) {
  Expr scores = MatMulOf(c, q, Transpose(c, k, {0, 1, 3, 2}));
  scores = c.Op(kMultiply, {scores, ScalarLike(scores, scale)});
  if (bias != nullptr) scores = c.Op(kAdd, {scores, bias});
  Expr probabilities = c.Op(kSoftmax, {scores}, MakeAttrs({{"axis", int64_t{-1}}}));
  Expr y = Transpose(c, MatMulOf(c, probabilities, v), {0, 2, 1, 3});
  const Ints& s = y->type().tensor().shape;
  return Reshape(c, y, {s[0], s[1], s[2] * s[3]});
}

// The scale of the scores: the `scale` attribute, or 1 / sqrt(head size) when it is 0 or absent.
double ScoreScale(const NodeContext& c, int64_t head_size) {
  double scale = c.attr_float("scale", 0.0f);
  return scale != 0.0 ? scale : 1.0 / std::sqrt(static_cast<double>(head_size));
}

// Adds `extra` to a bias of the scores (null: none yet).
Expr AddBias(const NodeContext& c, const Expr& bias, const Expr& extra) {
  return bias == nullptr ? extra : c.Op(kAdd, {bias, extra});
}

// Where Attention's optional inputs are (QAttention has them elsewhere, and no attention_bias);
// 0 for none.
struct AttentionInputs {
  size_t mask, past, attention_bias;
};

// Attention once its input is projected to Q, K and V (qkv [B, S, Dq + Dk + Dv]): split in heads
// (qkv_hidden_sizes, or three equal parts); the mask (KeyMask), past [2, B, N, P, H] (the keys and
// values before these, which present returns with these appended), attention_bias [B or 1, N, S,
// T], unidirectional (causal).
Outputs AttentionOfProjected(const NodeContext& c, const Expr& qkv, const AttentionInputs& at) {
  const Ints& shape = qkv->type().tensor().shape;
  int64_t heads = NumHeads(c), batch = shape[0], queries = shape[1], width = shape[2];
  Ints sizes = c.attr_ints("qkv_hidden_sizes", Ints{});
  if (sizes.empty()) sizes = Ints(3, width / 3);
  if (sizes.size() != 3 || sizes[0] != sizes[1] || sizes[0] + sizes[1] + sizes[2] != width) {
    c.FailAt("attribute 'qkv_hidden_sizes'", StrCat("must be three sizes (Q and K equal) adding up to the weights' ",
                                                    width, " columns"));
  }
  if (c.attr_int("do_rotary", 0) != 0) {
    c.FailAt("attribute 'do_rotary'", "rotary embedding inside Attention is not supported");
  }
  if (c.attr_int("past_present_share_buffer", 0) != 0) {
    c.FailAt("attribute 'past_present_share_buffer'", "a past buffer shared with present is not supported");
  }
  Expr q = SplitHeads(c, Slice(c, qkv, 2, 0, sizes[0]), heads);
  Expr k = SplitHeads(c, Slice(c, qkv, 2, sizes[0], 2 * sizes[0]), heads);
  Expr v = SplitHeads(c, Slice(c, qkv, 2, 2 * sizes[0], width), heads);
  if (at.past != 0 && c.has_input(at.past)) {
    const TensorType& past = RequireRank(c, at.past, 5, "[2, batch, heads, past sequence, head size]");
    Ints kept = k->type().tensor().shape;
    if (past.shape[0] != 2 || past.shape[1] != batch || past.shape[2] != heads || past.shape[4] != kept[3] ||
        sizes[2] != sizes[0]) {
      c.FailAt(StrCat("input ", at.past), StrCat("must be [2, ", batch, ", ", heads, ", past sequence, ", kept[3],
                                                 "], it is ", ShapeText(past.shape)));
    }
    Ints stacked = {batch, heads, past.shape[3], kept[3]};
    k = Concatenate(c, {Reshape(c, Slice(c, c.input(at.past), 0, 0, 1), stacked), k}, 2);
    v = Concatenate(c, {Reshape(c, Slice(c, c.input(at.past), 0, 1, 2), stacked), v}, 2);
  }
  int64_t keys = k->type().tensor().shape[2];
  double mask_filter = c.attr_float("mask_filter_value", -10000.0f);
  Expr bias;
  if (at.mask != 0 && c.has_input(at.mask)) bias = KeyMask(c, at.mask, batch, queries, keys, mask_filter);
  if (c.attr_int("unidirectional", 0) != 0) bias = AddBias(c, bias, CausalMask(c, queries, keys, mask_filter));
  if (at.attention_bias != 0 && c.has_input(at.attention_bias)) bias = AddBias(c, bias, c.input(at.attention_bias));
  Expr y = AttentionOf(c, q, k, v, bias, ScoreScale(c, sizes[0] / heads));
  if (c.num_outputs() < 2 || c.node().output(1).empty()) return {y};
  Expr present = Concatenate(c, {c.Op(kExpandDims, {k}, MakeAttrs({{"axis", int64_t{0}}})),
                                 c.Op(kExpandDims, {v}, MakeAttrs({{"axis", int64_t{0}}}))},
                             0);
  return {y, present};
}

// Attention: input [B, S, D] x weights [D, Dq + Dk + Dv] + bias, then AttentionOfProjected with
// mask_index (3), past (4) and attention_bias (5).
Outputs Attention(const NodeContext& c) {
  const TensorType& x = RequireRank(c, 0, 3, "[batch, sequence, hidden]");
  const TensorType& w = RequireRank(c, 1, 2, "[hidden, Q + K + V hidden]");
  if (w.shape[0] != x.shape[2]) c.FailAt("input 1", StrCat("must have ", x.shape[2], " rows, it has ", w.shape[0]));
  Expr qkv = MatMulOf(c, c.input(0), c.input(1));
  if (c.has_input(2)) qkv = c.Op(kAdd, {qkv, RequireVector(c, 2, w.shape[1])});
  return AttentionOfProjected(c, qkv, {3, 4, 5});
}

// QAttention: Attention of an 8-bit input and weights: (input - input_zero_point) x (weights -
// weight_zero_point) on int32 (MatMulInteger), * input_scale * weight_scale (one, or one per
// column) + bias; then AttentionOfProjected with mask_index (5) and past (8).
Outputs QAttention(const NodeContext& c) {
  const TensorType& x = RequireRank(c, 0, 3, "[batch, sequence, hidden]");
  const TensorType& w = RequireRank(c, 1, 2, "[hidden, Q + K + V hidden]");
  if (w.shape[0] != x.shape[2]) c.FailAt("input 1", StrCat("must have ", x.shape[2], " rows, it has ", w.shape[0]));
  std::vector<Expr> integer_inputs = {c.input(0), c.input(1), c.has_input(6) ? c.input(6) : nullptr,
                                      c.has_input(7) ? c.input(7) : nullptr};
  Expr sum = Converters().at(OpKey{"", "MatMulInteger"}).convert(NodeContext(c.node(), integer_inputs, c.opset())).at(0);
  if (c.input_type(3).NumElements() != 1) c.FailAt("input 3", "input_scale must hold one value");
  int64_t columns = w.shape[1], scales = c.input_type(4).NumElements();
  if (scales != 1 && scales != columns) {
    c.FailAt("input 4", StrCat("weight_scale must hold one value or one per column (", columns, ")"));
  }
  Expr scale = c.Op(kMultiply, {Reshape(c, c.input(3), {}), Reshape(c, c.input(4), scales == 1 ? Ints{} : Ints{columns})});
  Expr qkv = c.Op(kMultiply, {CastTo(c, sum, runtime::kFloat32), scale});
  qkv = c.Op(kAdd, {qkv, RequireVector(c, 2, columns)});
  return AttentionOfProjected(c, qkv, {5, 8, 0});
}

// MultiHeadAttention: query [B, S, D], key [B, T, D] and value [B, T, Dv] (the 3-D forms), bias
// [D + D + Dv] added to them, key_padding_mask (KeyMask), attention_bias, past_key and past_value
// [B, N, P, H] (before these keys and values; present_key and present_value return them
// appended), unidirectional (causal).
Outputs MultiHeadAttention(const NodeContext& c) {
  const TensorType& query = RequireRank(c, 0, 3, "[batch, sequence, hidden] (packed Q, K and V are not supported)");
  int64_t heads = NumHeads(c), batch = query.shape[0], queries = query.shape[1];
  if (!c.has_input(1) || !c.has_input(2) || c.input_type(1).ndim() != 3 || c.input_type(2).ndim() != 3) {
    c.Fail("kiln reads MultiHeadAttention with a 3-D key and value [batch, sequence, hidden] (packed forms and keys "
           "already split in heads are not supported)");
  }
  Expr q = c.input(0), k = c.input(1), v = c.input(2);
  int64_t dq = query.shape[2], dv = c.input_type(2).shape[2];
  if (c.input_type(1).shape[2] != dq) c.FailAt("input 1", StrCat("must have the query's hidden size ", dq));
  if (c.has_input(3)) {
    const Expr& bias = RequireVector(c, 3, 2 * dq + dv);
    q = c.Op(kAdd, {q, Slice(c, bias, 0, 0, dq)});
    k = c.Op(kAdd, {k, Slice(c, bias, 0, dq, 2 * dq)});
    v = c.Op(kAdd, {v, Slice(c, bias, 0, 2 * dq, 2 * dq + dv)});
  }
  q = SplitHeads(c, q, heads);
  k = SplitHeads(c, k, heads);
  v = SplitHeads(c, v, heads);
  for (size_t i : {size_t{6}, size_t{7}}) {
    if (c.has_input(i)) {
      Expr& kept = i == 6 ? k : v;
      const Ints& s = kept->type().tensor().shape;
      const TensorType& past = RequireRank(c, i, 4, "[batch, heads, past sequence, head size]");
      if (past.shape[0] != batch || past.shape[1] != heads || past.shape[3] != s[3]) {
        c.FailAt(StrCat("input ", i), StrCat("must be [", batch, ", ", heads, ", past sequence, ", s[3], "]"));
      }
      kept = Concatenate(c, {c.input(i), kept}, 2);
    }
  }
  int64_t keys = k->type().tensor().shape[2];
  double mask_filter = c.attr_float("mask_filter_value", -10000.0f);
  Expr bias;
  if (c.has_input(4)) bias = KeyMask(c, 4, batch, queries, keys, mask_filter);
  if (c.attr_int("unidirectional", 0) != 0) bias = AddBias(c, bias, CausalMask(c, queries, keys, mask_filter));
  if (c.has_input(5)) bias = AddBias(c, bias, c.input(5));
  return {AttentionOf(c, q, k, v, bias, ScoreScale(c, dq / heads)), k, v};
}

// x + skip (+ bias): the sum SkipLayerNormalization and SkipSimplifiedLayerNormalization normalize.
Expr SkipSum(const NodeContext& c, size_t bias) {
  const TensorType& x = c.input_type(0);
  if (x.ndim() < 2) c.FailAt("input 0", "must be [batch, sequence, hidden] or [tokens, hidden]");
  Expr sum = c.Op(kAdd, {c.input(0), c.input(1)});
  if (c.has_input(bias)) sum = c.Op(kAdd, {sum, RequireVector(c, bias, x.shape.back())});
  return sum;
}

// SkipLayerNormalization: LayerNormalization of input + skip (+ bias), * gamma (+ beta); outputs
// the normalized sum, its mean and inverse deviation, and the sum.
Outputs SkipLayerNormalization(const NodeContext& c) {
  Expr sum = SkipSum(c, 4);
  int64_t hidden = c.input_type(0).shape.back();
  bool moments = (c.num_outputs() > 1 && !c.node().output(1).empty()) ||
                 (c.num_outputs() > 2 && !c.node().output(2).empty());
  Normalized n = LayerNormOf(c, sum, RequireVector(c, 2, hidden), c.has_input(3) ? RequireVector(c, 3, hidden) : nullptr,
                             c.input_type(0).ndim() - 1, c.attr_float("epsilon", 1e-12f), moments);
  if (c.num_outputs() == 1) return {n.y};
  if (!moments) n.mean = n.inverse_deviation = sum;  // not wanted: any value fills the place
  return {n.y, n.mean, n.inverse_deviation, sum};
}

// SkipSimplifiedLayerNormalization: input + skip (+ bias) / sqrt(mean of its squares + epsilon) *
// gamma; outputs that, the mean (which it does not compute: an empty place), the inverse root
// mean square, and the sum.
Outputs SkipSimplifiedLayerNormalization(const NodeContext& c) {
  Expr sum = SkipSum(c, 3);
  const TensorType& x = c.input_type(0);
  if (c.num_outputs() > 1 && !c.node().output(1).empty()) c.FailAt("output 1", "has no value (ONNX Runtime leaves it unset)");
  Normalized n = RootMeanSquareNormOf(c, sum, RequireVector(c, 2, x.shape.back()), x.ndim() - 1,
                                      c.attr_float("epsilon", 1e-12f));
  return {n.y, sum, n.inverse_deviation, sum};
}

// EmbedLayerNormalization: word_embedding[input_ids] + position_embedding[position_ids, or 0 .. S -
// 1] (+ segment_embedding[segment_ids]), layer-normalized with gamma and beta; outputs that, the
// mask index (per sequence the count of mask values that are 1; zeros without a mask), and the sum.
Outputs EmbedLayerNormalization(const NodeContext& c) {
  const TensorType& ids = RequireRank(c, 0, 2, "[batch, sequence]");
  int64_t batch = ids.shape[0], sequence = ids.shape[1];
  Attrs rows = MakeAttrs({{"axis", int64_t{0}}});
  RequireRank(c, 2, 2, "[vocabulary, hidden]");
  Expr sum = c.Op(kTake, {c.input(2), c.input(0)}, rows);
  int64_t hidden = c.input_type(2).shape[1];
  RequireRank(c, 3, 2, "[positions, hidden]");
  Expr positions = c.has_input(8) ? c.input(8) : Reshape(c, Positions(sequence), {1, sequence});
  sum = c.Op(kAdd, {sum, c.Op(kTake, {c.input(3), positions}, rows)});
  if (c.has_input(1) != c.has_input(4)) c.Fail("segment_ids (input 1) and segment_embedding (input 4) come together");
  if (c.has_input(1)) {
    RequireRank(c, 4, 2, "[segments, hidden]");
    sum = c.Op(kAdd, {sum, c.Op(kTake, {c.input(4), c.input(1)}, rows)});
  }
  Normalized n = LayerNormOf(c, sum, RequireVector(c, 5, hidden), RequireVector(c, 6, hidden), 2,
                             c.attr_float("epsilon", 1e-12f), false);
  DLDataType int32{kDLInt, 32, 1};
  Expr mask_index;
  if (c.has_input(7)) {
    if (c.input_type(7).shape != Ints{batch, sequence}) c.FailAt("input 7", StrCat("must be [", batch, ", ", sequence, "]"));
    Expr ones = CastTo(c, c.Op(kEqual, {c.input(7), ScalarLike(c.input(7), 1)}), int32);
    mask_index = c.Op(kSum, {ones}, MakeAttrs({{"axis", Ints{1}}, {"keepdims", int64_t{0}}}));
  } else {
    runtime::NDArray zeros = runtime::NDArray::Empty({batch}, int32);
    std::memset(zeros.data(), 0, zeros.NumBytes());
    mask_index = Constant(zeros);
  }
  return {n.y, mask_index, sum};
}

// Gelu (com.microsoft): the erf form of x.
Outputs Gelu(const NodeContext& c) { return {GeluOf(c, c.input(0), false)}; }

// BiasGelu: the erf form of x + bias.
Outputs BiasGelu(const NodeContext& c) {
  return {GeluOf(c, c.Op(kAdd, {c.input(0), RequireVector(c, 1, c.input_type(0).shape.back())}), false)};
}

// FastGelu: the tanh form of x (+ bias).
Outputs FastGelu(const NodeContext& c) {
  Expr x = c.input(0);
  if (c.has_input(1)) x = c.Op(kAdd, {x, RequireVector(c, 1, c.input_type(0).shape.back())});
  return {GeluOf(c, x, true)};
}

// QuickGelu: x * sigmoid(alpha * x).
Outputs QuickGelu(const NodeContext& c) {
  Expr x = c.input(0);
  double alpha = c.attr_float("alpha", 1.702f);
  return {c.Op(kMultiply, {x, c.Op(kSigmoid, {c.Op(kMultiply, {x, ScalarLike(x, alpha)})})})};
}

// BiasAdd: x [N, S, C] + bias [C] + skip [N, S, C].
Outputs BiasAdd(const NodeContext& c) {
  const TensorType& x = RequireRank(c, 0, 3, "[batch, sequence, channels]");
  if (c.input_type(2).shape != x.shape) c.FailAt("input 2", StrCat("must have the input's shape ", ShapeText(x.shape)));
  return {c.Op(kAdd, {c.Op(kAdd, {c.input(0), RequireVector(c, 1, x.shape[2])}), c.input(2)})};
}

// RotaryEmbedding: each head's first rotary_embedding_dim values (all when 0) rotated by the angles
// of its position (cos_cache and sin_cache [positions, dim / 2] at position_ids [B, S], or at
// position_ids[0] + 0 .. S - 1 for one value): pairs (x[i], x[i + dim / 2]), or with interleaved
// (x[2i], x[2i + 1]), become (x1 cos - x2 sin, x2 cos + x1 sin). Input [B, S, N * H] or [B, N, S, H].
Outputs RotaryEmbedding(const NodeContext& c) {
  const TensorType& x = c.input_type(0);
  const TensorType& cache = RequireRank(c, 2, 2, "[positions, rotary dimension / 2]");
  if (c.input_type(3).shape != cache.shape) {
    c.FailAt("input 3", StrCat("must have cos_cache's shape ", ShapeText(cache.shape)));
  }
  if (c.attr_int("is_packed_batching", 0) != 0) c.FailAt("attribute 'is_packed_batching'", "is not supported");
  if (c.attr_float("scale", 1.0f) != 1.0f) c.FailAt("attribute 'scale'", "a scale other than 1 is not supported");
  if (x.ndim() != 3 && x.ndim() != 4) {
    c.FailAt("input 0", "must be [batch, sequence, hidden] or [batch, heads, sequence, head size]");
  }
  int64_t batch = x.shape[0], sequence = x.shape[x.ndim() == 3 ? 1 : 2], half = cache.shape[1];
  int64_t rotary = c.attr_int("rotary_embedding_dim", 0);
  if (rotary == 0) rotary = 2 * half;
  if (rotary != 2 * half) {
    c.FailAt("attribute 'rotary_embedding_dim'", StrCat("must be twice cos_cache's ", half, " columns"));
  }
  int64_t heads = c.attr_int("num_heads", 0);
  int64_t head_size = x.ndim() == 4 ? x.shape[3] : heads > 0 ? x.shape[2] / heads : rotary;
  if (x.ndim() == 3 && (head_size < rotary || x.shape[2] % head_size != 0)) {
    c.FailAt("attribute 'num_heads'", StrCat("a hidden size of ", x.shape[2], " does not split in heads of ", head_size,
                                             " values with ", rotary, " rotated"));
  }
  // Heads as [B, S, N, H] (3-D input) or [B, N, S, H]; the angles broadcast as [B, S, 1, dim / 2] or [B, 1, S, dim / 2].
  Expr heads_x = x.ndim() == 3 ? Reshape(c, c.input(0), {batch, sequence, x.shape[2] / head_size, head_size}) : c.input(0);
  Expr positions = c.input(1);
  const TensorType& p = c.input_type(1);
  if (p.NumElements() == 1) {
    positions = c.Op(kAdd, {Reshape(c, Positions(sequence), {1, sequence}),
                            CastTo(c, Reshape(c, positions, {}), DLDataType{kDLInt, 32, 1})});
  } else if (p.shape != Ints{batch, sequence}) {
    c.FailAt("input 1", StrCat("must be [", batch, ", ", sequence, "] or hold one value, it is ", ShapeText(p.shape)));
  }
  int64_t position_batch = positions->type().tensor().shape[0];
  Ints angle_shape = x.ndim() == 3 ? Ints{position_batch, sequence, 1, half} : Ints{position_batch, 1, sequence, half};
  Attrs rows = MakeAttrs({{"axis", int64_t{0}}});
  Expr cos = Reshape(c, c.Op(kTake, {c.input(2), positions}, rows), angle_shape);
  Expr sin = Reshape(c, c.Op(kTake, {c.input(3), positions}, rows), angle_shape);
  Expr rotated = Slice(c, heads_x, 3, 0, rotary);
  Expr x1, x2;
  bool interleaved = c.attr_int("interleaved", 0) != 0;
  const Ints& hs = heads_x->type().tensor().shape;
  if (interleaved) {
    Expr pairs = Reshape(c, rotated, {hs[0], hs[1], hs[2], half, 2});
    x1 = Reshape(c, Slice(c, pairs, 4, 0, 1), {hs[0], hs[1], hs[2], half});
    x2 = Reshape(c, Slice(c, pairs, 4, 1, 2), {hs[0], hs[1], hs[2], half});
  } else {
    x1 = Slice(c, rotated, 3, 0, half);
    x2 = Slice(c, rotated, 3, half, rotary);
  }
  Expr y1 = c.Op(kSubtract, {c.Op(kMultiply, {x1, cos}), c.Op(kMultiply, {x2, sin})});
  Expr y2 = c.Op(kAdd, {c.Op(kMultiply, {x2, cos}), c.Op(kMultiply, {x1, sin})});
  Expr y;
  if (interleaved) {
    Ints pair_shape = {hs[0], hs[1], hs[2], half, 1};
    Expr pairs = Concatenate(c, {Reshape(c, y1, pair_shape), Reshape(c, y2, pair_shape)}, 4);
    y = Reshape(c, pairs, {hs[0], hs[1], hs[2], rotary});
  } else {
    y = Concatenate(c, {y1, y2}, 3);
  }
  if (rotary < head_size) y = Concatenate(c, {y, Slice(c, heads_x, 3, rotary, head_size)}, 3);
  return {Reshape(c, y, x.shape)};
}

}  // namespace

void AddContribTransformerConverters(ConverterTable& table) {
  RegisterMicrosoft(table, "Attention", Attention);
  RegisterMicrosoft(table, "QAttention", QAttention);
  RegisterMicrosoft(table, "MultiHeadAttention", MultiHeadAttention);
  RegisterMicrosoft(table, "SkipLayerNormalization", SkipLayerNormalization);
  RegisterMicrosoft(table, "SkipSimplifiedLayerNormalization", SkipSimplifiedLayerNormalization);
  RegisterMicrosoft(table, "EmbedLayerNormalization", EmbedLayerNormalization);
  RegisterMicrosoft(table, "Gelu", Gelu);
  RegisterMicrosoft(table, "BiasGelu", BiasGelu);
  RegisterMicrosoft(table, "FastGelu", FastGelu);
  RegisterMicrosoft(table, "QuickGelu", QuickGelu);
  RegisterMicrosoft(table, "BiasAdd", BiasAdd);
  RegisterMicrosoft(table, "RotaryEmbedding", RotaryEmbedding);
}

}  // namespace kiln::frontend
