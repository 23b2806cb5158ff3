// CombineAttention.
//
// From each nn.batch_matmul of probabilities and values, back through the softmax (over the last
// axis) to the nn.batch_matmul of queries and keys; between the two products only regroupings of
// the batch (reshapes that keep the last two axes), scalar factors and one added bias. Each of q, k
// and v is then followed back through reshapes, transposes, unit-step slices and scalar factors to
// a tensor the view reads in place; the result forward through reshapes and transposes to the
// tensor it is written into. Views are strided: a dimension that a reshape merged from dimensions
// whose strides do not chain keeps its parts (components), and the batch, after all operands'
// views are known, is split into the kernel's batch and head dimensions. Whatever cannot be
// expressed so stays a copy of its own (the view starts at that op's result), or, where the
// softmax's operands are used elsewhere or the batch does not split, the attention stays unfused.
// In a library for many shapes the views are the same at every sample (its values are generic:
// ir/dim_samples.h), their strides numbers that the samples fit as polynomials of the dimensions.
#include "transform/combine_attention.h"

#include <deque>
#include <optional>
#include <unordered_map>
#include <utility>

#include "ir/ops/infer_util.h"
#include "ir/type.h"

namespace kiln::transform {

using namespace ir;

namespace {

const OpRef kAdd("add");
const OpRef kAttention("nn.attention");
const OpRef kBatchMatmul("nn.batch_matmul");
const OpRef kDivide("divide");
const OpRef kExpandDims("expand_dims");
const OpRef kMultiply("multiply");
const OpRef kReshape("reshape");
const OpRef kSoftmax("nn.softmax");
const OpRef kSqueeze("squeeze");
const OpRef kStridedSlice("strided_slice");
const OpRef kTranspose("transpose");

using Ints = std::vector<int64_t>;

// Part of a view's dimension: `extent` indices, `stride` elements apart.
struct Component {
  int64_t extent, stride;
};
// A view's dimension: its components, outermost first (none: extent 1).
using Dim = std::vector<Component>;

// Elements of `base` seen as a tensor: element [i0, i1, ...] at offset + the sum over dimensions
// of each index's place in its components; times `scale`.
struct View {
  Expr base;
  int64_t offset = 0;
  std::vector<Dim> dims;
  double scale = 1.0;
};

const CallNode* CallOf(const Expr& e, const OpRef& op) {
  const auto* call = e->As<CallNode>();
  return call != nullptr && op.Is(call->op) ? call : nullptr;
}

const Ints& ShapeOf(const Expr& e) { return e->type().tensor().shape; }

// Components of extent 1 dropped, neighbours whose strides chain merged.
Dim Simplified(const Dim& dim) {
  Dim out;
  for (const Component& c : dim) {
    if (c.extent == 1) continue;
    if (!out.empty() && out.back().stride == c.extent * c.stride) {
      out.back() = {out.back().extent * c.extent, c.stride};
    } else {
      out.push_back(c);
    }
  }
  return out;
}

View Whole(const Expr& e) {
  View view{e, 0, {}, 1.0};
  const Ints& shape = ShapeOf(e);
  Ints strides = RowStrides(shape);
  for (size_t d = 0; d < shape.size(); ++d) view.dims.push_back(Simplified({{shape[d], strides[d]}}));
  return view;
}

// `view` reshaped to `shape` (row-major order kept), if its components split and group so.
std::optional<View> Reshaped(View view, const Ints& shape) {
  std::deque<Component> parts;
  for (const Dim& dim : view.dims) parts.insert(parts.end(), dim.begin(), dim.end());
  view.dims.clear();
  for (int64_t extent : shape) {
    Dim dim;
    for (int64_t needed = extent; needed > 1;) {
      if (parts.empty()) return std::nullopt;
      Component& part = parts.front();
      if (part.extent <= needed) {
        if (needed % part.extent != 0) return std::nullopt;
        dim.push_back(part);
        needed /= part.extent;
        parts.pop_front();
      } else {
        if (part.extent % needed != 0) return std::nullopt;
        dim.push_back({needed, part.stride * (part.extent / needed)});
        part.extent /= needed;
        needed = 1;
      }
    }
    view.dims.push_back(Simplified(dim));
  }
  if (!parts.empty()) return std::nullopt;
  return view;
}

// `view` sliced as `slice` (unit steps, each sliced dimension one component) slices its input of
// shape `in_shape`.
std::optional<View> Sliced(View view, const CallNode& slice, const Ints& in_shape) {
  for (const SlicedAxis& s : SlicedAxes(in_shape, slice.attrs)) {
    if (s.step != 1) return std::nullopt;
    if (s.length == in_shape[s.axis]) continue;
    Dim& dim = view.dims[s.axis];
    if (dim.size() != 1) return std::nullopt;
    view.offset += s.first * dim[0].stride;
    dim = Simplified({{s.length, dim[0].stride}});
  }
  return view;
}

// A float constant of one element.
std::optional<double> ScalarConstant(const Expr& e) {
  const auto* constant = e->As<ConstantNode>();
  if (constant == nullptr || e->type().tensor().NumElements() != 1) return std::nullopt;
  const DLDataType dtype = constant->value.dtype();
  if (dtype == runtime::kFloat32) return *static_cast<const float*>(constant->value.data());
  if (dtype == DLDataType{kDLFloat, 64, 1}) return *static_cast<const double*>(constant->value.data());
  return std::nullopt;
}

// For x * c, c * x or x / c of a scalar constant c, with x of the result's type: x and the factor.
std::optional<std::pair<Expr, double>> ScalarFactor(const Expr& e) {
  const auto* call = e->As<CallNode>();
  if (call == nullptr || call->args.size() != 2) return std::nullopt;
  bool multiply = kMultiply.Is(call->op), divide = kDivide.Is(call->op);
  if (!multiply && !divide) return std::nullopt;
  for (int i : {0, 1}) {
    if (i == 0 && divide) continue;
    std::optional<double> c = ScalarConstant(call->args[i]);
    const Expr& x = call->args[1 - i];
    if (c && x->type() == e->type()) return std::make_pair(x, divide ? 1.0 / *c : *c);
  }
  return std::nullopt;
}

bool IsReshape(const Expr& e) {
  return CallOf(e, kReshape) != nullptr || CallOf(e, kSqueeze) != nullptr || CallOf(e, kExpandDims) != nullptr;
}

// The view of `e` that reads the tensor it was reshaped, transposed, sliced (or, with scaling,
// scaled) from, as far back as that is expressible.
View ViewOf(const Expr& e, bool scaling) {
  const auto* call = e->As<CallNode>();
  if (call == nullptr || call->op == nullptr || !e->type().is_tensor()) return Whole(e);
  if (IsReshape(e)) {
    std::optional<View> view = Reshaped(ViewOf(call->args[0], scaling), ShapeOf(e));
    return view ? *view : Whole(e);
  }
  if (kTranspose.Is(call->op)) {
    View in = ViewOf(call->args[0], scaling);
    View view = in;
    Ints axes = TransposeAxes(call->attrs, in.dims.size());
    for (size_t d = 0; d < axes.size(); ++d) view.dims[d] = in.dims[axes[d]];
    return view;
  }
  if (kStridedSlice.Is(call->op)) {
    std::optional<View> view = Sliced(ViewOf(call->args[0], scaling), *call, ShapeOf(call->args[0]));
    return view ? *view : Whole(e);
  }
  if (std::optional<std::pair<Expr, double>> factor = scaling ? ScalarFactor(e) : std::nullopt) {
    View view = ViewOf(factor->first, scaling);
    view.scale *= factor->second;
    return view;
  }
  return Whole(e);
}

// The view of `e`'s elements in `into`, which a chain of reshapes and transposes (`chain`, e first,
// `into` last) made of it.
std::optional<View> PlaceIn(const std::vector<Expr>& chain) {
  View view = Whole(chain.back());
  for (size_t i = chain.size() - 1; i > 0; --i) {
    const Expr& input = chain[i - 1];
    if (IsReshape(chain[i])) {
      std::optional<View> reshaped = Reshaped(view, ShapeOf(input));
      if (!reshaped) return std::nullopt;
      view = *reshaped;
    } else {  // transpose: input axis axes[d] is result axis d
      Ints axes = TransposeAxes(chain[i]->As<CallNode>()->attrs, view.dims.size());
      View in = view;
      for (size_t d = 0; d < axes.size(); ++d) in.dims[axes[d]] = view.dims[d];
      view = in;
    }
  }
  return view;
}

// A reshape whose last two axes are its input's: a regrouping of the batch of matrices.
bool RegroupsBatch(const Expr& e) {
  if (CallOf(e, kReshape) == nullptr) return false;
  const Ints& out = ShapeOf(e);
  const Ints& in = ShapeOf(e->As<CallNode>()->args[0]);
  return out.size() >= 2 && in.size() >= 2 && out[out.size() - 1] == in[in.size() - 1] &&
         out[out.size() - 2] == in[in.size() - 2];
}

// The bias, of shape `bias_shape`, broadcast to scores of shape `scores`, as a view [batch, query, key].
View BiasView(const Expr& bias, const Ints& scores) {
  const Ints& shape = ShapeOf(bias);
  Ints strides = RowStrides(shape);
  const size_t rank = scores.size(), skipped = rank - shape.size();
  auto component = [&](size_t d) {
    return Component{scores[d], d < skipped || shape[d - skipped] == 1 ? 0 : strides[d - skipped]};
  };
  Dim batch;
  for (size_t d = 0; d + 2 < rank; ++d) batch.push_back(component(d));
  return View{bias, 0, {Simplified(batch), Simplified({component(rank - 2)}), Simplified({component(rank - 1)})}, 1.0};
}

// Whether `bias` broadcasts to `scores` without growing it.
bool BroadcastsTo(const Expr& bias, const Ints& scores) {
  const TensorType& t = bias->type().tensor();
  if (t.dtype != runtime::kFloat32 || t.shape.size() > scores.size()) return false;
  for (size_t i = 0; i < t.shape.size(); ++i) {
    int64_t d = t.shape[t.shape.size() - 1 - i];
    if (d != 1 && d != scores[scores.size() - 1 - i]) return false;
  }
  return true;
}

// The view's batch as strides [b, n] for `batch` x `heads`, if its components split so.
std::optional<std::pair<int64_t, int64_t>> BatchStrides(const Dim& dim, int64_t heads) {
  if (dim.empty()) return std::make_pair(int64_t{0}, int64_t{0});
  if (dim.size() == 1) return std::make_pair(dim[0].stride * heads, dim[0].stride);
  if (dim.size() == 2 && dim[1].extent == heads) return std::make_pair(dim[0].stride, dim[1].stride);
  return std::nullopt;
}

// [offset, b, n, row, column] strides of a 3-D view, if its rows and columns are one component each.
std::optional<Ints> ViewAttr(const View& view, int64_t heads) {
  if (view.dims.size() != 3 || view.dims[1].size() > 1 || view.dims[2].size() > 1) return std::nullopt;
  std::optional<std::pair<int64_t, int64_t>> batch = BatchStrides(view.dims[0], heads);
  if (!batch) return std::nullopt;
  auto stride = [](const Dim& dim) { return dim.empty() ? int64_t{0} : dim[0].stride; };
  return Ints{view.offset, batch->first, batch->second, stride(view.dims[1]), stride(view.dims[2])};
}

void SwapLastTwo(View& view) { std::swap(view.dims[1], view.dims[2]); }

class Combiner {
 public:
  explicit Combiner(const Expr& body) {
    for (const Expr& e : PostOrder(body)) {
      for (const Expr& input : Inputs(e)) users_[input.get()].push_back(e);
    }
    users_[body.get()].push_back(nullptr);  // the function's result
  }

