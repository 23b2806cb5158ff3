// Input shapes and the batch dimension applied to an ONNX model before import (input_shapes.h).
#include "frontend/onnx/input_shapes.h"

#include "runtime/error.h"
#include "runtime/graph_json.h"
#include "runtime/text.h"

namespace kiln::frontend {

// An input is named by its text (runtime::ValidUtf8: bytes that are not UTF-8 as \xNN, the name
// the executor knows it by) or, from C++, by its bytes.
void ApplyInputShapes(onnx::ModelProto& model, const OnnxImportOptions& options) {
  std::set<std::string> inputs;
  for (auto& input : *model.mutable_graph()->mutable_input()) {
    std::string text = runtime::ValidUtf8(input.name());
    inputs.insert(text);
    inputs.insert(input.name());
    auto it = options.input_shapes.find(text);
    if (it == options.input_shapes.end()) it = options.input_shapes.find(input.name());
    if (it == options.input_shapes.end()) continue;
    auto* shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->clear_dim();
    auto names = options.input_dim_names.find(it->first);
    for (size_t axis = 0; axis < it->second.size(); ++axis) {
      int64_t d = it->second[axis];
      if (d == -1 && names != options.input_dim_names.end() && names->second.count(static_cast<int>(axis)) != 0) {
        shape->add_dim()->set_dim_param(names->second.at(static_cast<int>(axis)));
        continue;
      }
      runtime::Check(d >= 0, "input shape for '", input.name(), "' has a negative dimension");
      shape->add_dim()->set_dim_value(d);
    }
  }
  for (const auto& [name, shape] : options.input_shapes) {
    if (inputs.count(name) == 0) {
      std::string known;
      for (const auto& input : model.graph().input()) {
        known += (known.empty() ? "" : ", ") + runtime::ValidUtf8(input.name());
      }
      runtime::Fail("--input-shapes (Python: shape_dict) names '", name,
                    "', which is not an input of the model (its inputs are: ", known, ")");
    }
  }
}

std::optional<BatchSpec> ApplyBatchDim(onnx::ModelProto& model, const OnnxImportOptions& options, int64_t samples) {
  if (options.dims.empty()) return std::nullopt;
  runtime::Check(options.dims.size() == 1, "--dims gives ", options.dims.size(), " dimensions; kiln decides one ",
                 "at run time today, a batch dimension (axis 0 of the inputs that have it)");
  BatchSpec batch{options.dims.begin()->first, options.dims.begin()->second, {}};
  runtime::Check(batch.range.min >= 1 && batch.range.min <= batch.range.max && batch.range.max <= runtime::kMaxBatch,
                 "--dims: the range of '", batch.name, "' is ", batch.range.min, "..", batch.range.max,
                 "; expected MIN..MAX with 1 <= MIN <= MAX <= ", runtime::kMaxBatch);
  for (auto& input : *model.mutable_graph()->mutable_input()) {
    auto* dims = input.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim();
    for (int axis = 0; axis < dims->size(); ++axis) {
      auto* dim = dims->Mutable(axis);
      if (!dim->has_dim_param() || dim->dim_param() != batch.name) continue;
      runtime::Check(axis == 0, "dimension '", batch.name, "' is axis ", axis, " of input '",
                     runtime::ValidUtf8(input.name()), "'; kiln decides only axis 0 (a batch) at run time today");
      dim->set_dim_value(samples);
      batch.inputs.insert(runtime::ValidUtf8(input.name()));
    }
  }
  runtime::Check(!batch.inputs.empty(), "--dims names '", batch.name, "', which no input of the model has as a ",
                 "dimension (an ONNX dim_param, or a name in --input-shapes)");
  return batch;
}

}  // namespace kiln::frontend
