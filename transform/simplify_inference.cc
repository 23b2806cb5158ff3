// SimplifyInference.
#include "transform/simplify_inference.h"

#include "runtime/error.h"

namespace kiln::transform {

using namespace ir;

namespace {

// The ops this pass makes.
const OpRef kAdd("add");
const OpRef kBatchNorm("nn.batch_norm");
const OpRef kCopy("copy");
const OpRef kDropout("nn.dropout");
const OpRef kCast("cast");
const OpRef kDivide("divide");
const OpRef kMultiply("multiply");
const OpRef kReshape("reshape");
const OpRef kSqrt("sqrt");
const OpRef kSubtract("subtract");

Attrs Shape(const std::vector<int64_t>& shape) {
  Attrs attrs;
  attrs.Set("newshape", shape);
  return attrs;
}

Expr Scalar(float value) { return FloatConstant({}, {value}); }

// x * scale + shift with scale = gamma / sqrt(var + eps), shift = beta - mean * scale, laid
// along `axis` of x.
Expr ExpandBatchNorm(const CallNode& bn, const std::vector<Expr>& in) {
  const TensorType& x = in[0]->type().tensor();
  int axis = static_cast<int>(bn.attrs.GetInt("axis"));
  if (axis < 0) axis += x.ndim();
  Expr eps = Scalar(static_cast<float>(bn.attrs.GetFloat("epsilon")));
  if (x.dtype != runtime::kFloat32) eps = Call(kCast, {eps}, [&] { Attrs a; a.Set("dtype", DTypeToString(x.dtype)); return a; }());
  Expr scale = Call(kDivide, {in[1], Call(kSqrt, {Call(kAdd, {in[4], eps})})});
  Expr shift = Call(kSubtract, {in[2], Call(kMultiply, {in[3], scale})});
  std::vector<int64_t> along(x.ndim() - axis, 1);
  along[0] = x.shape[axis];
  if (along.size() > 1) {
    scale = Call(kReshape, {scale}, Shape(along));
    shift = Call(kReshape, {shift}, Shape(along));
  }
  return Call(kAdd, {Call(kMultiply, {in[0], scale}), shift});
}

}  // namespace

Expr SimplifyInference(const Expr& main, const PassEnvironment&) {
  const auto* f = main->As<FunctionNode>();
  Expr body = Rewrite(f->body, [](const Expr& original, const std::vector<Expr>& inputs) -> Expr {
    const auto* call = original->As<CallNode>();
    if (call == nullptr || call->op == nullptr) return WithInputs(original, inputs);
    if (kDropout.Is(call->op) || kCopy.Is(call->op)) return inputs[0];
    if (kBatchNorm.Is(call->op)) return ExpandBatchNorm(*call, inputs);
    return WithInputs(original, inputs);
  });
  return Function(f->params, body, f->attrs);
}

}  // namespace kiln::transform