  // For a product of probabilities and values that ends an attention: the tensor its result is
  // written into, and the attention that writes it.
  std::optional<std::pair<Expr, Expr>> Combine(const Expr& product) const {
    const CallNode* pv = CallOf(product, kBatchMatmul);
    if (pv == nullptr || pv->attrs.GetInt("transpose_a") != 0 || !IsFloat32(product)) return std::nullopt;
    Expr p = pv->args[0];
    while (RegroupsBatch(p) && SingleUse(p)) p = p->As<CallNode>()->args[0];
    const CallNode* softmax = CallOf(p, kSoftmax);
    if (softmax == nullptr || !SingleUse(p)) return std::nullopt;
    const int64_t rank = static_cast<int64_t>(ShapeOf(p).size());
    const int64_t axis = softmax->attrs.GetInt("axis");
    if (axis != -1 && axis != rank - 1) return std::nullopt;
    // The scores, back to their product.
    double scale = 1.0;
    Expr s = softmax->args[0], bias;
    Ints bias_scores;
    while (SingleUse(s) && CallOf(s, kBatchMatmul) == nullptr) {
      if (RegroupsBatch(s)) {
        s = s->As<CallNode>()->args[0];
      } else if (std::optional<std::pair<Expr, double>> factor = ScalarFactor(s)) {
        scale *= factor->second;
        s = factor->first;
      } else if (const CallNode* add = CallOf(s, kAdd); add != nullptr && bias == nullptr) {
        // The scores: the operand of the sum's own type that the other broadcasts to; of two such,
        // the one computed by a call (a bias of the scores' full shape is usually a constant).
        auto scores_at = [&](int i) {
          return add->args[i]->type() == s->type() && BroadcastsTo(add->args[1 - i], ShapeOf(s));
        };
        const bool first = scores_at(0), second = scores_at(1);
        if (!first && !second) return std::nullopt;
        const int scores = first && second ? (add->args[0]->As<CallNode>() != nullptr ? 0 : 1) : (first ? 0 : 1);
        bias = add->args[1 - scores];
        bias_scores = ShapeOf(s);
        s = add->args[scores];
      } else {
        return std::nullopt;
      }
    }
    const CallNode* qk = CallOf(s, kBatchMatmul);
    if (qk == nullptr || !SingleUse(s) || !IsFloat32(s)) return std::nullopt;
    View q = ViewOf(qk->args[0], true), k = ViewOf(qk->args[1], true), v = ViewOf(pv->args[1], false);
    if (q.dims.size() != 3 || k.dims.size() != 3 || v.dims.size() != 3) return std::nullopt;
    if (qk->attrs.GetInt("transpose_a") != 0) SwapLastTwo(q);
    if (qk->attrs.GetInt("transpose_b") == 0) SwapLastTwo(k);  // [batch, head size, keys] -> [batch, keys, head size]
    if (pv->attrs.GetInt("transpose_b") != 0) SwapLastTwo(v);
    // The result, forward through the reshapes and transposes that join its heads.
    std::vector<Expr> chain = {product};
    for (const Expr* next; (next = SingleUser(chain.back())) != nullptr &&
                           (IsReshape(*next) || CallOf(*next, kTranspose) != nullptr);) {
      chain.push_back(*next);
    }
    std::optional<View> out;
    while (!(out = PlaceIn(chain))) chain.pop_back();
    const Ints& scores = ShapeOf(s);
    const int64_t batch_size = scores[0], queries = scores[1], keys = scores[2];
    const int64_t head_size = ShapeOf(qk->args[0])[qk->attrs.GetInt("transpose_a") != 0 ? 1 : 2];
    const int64_t value_size = ShapeOf(product)[2];
    // The heads: the inner extent of any view whose batch has two components.
    std::vector<const View*> views = {&q, &k, &v, &*out};
    View bias_view;
    if (bias != nullptr) {
      bias_view = BiasView(bias, bias_scores);
      views.push_back(&bias_view);
    }
    int64_t heads = batch_size;
    for (const View* view : views) {
      if (view->dims.size() == 3 && view->dims[0].size() == 2) heads = view->dims[0][1].extent;
    }
    if (heads == 0 || batch_size % heads != 0) return std::nullopt;
    std::vector<Ints> attrs;
    for (const View* view : views) {
      std::optional<Ints> attr = ViewAttr(*view, heads);
      if (!attr) return std::nullopt;
      attrs.push_back(*attr);
    }
    if (attrs[3][4] != 1) return std::nullopt;  // the kernel writes each row's values contiguously
    Attrs a;
    a.Set("sizes", Ints{batch_size / heads, heads, queries, keys, head_size, value_size});
    a.Set("scale", scale * q.scale * k.scale);
    a.Set("q_view", attrs[0]);
    a.Set("k_view", attrs[1]);
    a.Set("v_view", attrs[2]);
    a.Set("bias_view", bias != nullptr ? attrs[4] : Ints{});
    a.Set("out_shape", ShapeOf(chain.back()));
    a.Set("out_view", attrs[3]);
    std::vector<Expr> args = {q.base, k.base, v.base};
    if (bias != nullptr) args.push_back(bias);
    return std::make_pair(chain.back(), Call(kAttention, args, a));
  }

