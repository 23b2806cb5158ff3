// The ONNX frontend: an ONNX model becomes kiln's main function, with the graph inputs as its
// parameters and the initializers as constants. The model is checked with ONNX's checker and
// shape inference first; shape computations fold away when shapes are static.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/dim_samples.h"
#include "ir/expr.h"

namespace kiln::frontend {

// The values a named dimension may take at run time: min, min + step, ..., max.
struct DimRange {
  int64_t min = 1, max = 1, step = 1;
};

struct OnnxImportOptions {
  // Static shapes for inputs, by name; required for inputs with symbolic dimensions unless `dims`
  // gives their range. A dimension of -1 is named by input_dim_names instead.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // Per input, per axis: the name of a dimension decided at run time (--input-shapes "x:[N,3,8,8]").
  std::map<std::string, std::map<int, std::string>> input_dim_names;
  // Ranges of named dimensions (ONNX dim_params or input_dim_names): the library runs any value in
  // range. One that is axis 0 of every input that has it is a batch dimension (the first such by
  // name; a step of 1); the others are shape dimensions (ir/dim_samples.h).
  std::map<std::string, DimRange> dims;
  // Whether such a dimension on axis 0 may be a batch; the importer sets it false to take it as a
  // shape dimension when the model does not keep its samples apart.
  bool batch_allowed = true;
};

// Throws Error: for a file that is not a valid ONNX model, for inputs without static shapes
// (naming them), and for unsupported ops (listing all of them, with node names, at once). With
// shape dimensions the model is imported at each of their samples into `samples` (required
// then), and the main function returned is the first sample's.
ir::Expr ImportOnnxFile(const std::string& path, const OnnxImportOptions& options = {},
                        ir::DimSamples* samples = nullptr);
ir::Expr ImportOnnxBytes(std::string_view bytes, const OnnxImportOptions& options = {},
                         ir::DimSamples* samples = nullptr);

// The ONNX op types the frontend converts (for documentation and tests); those of other domains
// than ONNX's as domain.type ("com.microsoft.Attention").
std::vector<std::string> SupportedOnnxOps();

}  // namespace kiln::frontend
