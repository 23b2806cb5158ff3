// AlterOpLayout: one walk over the main function in topological order. Each value is held either
// as in the original function or, for a 4-D NCHW tensor, in NCHW[x]c; a consumer that cannot
// take the blocked form gets the plain tensor through one shared layout_transform. Convolutions
// and dense layers are laid out as the implementation the kernel selection chooses for them
// wants (strategy/), weights packed now, and carry its name.
#include "transform/alter_op_layout.h"

#include <map>
#include <unordered_map>

#include "ir/layout.h"
#include "ir/provenance.h"
#include "runtime/error.h"
#include "strategy/config.h"
#include "strategy/conv2d.h"
#include "strategy/dense.h"

namespace kiln::transform {

using namespace ir;

namespace {

// The ops this pass makes.
const OpRef kAdd("add");
const OpRef kLayoutTransform("layout_transform");
const OpRef kConv2DWinograd("nn.conv2d_winograd");
const OpRef kReshape("reshape");
const OpRef kConv2D("nn.conv2d");

// A value of the rewritten function: the original value's computation, in NCHW[block]c when
// block > 0 (the original is then a 4-D NCHW tensor), else in the original's layout.
struct Value {
  Expr expr;
  int64_t block = 0;
};

Attrs NewShape(const std::vector<int64_t>& shape) {
  Attrs attrs;
  attrs.Set("newshape", shape);
  return attrs;
}

const CallNode* OpCall(const Expr& e, const OpRef& op) {
  const auto* call = e->As<CallNode>();
  return call != nullptr && op.Is(call->op) ? call : nullptr;
}

bool Is4D(const Expr& e) { return e->type().is_tensor() && e->type().tensor().ndim() == 4; }

class LayoutRewriter {
 public:
  explicit LayoutRewriter(const kernels::KernelConfig& config) : config_(config) {}

  Expr Run(const FunctionNode& f) {
    wanted_blocks_ = WantedBlocks(f.body);
    std::unordered_map<const ExprNode*, Value> values;
    for (const Expr& e : PostOrder(f.body)) {
      std::vector<Value> inputs;
      for (const Expr& input : Inputs(e)) inputs.push_back(values.at(input.get()));
      const auto* call = e->As<CallNode>();
      if (call != nullptr && call->op != nullptr) {
        WorkingOn scope(e);
        values[e.get()] = RewriteCall(*call, inputs);
        continue;
      }
      std::vector<Expr> plain;
      for (const Value& v : inputs) plain.push_back(ToPlain(v));
      values[e.get()] = {WithInputs(e, plain), 0};
    }
    return Function(f.params, ToPlain(values.at(f.body.get())), f.attrs);
  }

 private:
  // The channel block a value's consumers want it in, where they want 8 and a convolution could
  // make it so: a grouped convolution whose groups' input channels 8 fills and 16 does not reads
  // blocks of 8, and the wish passes back through elementwise, bias and broadcasting ops that are
  // their input's only consumer (RegNet: 1x1 -> bias -> relu -> grouped 3x3 with groups of 8
  // channels; a 1x1 convolution making blocks of 16 needed a transform to 8 after it).
  static std::unordered_map<const ExprNode*, int64_t> WantedBlocks(const Expr& body) {
    std::vector<Expr> order = PostOrder(body);
    std::unordered_map<const ExprNode*, int> uses;
    for (const Expr& e : order) {
      for (const Expr& input : Inputs(e)) ++uses[input.get()];
    }
    std::unordered_map<const ExprNode*, int64_t> wanted;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {  // consumers before their producers
      const auto* call = (*it)->As<CallNode>();
      if (call == nullptr || call->op == nullptr || call->args.empty() || !Is4D(call->args[0])) continue;
      const Expr& data = call->args[0];
      if (kConv2D.Is(call->op)) {
        if (!(strategy::Conv2DLayoutsOf(*call) == strategy::Conv2DLayouts{"NCHW", "OIHW", "NCHW"})) continue;
        strategy::Conv2DProblem p = strategy::Conv2DProblemOf(*call);
        int64_t per_group = p.groups > 1 && !p.depthwise() ? p.channels / p.groups : 0;
        if (per_group % 8 == 0 && per_group % 16 != 0 && uses[data.get()] == 1) wanted[data.get()] = 8;
        continue;
      }
      auto wish = wanted.find(it->get());
      LayoutRule rule = call->op->layout;
      bool passes = rule == LayoutRule::kElementwise || rule == LayoutRule::kChannelBias || rule == LayoutRule::kBroadcast;
      if (wish != wanted.end() && passes && uses[data.get()] == 1 && data->type() == (*it)->type()) {
        wanted[data.get()] = wish->second;
      }
    }
    return wanted;
  }

