// The checks GuardedSchemaRegistry puts before libonnx's own inference functions (see
// inference_guards.h); each fails inference with a message, as ONNX's own checks do.
#include "frontend/onnx/inference_guards.h"

#include <onnx/defs/shape_inference.h>

#include <algorithm>
#include <string>

namespace kiln::frontend {
namespace {

// More dims than any real model has; what shape inputs longer than this would make ONNX allocate.
constexpr int64_t kMaxRank = 64;

// The rank of input `index` when inference knows it, else -1.
int InputRank(onnx::InferenceContext& ctx, size_t index) {
  if (index >= ctx.getNumInputs()) return -1;
  const onnx::TypeProto* type = ctx.getInputType(index);
  if (type == nullptr || !type->has_tensor_type() || !type->tensor_type().has_shape()) return -1;
  return type->tensor_type().shape().dim_size();
}

// convPoolShapeInference takes the kernel's dims from the weight and indexes the input's
// per-axis attributes with them: ranks that differ read past the end.
void ConvRanksAgree(onnx::InferenceContext& ctx, size_t weight_input = 1) {
  int input = InputRank(ctx, 0), weight = InputRank(ctx, weight_input);
  if (input >= 0 && weight >= 0 && input != weight) {
    fail_shape_inference("the weight (input ", weight_input, ") has rank ", weight, " and the input (input 0) rank ",
                         input, "; they must be equal");
  }
}

// convPoolShapeInference divides by each stride: a stride of 0 is a division by zero.
void StridesArePositive(onnx::InferenceContext& ctx) {
  const onnx::AttributeProto* strides = ctx.getAttribute("strides");
  if (strides == nullptr) return;
  for (int64_t stride : strides->ints()) {
    if (stride < 1) fail_shape_inference("strides must be positive, got ", stride);
  }
}

// Split (without a 'split' list) divides the axis by its number of outputs: none divides by zero.
void SplitHasOutputs(onnx::InferenceContext& ctx) {
  if (ctx.getNumOutputs() == 0) fail_shape_inference("Split needs at least one output");
}

// Expand, Reshape and ConstantOfShape make an output with one dim per element of their shape
// input, counted from its declared length.
void ShapeInputIsShort(onnx::InferenceContext& ctx, size_t index) {
  if (InputRank(ctx, index) != 1) return;
  const auto& dim = ctx.getInputType(index)->tensor_type().shape().dim(0);
  if (dim.has_dim_value() && dim.dim_value() > kMaxRank) {
    fail_shape_inference("the shape (input ", index, ") has ", dim.dim_value(), " elements; an output has at most ",
                         kMaxRank, " dims");
  }
}

// convTransposeShapeInference indexes the weight's dims and its per-axis attributes by the
// input's spatial axes without checking their lengths.
void ConvTransposeFits(onnx::InferenceContext& ctx) {
  ConvRanksAgree(ctx);
  int input = InputRank(ctx, 0);
  if (input < 0) return;
  if (input < 3) fail_shape_inference("the input must have rank 3 or more, got ", input);
  size_t spatial = static_cast<size_t>(input - 2);
  for (const char* name : {"strides", "dilations", "kernel_shape", "output_padding", "output_shape", "pads"}) {
    const onnx::AttributeProto* attr = ctx.getAttribute(name);
    size_t wanted = std::string(name) == "pads" ? 2 * spatial : spatial;
    if (attr != nullptr && static_cast<size_t>(attr->ints_size()) != wanted &&
        !(std::string(name) == "output_shape" && static_cast<size_t>(attr->ints_size()) == spatial + 2)) {
      fail_shape_inference(name, " has ", attr->ints_size(), " values; the input's ", spatial, " axes need ", wanted);
    }
  }
}

// GatherND's inference copies data dims from batch_dims + the index tuples' length on: a negative
// or too large either reads outside data's dims.
void GatherNdFits(onnx::InferenceContext& ctx) {
  const onnx::AttributeProto* attr = ctx.getAttribute("batch_dims");
  int64_t batch_dims = attr == nullptr ? 0 : attr->i();
  int data = InputRank(ctx, 0), indices = InputRank(ctx, 1);
  if (batch_dims < 0) fail_shape_inference("batch_dims must not be negative, got ", batch_dims);
  if (data < 0 || indices < 0) return;
  if (batch_dims >= std::min(data, indices)) {
    fail_shape_inference("batch_dims ", batch_dims, " must be less than the ranks of data (", data, ") and indices (",
                         indices, ")");
  }
  const auto& last = ctx.getInputType(1)->tensor_type().shape().dim(indices - 1);
  if (last.has_dim_value() && (last.dim_value() < 1 || last.dim_value() > data - batch_dims)) {
    fail_shape_inference("index tuples of length ", last.dim_value(), " do not fit data of rank ", data, " after ",
                         batch_dims, " batch dims");
  }
}

// Shape's inference reads its input's type without checking there is one: a value whose producer's
// inference set none (a malformed node upstream) crashed it.
void InputIsTyped(onnx::InferenceContext& ctx) {
  if (ctx.getNumInputs() < 1 || ctx.getInputType(0) == nullptr) {
    fail_shape_inference("the input's type is unknown (the node making it is malformed)");
  }
}

// Loop's inference dereferences the type of each carried input (from input 2) without checking it
// is known, and counts the carried values as its inputs less 2.
void LoopInputsTyped(onnx::InferenceContext& ctx) {
  if (ctx.getNumInputs() < 2) fail_shape_inference("Loop needs its trip count and condition inputs (empty names for absent ones)");
  for (size_t i = 2; i < ctx.getNumInputs(); ++i) {
    if (ctx.getInputType(i) == nullptr) fail_shape_inference("the type of input ", i, " (a carried value) is unknown");
  }
}

// Scan's inference (both forms) reads num_scan_inputs without checking it is given, and counts the
// state values as the inputs less it.
void ScanCountsFit(onnx::InferenceContext& ctx) {
  const onnx::AttributeProto* attr = ctx.getAttribute("num_scan_inputs");
  if (attr == nullptr || attr->type() != onnx::AttributeProto::INT) {
    fail_shape_inference("num_scan_inputs (an int) is required");
  }
  if (attr->i() < 1 || static_cast<size_t>(attr->i()) > ctx.getNumInputs()) {
    fail_shape_inference("num_scan_inputs ", attr->i(), " must be in [1, ", ctx.getNumInputs(), "], the inputs");
  }
}

// DepthToSpace's and SpaceToDepth's inference divide by blocksize squared: 0, or 0 after the
// square overflows.
void BlocksizeFits(onnx::InferenceContext& ctx) {
  const onnx::AttributeProto* attr = ctx.getAttribute("blocksize");
  if (attr != nullptr && (attr->i() < 1 || attr->i() > (int64_t{1} << 15))) {
    fail_shape_inference("blocksize ", attr->i(), " must be in [1, 32768]");
  }
}

// MaxUnpool's inference reads dim 1 of the indices' shape without checking it has a type or rank.
void IndicesHaveChannels(onnx::InferenceContext& ctx) {
  if (ctx.getNumInputs() < 2 || ctx.getInputType(1) == nullptr) fail_shape_inference("the indices' type is unknown");
  const onnx::TypeProto& type = *ctx.getInputType(1);
  if (!type.has_tensor_type() || !type.tensor_type().has_shape() || type.tensor_type().shape().dim_size() < 2) {
    fail_shape_inference("the indices must be a tensor of known rank 2 or more");
  }
}

// The recurrent layers' opset-1 inference reads dims 0 and 1 of X without checking its rank.
void SequenceHasRank3(onnx::InferenceContext& ctx) {
  int rank = InputRank(ctx, 0);
  if (rank >= 0 && rank != 3) fail_shape_inference("X must have rank 3, got ", rank);
}

// LayerNormalization's inference (opset 17) indexes X's dims from `axis` without checking that
// the axis lies within X's rank (a scalar X reads before its dims).
void LayerNormAxisFits(onnx::InferenceContext& ctx) {
  int rank = InputRank(ctx, 0);
  if (rank < 0) return;
  const onnx::AttributeProto* attr = ctx.getAttribute("axis");
  int64_t axis = attr != nullptr && attr->has_i() ? attr->i() : -1;
  if (rank == 0 || axis < -rank || axis >= rank) {
    fail_shape_inference("axis ", axis, " is not an axis of X, which has rank ", rank);
  }
}

using Guard = void (*)(onnx::InferenceContext&);
const std::map<std::string, Guard>& Guards() {
  static const std::map<std::string, Guard> guards = {
      {"AveragePool", StridesArePositive},
      {"Conv",
       [](onnx::InferenceContext& ctx) {
         ConvRanksAgree(ctx);
         StridesArePositive(ctx);
       }},
      {"LpPool", StridesArePositive},
      {"MaxPool", StridesArePositive},
      {"MaxUnpool", IndicesHaveChannels},
      {"ConstantOfShape", [](onnx::InferenceContext& ctx) { ShapeInputIsShort(ctx, 0); }},
      {"ConvInteger",
       [](onnx::InferenceContext& ctx) {
         ConvRanksAgree(ctx);
         StridesArePositive(ctx);
       }},
      {"QLinearConv",
       [](onnx::InferenceContext& ctx) {
         ConvRanksAgree(ctx, 3);  // the weight is input 3
         StridesArePositive(ctx);
       }},
      {"ConvTranspose", ConvTransposeFits},
      {"DepthToSpace", BlocksizeFits},
      {"Expand", [](onnx::InferenceContext& ctx) { ShapeInputIsShort(ctx, 1); }},
      {"GatherND", GatherNdFits},
      {"GRU", SequenceHasRank3},
      {"LayerNormalization", LayerNormAxisFits},
      {"LSTM", SequenceHasRank3},
      {"RNN", SequenceHasRank3},
      {"Loop", LoopInputsTyped},
      {"Reshape", [](onnx::InferenceContext& ctx) { ShapeInputIsShort(ctx, 1); }},
      {"Scan", ScanCountsFit},
      {"Shape", InputIsTyped},
      {"SpaceToDepth", BlocksizeFits},
      {"Split", SplitHasOutputs},
  };
  return guards;
}

}  // namespace

const GuardedSchemaRegistry& GuardedSchemaRegistry::Instance() {
  static const GuardedSchemaRegistry registry;
  return registry;
}

const onnx::OpSchema* GuardedSchemaRegistry::GetSchema(const std::string& key, int max_inclusive_version,
                                                       const std::string& domain) const {
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Instance()->GetSchema(key, max_inclusive_version, domain);
  bool default_domain = domain.empty() || domain == "ai.onnx";
  auto guard = Guards().find(key);
  if (schema == nullptr || !default_domain || guard == Guards().end()) return schema;
  std::lock_guard<std::mutex> lock(mutex_);
  std::unique_ptr<onnx::OpSchema>& guarded = guarded_[schema];
  if (guarded == nullptr) {
    guarded = std::make_unique<onnx::OpSchema>(*schema);
    onnx::InferenceFunction original = schema->GetTypeAndShapeInferenceFunction();
    Guard check = guard->second;
    guarded->TypeAndShapeInferenceFunction([original, check](onnx::InferenceContext& ctx) {
      check(ctx);
      if (original) original(ctx);
    });
  }
  return guarded.get();
}

}  // namespace kiln::frontend
