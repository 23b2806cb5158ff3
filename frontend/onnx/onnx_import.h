// The ONNX frontend: an ONNX model becomes kiln's main function, with the graph inputs as its
// parameters and the initializers as constants. The model is checked with ONNX's checker and
// shape inference first; shape computations fold away when shapes are static.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/expr.h"

namespace kiln::frontend {

struct OnnxImportOptions {
  // Static shapes for inputs, by name; required for inputs with symbolic dimensions.
  std::map<std::string, std::vector<int64_t>> input_shapes;
};

// Throws Error: for a file that is not a valid ONNX model, for inputs without static shapes
// (naming them), and for unsupported ops (listing all of them, with node names, at once).
ir::Expr ImportOnnxFile(const std::string& path, const OnnxImportOptions& options = {});
ir::Expr ImportOnnxBytes(std::string_view bytes, const OnnxImportOptions& options = {});

// The ONNX op types the frontend converts (for documentation and tests); those of other domains
// than ONNX's as domain.type ("com.microsoft.Attention").
std::vector<std::string> SupportedOnnxOps();

}  // namespace kiln::frontend