  // `e` (laid out as `src`) laid out as `dst`: constants now, transforms of transforms composed
  // or cancelled, tensors with H = W = 1 reshaped. Shared per (value, layouts).
  Expr Transform(const Expr& e, const std::string& src, const std::string& dst) {
    if (src == dst) return e;
    auto key = std::make_pair(e.get(), src + ">" + dst);
    auto it = transforms_.find(key);
    if (it != transforms_.end()) return it->second.second;
    Layout from = Layout::Parse(src), to = Layout::Parse(dst);
    std::vector<int64_t> primal = from.ToPrimal(e->type().tensor().shape);
    Expr result;
    std::optional<runtime::NDArray> packed;
    if (const auto* constant = e->As<ConstantNode>(); constant != nullptr &&
                                                      (packed = TransformLayout(constant->value, from, to))) {
      result = Constant(*packed);
    } else if (const CallNode* inner = OpCall(e, kLayoutTransform);
               inner != nullptr && inner->attrs.GetString("dst_layout") == src) {
      const std::string& origin = inner->attrs.GetString("src_layout");
      result = origin == dst ? inner->args[0] : Transform(inner->args[0], origin, dst);
    } else if (from.primal() == "NCHW" && to.primal() == "NCHW" && primal[2] == 1 && primal[3] == 1) {
      std::vector<int64_t> shape = to.FromPrimal(primal);  // the same bytes in either layout
      const CallNode* reshape = OpCall(e, kReshape);
      bool undo = reshape != nullptr && reshape->args[0]->type().tensor().shape == shape;
      result = undo ? reshape->args[0] : Call(kReshape, {e}, NewShape(shape));
    } else {
      Attrs attrs;
      attrs.Set("src_layout", src);
      attrs.Set("dst_layout", dst);
      result = Call(kLayoutTransform, {e}, attrs);
    }
    transforms_[key] = {e, result};
    return result;
  }

  Expr ToPlain(const Value& v) { return v.block == 0 ? v.expr : Transform(v.expr, BlockedDataLayout(v.block), "NCHW"); }

  Expr ToBlocked(const Value& v, int64_t block) {
    return Transform(v.expr, BlockedDataLayout(v.block), BlockedDataLayout(block));
  }

  Value Plain(const CallNode& call, const std::vector<Value>& args) {
    std::vector<Expr> plain;
    for (const Value& v : args) plain.push_back(ToPlain(v));
    return {Call(*call.op, plain, call.attrs), 0};
  }

