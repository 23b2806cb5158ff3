// The dnnl codegen: support predicates, the composite pattern table, the JSON module.
#include "backend/contrib/dnnl/dnnl_codegen.h"


#include "backend/json_codegen.h"
#include "runtime/error.h"

namespace kiln::backend {

using namespace ir;
using transform::CompositePattern;
using transform::IsConstant;
using transform::IsOp;
using transform::Pattern;
using transform::Wildcard;

namespace {

const OpRef kConv2D("nn.conv2d");
const OpRef kConv2DTranspose("nn.conv2d_transpose");
const OpRef kDense("nn.dense");
const OpRef kBiasAdd("nn.bias_add");
const OpRef kAdd("add");
const OpRef kMultiply("multiply");
const OpRef kRelu("nn.relu");
const OpRef kClip("clip");
const OpRef kSigmoid("sigmoid");
const OpRef kTanh("tanh");
const OpRef kErf("erf");
const OpRef kDivide("divide");
const OpRef kMaxPool2D("nn.max_pool2d");
const OpRef kAvgPool2D("nn.avg_pool2d");
const OpRef kGlobalAvgPool2D("nn.global_avg_pool2d");
const OpRef kBatchMatmul("nn.batch_matmul");
const OpRef kSoftmax("nn.softmax");
const OpRef kLayerNorm("nn.layer_norm");
const OpRef kExp("exp");
const OpRef kLog("log");
const OpRef kSqrt("sqrt");
const OpRef kAbs("abs");

bool Float32(const Type& t) { return t.is_tensor() && t.tensor().dtype == runtime::kFloat32; }

// A bias along the channels: nn.bias_add, or add of a constant.
Pattern Bias(const Pattern& x) {
  return IsOp(kBiasAdd, {x, IsConstant()}) | IsOp(kAdd, {x, IsConstant()}).Commutative();
}

// x * sigmoid(x), and Gelu: 0.5 * x * (1 + erf(x / sqrt 2)), in the orders kiln's Gelu and
// PyTorch's export write it.
Pattern Swish(const Pattern& x) { return IsOp(kMultiply, {x, IsOp(kSigmoid, {x})}).Commutative(); }
Pattern Gelu(const Pattern& x) {
  Pattern erf = IsOp(kErf, {IsOp(kMultiply, {x, IsConstant()}) | IsOp(kDivide, {x, IsConstant()})});
  Pattern one_plus = IsOp(kAdd, {erf, IsConstant()}).Commutative();
  return IsOp(kMultiply, {IsOp(kMultiply, {x, one_plus}).Commutative(), IsConstant()}).Commutative() |
         IsOp(kMultiply, {IsOp(kMultiply, {x, IsConstant()}).Commutative(), one_plus}).Commutative();
}

// Whether `bias` adds one value per output channel (axis 1 of a convolution's NCHW result, the
// last axis of a dense one): oneDNN takes it as a vector.
bool BiasFits(const Expr& bias, const TensorType& out, bool conv, bool bias_add) {
  const std::vector<int64_t>& shape = bias->type().tensor().shape;
  int64_t channels = conv ? out.shape[1] : out.shape.back();
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  if (count != channels) return false;
  if (!conv) return shape.back() == channels;
  return (bias_add && shape.size() == 1) || (shape.size() >= 3 && shape[shape.size() - 3] == channels);
}

bool IsLayer(const CallNode* call) {
  return call != nullptr && (kConv2D.Is(call->op) || kConv2DTranspose.Is(call->op) || kDense.Is(call->op));
}

// The layer an add (or bias_add) adds a constant to, its bias at `*bias`; null when the add is not
// a bias (a sum post-op).
const CallNode* BiasedLayer(const CallNode& add, size_t* bias) {
  for (size_t i : {size_t{0}, size_t{1}}) {
    const auto* layer = add.args[i]->As<CallNode>();
    if (IsLayer(layer) && add.args[1 - i]->kind() == ExprKind::kConstant) {
      *bias = 1 - i;
      return layer;
    }
  }
  return nullptr;
}

}  // namespace

bool DnnlSupports(const CallNode& call) {
  if (call.op == nullptr || !Float32(call.type())) return false;
  for (const Expr& arg : call.args) {
    if (!Float32(arg->type())) return false;
  }
  const TensorType& out = call.type().tensor();
  if (kConv2D.Is(call.op)) {
    return call.attrs.GetString("data_layout") == "NCHW" && call.attrs.GetString("kernel_layout") == "OIHW" &&
           (call.attrs.GetString("out_layout").empty() || call.attrs.GetString("out_layout") == "NCHW");
  }
  if (kConv2DTranspose.Is(call.op)) return true;  // NCHW and IOHW: the only layouts it has
  if (IsAnyOf(call.op, {&kMaxPool2D, &kAvgPool2D, &kGlobalAvgPool2D})) return call.attrs.GetString("layout") == "NCHW";
  if (kDense.Is(call.op)) return call.attrs.GetString("weight_layout") == "NK";
  if (kBatchMatmul.Is(call.op)) return out.ndim() == 3;
  if (kSoftmax.Is(call.op)) return true;
  if (kLayerNorm.Is(call.op)) {
    int64_t axis = call.attrs.GetInt("axis");
    return axis == -1 || axis == static_cast<int64_t>(out.ndim()) - 1;
  }
  if (IsAnyOf(call.op, {&kAdd, &kMultiply})) {
    const TensorType& a = call.args[0]->type().tensor();
    const TensorType& b = call.args[1]->type().tensor();
    return (a.shape == out.shape || b.shape == out.shape) && a.ndim() <= out.ndim() && b.ndim() <= out.ndim();
  }
  return IsAnyOf(call.op, {&kRelu, &kTanh, &kSigmoid, &kExp, &kLog, &kSqrt, &kAbs, &kClip});  // oneDNN's eltwise
}

std::vector<CompositePattern> DnnlPatterns() {
  std::vector<CompositePattern> table;
  Pattern data = Wildcard(), weight = IsConstant();
  Pattern conv = IsOp(kConv2D, {data, weight});
  Pattern conv_bias = Bias(conv);
  Pattern dense = IsOp(kDense, {Wildcard(), IsConstant()});
  Pattern dense_bias = Bias(dense);
  auto supported = [](const transform::Match& m) {
    std::vector<Expr> calls = m.interior();
    calls.push_back(m.root());
    for (const Expr& e : calls) {
      const auto* call = e->As<CallNode>();
      if (!Float32(call->type())) return false;
      if (IsLayer(call) && !DnnlSupports(*call)) return false;
      if (kAdd.Is(call->op) || kBiasAdd.Is(call->op)) {
        size_t bias = 0;
        if (const CallNode* layer = BiasedLayer(*call, &bias)) {
          if (!BiasFits(call->args[bias], layer->type().tensor(), !kDense.Is(layer->op), kBiasAdd.Is(call->op))) {
            return false;
          }
        } else if (call->args[0]->kind() != ExprKind::kConstant && call->args[1]->kind() != ExprKind::kConstant &&
                   (call->args[0]->type() != call->type() || call->args[1]->type() != call->type())) {
          return false;  // a sum post-op adds a value of the result's shape
        }
      }
    }
    return true;
  };
  // The longer patterns first: a convolution with its residual sum, then with an activation.
  Pattern residual = Wildcard();
  Pattern sum = IsOp(kAdd, {conv_bias, residual}).Commutative();
  table.push_back({"dnnl.conv2d_bias_sum_relu", IsOp(kRelu, {sum}), supported});
  table.push_back({"dnnl.conv2d_bias_sum", sum, supported});
  // Convolutions (named as TVM names them: nn.conv2d_transpose is "deconv2d") with a bias, an
  // activation, or both.
  for (const auto& [name, op] : {std::pair{"conv2d", &kConv2D}, std::pair{"deconv2d", &kConv2DTranspose}}) {
    Pattern layer = IsOp(*op, {Wildcard(), IsConstant()});
    Pattern bias = Bias(layer);
    std::string prefix = std::string("dnnl.") + name;
    table.push_back({prefix + "_bias_relu", IsOp(kRelu, {bias}), supported});
    table.push_back({prefix + "_bias_clip", IsOp(kClip, {bias}), supported});
    table.push_back({prefix + "_bias_sigmoid", IsOp(kSigmoid, {bias}), supported});
    table.push_back({prefix + "_bias_tanh", IsOp(kTanh, {bias}), supported});
    table.push_back({prefix + "_bias_swish", Swish(bias), supported});
    table.push_back({prefix + "_bias", bias, supported});
    table.push_back({prefix + "_relu", IsOp(kRelu, {layer}), supported});
  }
  table.push_back({"dnnl.dense_bias_sum", IsOp(kAdd, {dense_bias, Wildcard()}).Commutative(), supported});
  table.push_back({"dnnl.dense_bias_gelu", Gelu(dense_bias), supported});
  table.push_back({"dnnl.dense_bias_relu", IsOp(kRelu, {dense_bias}), supported});
  table.push_back({"dnnl.dense_bias", dense_bias, supported});
  return table;
}

ExternalModule DnnlGenerate(const std::string& symbol, const Expr& function) {
  // As TVM's DNNLJSONSerializer: the graph's symbol and constants are prefixed "dnnl_".
  JsonSubgraph subgraph = SerializeToJson(function, "dnnl_" + symbol);
  std::vector<std::string> names;
  for (const auto& [name, array] : subgraph.constants) names.push_back(name);
  return {symbol, JsonModuleForExport("dnnl_json", symbol, runtime::WriteJsonGraph(subgraph.graph), names),
          subgraph.constants};
}

}  // namespace kiln::backend