 private:
  static bool IsFloat32(const Expr& e) {
    return e->type().is_tensor() && e->type().tensor().dtype == runtime::kFloat32;
  }
  bool SingleUse(const Expr& e) const {
    auto it = users_.find(e.get());
    return it != users_.end() && it->second.size() == 1;
  }
  const Expr* SingleUser(const Expr& e) const {
    auto it = users_.find(e.get());
    return it != users_.end() && it->second.size() == 1 && it->second[0] != nullptr ? &it->second[0] : nullptr;
  }

  std::unordered_map<const ExprNode*, std::vector<Expr>> users_;
};

}  // namespace

Expr CombineAttention(const Expr& main, const PassEnvironment&) {
  const auto* f = main->As<FunctionNode>();
  Combiner combiner(f->body);
  // Each attention's call, at the tensor it writes; its operands are rewritten before it.
  std::unordered_map<const ExprNode*, Expr> attention_at;
  for (const Expr& e : PostOrder(f->body)) {
    if (std::optional<std::pair<Expr, Expr>> found = combiner.Combine(e)) {
      attention_at[found->first.get()] = found->second;
    }
  }
  if (attention_at.empty()) return main;
  std::unordered_map<const ExprNode*, Expr> rewritten;
  Expr body = Rewrite(f->body, [&](const Expr& original, const std::vector<Expr>& inputs) {
    Expr out = WithInputs(original, inputs);
    if (auto it = attention_at.find(original.get()); it != attention_at.end()) {
      const auto* call = it->second->As<CallNode>();
      std::vector<Expr> args;
      for (const Expr& arg : call->args) args.push_back(rewritten.at(arg.get()));
      out = Call(kAttention, args, call->attrs);
    }
    rewritten[original.get()] = out;
    return out;
  });
  return Function(f->params, body, f->attrs);
}

}  // namespace kiln::transform