  // What the op's LayoutRule (ir/op.h) says.
  Value RewriteCall(const CallNode& call, const std::vector<Value>& args) {
    LayoutRule rule = call.op->layout;
    if (rule == LayoutRule::kConvolution) return Conv2D(call, args);
    if (rule == LayoutRule::kDense) return Dense(call, args);
    if (rule == LayoutRule::kLayoutTransform) {
      return {Transform(ToPlain(args[0]), call.attrs.GetString("src_layout"), call.attrs.GetString("dst_layout")), 0};
    }
    if (rule == LayoutRule::kConcatenate) return Concatenate(call, args);
    bool binary = rule == LayoutRule::kBroadcast && args.size() == 2;
    if (args.empty() || args[0].block == 0) {
      return binary && args[1].block != 0 ? Broadcast(call, args, args[1].block) : Plain(call, args);
    }
    int64_t block = args[0].block;
    switch (rule) {
      case LayoutRule::kElementwise:
        if (args.size() == 1) return {Call(*call.op, {args[0].expr}, call.attrs), block};
        break;
      case LayoutRule::kBroadcast:
        if (binary) return Broadcast(call, args, LargerOperandBlock(call, args));
        break;
      case LayoutRule::kChannelBias:
        if (NormalizeAxis(call.attrs.GetInt("axis")) == 1) {
          return {Call(kAdd, {args[0].expr, ToBlocked({Along(args[1].expr, 1), 0}, block)}), block};
        }
        break;
      case LayoutRule::kPool: {
        Attrs attrs = call.attrs;
        attrs.Set("layout", BlockedDataLayout(block));
        return {Call(*call.op, {args[0].expr}, attrs), block};
      }
      case LayoutRule::kSpatialResize:
        if (SpatialResize(call)) {  // [N, C / b, H, W, b]: the same taps along H and W
          const std::vector<int64_t>& shape = call.args[0]->type().tensor().shape;
          const std::vector<int64_t>& size = call.attrs.GetInts("size");
          const std::vector<double>& scales = call.attrs.GetFloats("scales");
          Attrs attrs = call.attrs;
          attrs.Set("size", std::vector<int64_t>{shape[0], shape[1] / block, size[2], size[3], block});
          attrs.Set("scales", std::vector<double>{1, 1, scales[2], scales[3], 1});
          return {Call(*call.op, {args[0].expr}, attrs), block};
        }
        break;
      case LayoutRule::kSpatialReduce:
        if (SpatialReduction(call)) {
          Attrs attrs = call.attrs;
          attrs.Set("axis", std::vector<int64_t>{2, 3});
          return {Call(*call.op, {args[0].expr}, attrs), block};
        }
        break;
      default:
        break;
    }
    return Plain(call, args);
  }

  static int64_t NormalizeAxis(int64_t axis) { return axis < 0 ? axis + 4 : axis; }

  // The block of a binary op's larger operand when both are blocked (the other one's transform is
  // then the cheaper, a reshape when it is [N, C, 1, 1]: squeeze-and-excitation scales); else the
  // first's.
  static int64_t LargerOperandBlock(const CallNode& call, const std::vector<Value>& args) {
    if (args[1].block == 0 || args[1].block == args[0].block) return args[0].block;
    bool second_larger = call.args[1]->type().tensor().NumElements() > call.args[0]->type().tensor().NumElements();
    return second_larger ? args[1].block : args[0].block;
  }

  // A 1-D per-channel tensor as [1, C, 1, 1] (`axis` 1 of NCHW).
  static Expr Along(const Expr& e, int axis) {
    std::vector<int64_t> shape(4, 1);
    shape[axis] = e->type().tensor().shape[0];
    return Reshaped(e, shape);
  }

  // A resize (image.resize) of a 4-D tensor's H and W only, with a coordinate mapping that maps
  // each coordinate of an axis it keeps (scale 1, same length) to itself, as of any length: that
  // of the channel blocks and of the channels in a block too. (Not tf_half_pixel_for_nn, whose
  // x + 0.5 a ceiling rounds up; not tf_crop_and_resize, whose region covers every axis.)
  static bool SpatialResize(const CallNode& call) {
    const std::vector<int64_t>& shape = call.args[0]->type().tensor().shape;
    const std::vector<int64_t>& size = call.attrs.GetInts("size");
    const std::vector<double>& scales = call.attrs.GetFloats("scales");
    const std::string& mode = call.attrs.GetString("coordinate_transformation_mode");
    bool keeps_itself = mode == "half_pixel" || mode == "pytorch_half_pixel" || mode == "align_corners" ||
                        mode == "asymmetric";
    return shape.size() == 4 && size.size() == 4 && size[0] == shape[0] && size[1] == shape[1] && scales[0] == 1 &&
           scales[1] == 1 && call.attrs.GetFloats("roi").empty() && keeps_itself;
  }

  static bool SpatialReduction(const CallNode& call) {
    if (call.attrs.GetInt("keepdims") == 0) return false;
    std::vector<int64_t> axes = call.attrs.GetInts("axis");
    for (int64_t& a : axes) a = NormalizeAxis(a);
    return axes == std::vector<int64_t>{2, 3} || axes == std::vector<int64_t>{3, 2};
  }

