// Input shapes and the batch dimension applied to an ONNX model before import (input_shapes.h).
#include "frontend/onnx/input_shapes.h"

#include <algorithm>
#include <map>
#include <utility>

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

namespace {

// The (input, axis) pairs each named dimension of `options.dims` is; Error for a name no input has.
std::map<std::string, std::vector<std::pair<std::string, int>>> DimUses(const onnx::ModelProto& model,
                                                                         const OnnxImportOptions& options) {
  std::map<std::string, std::vector<std::pair<std::string, int>>> uses;
  for (const auto& input : model.graph().input()) {
    const auto& dims = input.type().tensor_type().shape().dim();
    for (int axis = 0; axis < dims.size(); ++axis) {
      if (dims[axis].has_dim_param() && options.dims.count(dims[axis].dim_param()) != 0) {
        uses[dims[axis].dim_param()].emplace_back(runtime::ValidUtf8(input.name()), axis);
      }
    }
  }
  for (const auto& [name, range] : options.dims) {
    runtime::Check(uses.count(name) != 0, "--dims names '", name, "', which no input of the model has as a ",
                   "dimension (an ONNX dim_param, or a name in --input-shapes)");
  }
  return uses;
}

}  // namespace

std::string BatchName(const onnx::ModelProto& model, const OnnxImportOptions& options) {
  for (const auto& [name, uses] : DimUses(model, options)) {
    if (!options.batch_allowed) break;
    if (options.dims.at(name).step != 1) continue;
    if (std::all_of(uses.begin(), uses.end(), [](const auto& use) { return use.second == 0; })) return name;
  }
  return "";
}

std::vector<runtime::ShapeDim> ShapeDimsOf(const onnx::ModelProto& model, const OnnxImportOptions& options) {
  std::string batch = BatchName(model, options);
  std::vector<runtime::ShapeDim> dims;
  for (const auto& [name, range] : options.dims) {
    if (name == batch) continue;
    runtime::Check(range.min >= 1 && range.min <= range.max && range.max <= runtime::kMaxShapeDim && range.step >= 1 &&
                       (range.max - range.min) % range.step == 0,
                   "--dims: the range of '", name, "' is ", range.min, "..", range.max, ":", range.step,
                   "; expected MIN..MAX[:STEP] with 1 <= MIN <= MAX <= ", runtime::kMaxShapeDim,
                   " and MAX - MIN a whole number of steps");
    dims.push_back({name, range.min, range.max, range.step});
  }
  return dims;
}

void ApplyShapeDimValues(onnx::ModelProto& model, const std::vector<runtime::ShapeDim>& dims,
                         const std::vector<int64_t>& values) {
  for (auto& input : *model.mutable_graph()->mutable_input()) {
    for (auto& dim : *input.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
      if (!dim.has_dim_param()) continue;
      for (size_t d = 0; d < dims.size(); ++d) {
        if (dim.dim_param() == dims[d].name) {
          dim.set_dim_value(values[d]);
          break;
        }
      }
    }
  }
}

std::optional<BatchSpec> ApplyBatchDim(onnx::ModelProto& model, const OnnxImportOptions& options, int64_t samples) {
  if (options.dims.empty()) return std::nullopt;
  std::string name = BatchName(model, options);
  if (name.empty()) return std::nullopt;
  BatchSpec batch{name, options.dims.at(name), {}};
  runtime::Check(batch.range.min >= 1 && batch.range.min <= batch.range.max && batch.range.max <= runtime::kMaxBatch &&
                     batch.range.step == 1,
                 "--dims: the range of '", batch.name, "' is ", batch.range.min, "..", batch.range.max,
                 "; expected MIN..MAX with 1 <= MIN <= MAX <= ", runtime::kMaxBatch, " (a batch takes every value)");
  for (auto& input : *model.mutable_graph()->mutable_input()) {
    for (auto& dim : *input.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
      if (!dim.has_dim_param() || dim.dim_param() != batch.name) continue;
      dim.set_dim_value(samples);
      batch.inputs.insert(runtime::ValidUtf8(input.name()));
    }
  }
  return batch;
}

}  // namespace kiln::frontend
