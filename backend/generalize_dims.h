// One library for every value of a model's shape dimensions, from its code at several samples
// (ir/dim_samples.h; docs/architecture.md, "Shape dimensions").
//
// Each sample's graph and operator sources must be the same but for extents: the same nodes,
// functions and constants, and sources that differ only in integer literals. Each literal and
// each entry's extent that differs is fitted as a polynomial of the dimensions (rational
// coefficients, up to the degree the fitting values allow in each dimension) and must match at
// the checking samples too, and at every value in range be a whole number; the sources then
// compute it from the dimensions the operators take (kiln_d0, ..., host_codegen.h). A constant
// whose extents depend on the dimensions must be, at every sample, the front of its value at the
// dimensions' max, which the library holds. Anything else is an Error saying what differs where.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/dim_samples.h"
#include "runtime/graph_json.h"
#include "runtime/params.h"
#include "runtime/shape_dims.h"

namespace kiln::backend {

// An operator function's C++ source: written for extents that may vary (the plan lowered with
// extents_vary) and, in a sample, also as for fixed extents, which the library takes when it is
// the same at every sample (the function does not depend on the dimensions).
struct FunctionSource {
  std::string symbol, source, fixed_source;
};

// One sample's generated code.
struct SampleCode {
  runtime::Graph graph;
  runtime::NamedArrays params;
  std::vector<FunctionSource> functions;
};

// Fits values seen at the samples as polynomials of the dimensions.
class ExtentFitter {
 public:
  explicit ExtentFitter(const ir::DimSamples& samples);
  // The polynomial through `values` (one per sample point; the max point's may be absent, -1
  // entries of `known` mark points not to check); Error (naming `what`) when the values at the
  // checking points disagree with it.
  runtime::DimPolynomial Fit(const std::vector<int64_t>& values, const std::vector<bool>& known,
                             const std::string& what) const;
  std::vector<std::string> DimNames() const;
  const ir::DimSamples& samples() const { return samples_; }

 private:
  const ir::DimSamples& samples_;
  // Per dimension, per fitting value, the coefficients of its Lagrange basis polynomial as
  // numerator / denominator pairs.
  std::vector<std::vector<std::vector<std::pair<__int128, __int128>>>> basis_;
};

// The code of every sample of `samples` (code[i] is sample i's) as one graph, params and sources.
SampleCode GeneralizeDims(const ir::DimSamples& samples, const std::vector<SampleCode>& code);

// The generated source `texts` (one per sample, each `known`) as one, its differing integer
// literals replaced by expressions of kiln_d<i>; Error naming `symbol` when they differ otherwise.
std::string GeneralizeSource(const ExtentFitter& fitter, const std::vector<const std::string*>& texts,
                             const std::string& symbol);

}  // namespace kiln::backend