  // A convolution still in NCHW / OIHW, laid out for the implementation chosen for it.
  Value Conv2D(const CallNode& call, const std::vector<Value>& args) {
    strategy::Conv2DLayouts plain{"NCHW", "OIHW", "NCHW"};
    if (!(strategy::Conv2DLayoutsOf(call) == plain) || !call.attrs.GetString("implementation").empty()) {
      return Plain(call, args);
    }
    strategy::Conv2DProblem problem = strategy::Conv2DProblemOf(call);
    const strategy::Conv2DImplementation* chosen = strategy::ChooseConv2D(problem, config_);
    if (chosen == nullptr) return Plain(call, args);
    strategy::Conv2DLayouts layouts = chosen->layouts(problem, config_, args[0].block);
    // An ungrouped blocked convolution makes the block its consumers want, when its kernel does.
    auto wish = wanted_blocks_.find(&call);
    if (wish != wanted_blocks_.end() && chosen->kernel == strategy::Conv2DKernel::kConv2DNCHWc && problem.groups == 1 &&
        problem.out_channels % wish->second == 0) {
      kernels::KernelConfig wished = config_;
      wished.conv_block = static_cast<int>(wish->second);
      strategy::Conv2DLayouts wished_layouts = chosen->layouts(problem, wished, args[0].block);
      std::string why;
      if (chosen->computes(problem, wished_layouts, &why)) layouts = wished_layouts;
    }
    if (chosen->kernel == strategy::Conv2DKernel::kConv2DWinograd) return Winograd(call, args, layouts);
    Attrs attrs = call.attrs;
    attrs.Set("implementation", std::string(chosen->name));
    if (!(layouts == plain)) {
      attrs.Set("data_layout", layouts.data);
      attrs.Set("kernel_layout", layouts.kernel);
      attrs.Set("out_layout", layouts.out);
    }
    Expr data = ToBlocked(args[0], ChannelBlock(layouts.data));
    Expr weight = Transform(ToPlain(args[1]), "OIHW", layouts.kernel);
    return {Call(*call.op, {data, weight}, attrs), ChannelBlock(layouts.out)};
  }

  // A 3x3 convolution computed by Winograd's F(4x4, 3x3): an nn.conv2d_winograd call with its
  // constant weight transformed now, so that no run transforms it.
  Value Winograd(const CallNode& call, const std::vector<Value>& args, const strategy::Conv2DLayouts& layouts) {
    const auto* weight = call.args[1]->As<ConstantNode>();
    runtime::CheckInternal(weight != nullptr, "the Winograd convolution's weight is not a constant");
    int64_t in_block = ChannelBlock(layouts.data), out_block = ChannelBlock(layouts.out);
    Attrs attrs;
    attrs.Set("padding", call.attrs.GetInts("padding"));
    attrs.Set("data_layout", layouts.data);
    attrs.Set("out_layout", layouts.out);
    Expr transformed = Constant(strategy::WinogradWeightOf(weight->value, in_block, out_block));
    return {Call(kConv2DWinograd, {ToBlocked(args[0], in_block), transformed}, attrs), out_block};
  }

  // A dense layer gets the weight layout of the implementation chosen for it, a constant weight
  // packed now, so that no run packs it.
  Value Dense(const CallNode& call, const std::vector<Value>& args) {
    if (call.attrs.GetString("weight_layout") != "NK" || !call.attrs.GetString("implementation").empty()) {
      return Plain(call, args);
    }
    Expr weight = ToPlain(args[1]);
    Expr data = ToPlain(args[0]);
    Expr as_given = Call(*call.op, {data, weight}, call.attrs);  // its weight as the problem sees it
    strategy::DenseProblem problem = strategy::DenseProblemOf(*as_given->As<CallNode>());
    const strategy::DenseImplementation* chosen = strategy::ChooseDense(problem, config_);
    if (chosen == nullptr) return {as_given, 0};
    std::string layout = chosen->weight_layout(config_);
    Attrs attrs = call.attrs;
    attrs.Set("implementation", std::string(chosen->name));
    attrs.Set("weight_layout", layout);
    return {Call(*call.op, {data, Transform(weight, "NK", layout)}, attrs), 0};
  }

