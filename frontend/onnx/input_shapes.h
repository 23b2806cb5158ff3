// What the import options say about a model's inputs, applied to the ONNX model before it is
// imported: static shapes from --input-shapes, and the batch dimension of --dims (given the
// extent it is imported with).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "frontend/onnx/onnx_import.h"
#include "runtime/shape_dims.h"

namespace kiln::frontend {

// Sets the inputs' shapes that `options` gives; an input name the model lacks is an Error listing
// its inputs.
void ApplyInputShapes(onnx::ModelProto& model, const OnnxImportOptions& options);

// The name of the batch dimension: the first of options.dims (by name) that is axis 0 of every
// input that has it, in steps of 1, when options.batch_allowed; empty when none is.
std::string BatchName(const onnx::ModelProto& model, const OnnxImportOptions& options);
// The shape dimensions of `options.dims` (those that are not the batch, which ApplyBatchDim
// takes), each with its range checked; a name no input has is an Error.
std::vector<runtime::ShapeDim> ShapeDimsOf(const onnx::ModelProto& model, const OnnxImportOptions& options);
// Each input dimension named by `dims` becomes the value of `values` at its index.
void ApplyShapeDimValues(onnx::ModelProto& model, const std::vector<runtime::ShapeDim>& dims,
                         const std::vector<int64_t>& values);

// The batch dimension of `options.dims`, or nothing without one.
struct BatchSpec {
  std::string name;
  DimRange range;
  std::set<std::string> inputs;  // the inputs whose axis 0 it is
};
// Each input dimension the batch names (an ONNX dim_param) becomes `samples` (1 for the model
// compiled, 2 for the probe that tells where each value holds the samples, batch_samples.h). The
// dimension must be axis 0 of each; a range that names no dimension is an Error.
std::optional<BatchSpec> ApplyBatchDim(onnx::ModelProto& model, const OnnxImportOptions& options, int64_t samples);

}  // namespace kiln::frontend