  // Broadcasting arithmetic whose result is a 4-D NCHW tensor, in NCHW[block]c. An operand that
  // varies along channels is transformed; one that does not is reshaped to [N, 1, H, W, 1].
  Value Broadcast(const CallNode& call, const std::vector<Value>& args, int64_t block) {
    const Type& type = call.type();
    if (!type.is_tensor() || type.tensor().ndim() != 4 || type.tensor().shape[1] % block != 0) return Plain(call, args);
    std::vector<Expr> operands;
    for (size_t i = 0; i < args.size(); ++i) {
      const Value& v = args[i];
      const TensorType& t = call.args[i]->type().tensor();
      if (v.block != 0) {
        operands.push_back(ToBlocked(v, block));
        continue;
      }
      if (t.NumElements() == 1) {
        operands.push_back(v.expr);
        continue;
      }
      std::vector<int64_t> shape(4 - t.ndim(), 1);
      shape.insert(shape.end(), t.shape.begin(), t.shape.end());
      Expr four_d = t.ndim() == 4 ? v.expr : Reshaped(v.expr, shape);
      if (shape[1] == 1) {
        operands.push_back(Reshaped(v.expr, {shape[0], 1, shape[2], shape[3], 1}));
      } else {
        operands.push_back(ToBlocked({four_d, 0}, block));
      }
    }
    return {Call(*call.op, operands, call.attrs), block};
  }

  // A reshape, computed now for a constant.
  static Expr Reshaped(const Expr& e, const std::vector<int64_t>& shape) {
    if (const auto* constant = e->As<ConstantNode>()) {
      return Constant(constant->value.CreateView(shape, constant->value.dtype()));
    }
    return Call(kReshape, {e}, NewShape(shape));
  }

  // On channels, blocked when some input is blocked and every input's channels divide by its
  // block.
  Value Concatenate(const CallNode& call, const std::vector<Value>& args) {
    int64_t block = 0;
    for (const Value& v : args) block = block == 0 ? v.block : block;
    bool fits = block != 0 && Is4D(call.args[0]) && NormalizeAxis(call.attrs.GetInt("axis")) == 1;
    for (const Expr& arg : call.args) fits = fits && arg->type().tensor().shape[1] % block == 0;
    if (!fits) return Plain(call, args);
    std::vector<Expr> operands;
    for (const Value& v : args) operands.push_back(ToBlocked(v, block));
    Attrs attrs = call.attrs;
    attrs.Set("axis", int64_t{1});
    return {Call(*call.op, operands, attrs), block};
  }

  const kernels::KernelConfig config_;  // the target's, with the pass' channel block
  std::unordered_map<const ExprNode*, int64_t> wanted_blocks_;  // WantedBlocks
  // (value, "src>dst") -> (the value, kept alive so that its address stays its own; the result)
  std::map<std::pair<const ExprNode*, std::string>, std::pair<Expr, Expr>> transforms_;
};

}  // namespace

Expr AlterOpLayout(const Expr& main, const AlterOpLayoutOptions& options) {
  const auto* f = main->As<FunctionNode>();
  runtime::CheckInternal(f != nullptr, "AlterOpLayout: expected a function");
  runtime::Check(options.block == 0 || options.block == 8 || options.block == 16,
                 "AlterOpLayout: the channel block must be 8 or 16 (0 disables the pass), got ", options.block);
  if (options.block == 0) return main;
  kernels::KernelConfig config = strategy::ConfigFor(options.target);
  config.conv_block = static_cast<int>(options.block);
  return LayoutRewriter(config).Run(*f);
}

Expr AlterOpLayout(const Expr& main, const PassEnvironment& environment) {
  AlterOpLayoutOptions options;
  options.target = environment.target;
  options.block = environment.context.GetInt("kiln.AlterOpLayout.block");
  if (options.block == -1) options.block = strategy::ConfigFor(environment.target).conv_block;
  return AlterOpLayout(main, options);
}

}  // namespace kiln::transform
