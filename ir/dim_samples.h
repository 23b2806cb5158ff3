// A model with shape dimensions (runtime/shape_dims.h: a sequence length, an image's height and
// width) is imported and compiled at several of their values, its samples; the extents and code
// of every sample, fitted as polynomials of the dimensions, give one library for the whole range
// (backend/generalize_dims.h; docs/architecture.md, "Shape dimensions").
//
// The samples are "generic" values: where the range allows, values whose quotient by the step is
// a prime of at least 11, so that what the compiler derives from extents by divisibility (a gcd of
// extents, a reshape's run of contiguous elements) is what holds at every value, and no sample
// equals a fixed extent of the model (768, 64, 12). The fitting values of each dimension are the
// three largest such values (a degree of up to 2 in each dimension: 12*S*S); every combination of
// them is a sample, and two more, every dimension near half and near a quarter of its range,
// check the fit; so does the sample at every dimension's max (unless a fitting one), which gives
// the constants whose extents depend on the dimensions (a position embedding's first S rows) at
// their largest.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/expr.h"
#include "runtime/shape_dims.h"

namespace kiln::ir {

struct DimSamples {
  std::vector<runtime::ShapeDim> dims;
  std::vector<std::vector<int64_t>> fitting;  // per dimension, its fitting values (largest first)
  // Per sample, a value per dimension: every combination of the fitting values (the last dimension
  // fastest), then the checks.
  std::vector<std::vector<int64_t>> points;
  size_t num_fitting_points = 0;
  size_t max_point = 0;  // the sample at every dimension's max
  std::vector<Expr> mains;  // per sample, the model's main function imported at its values
  // Why a dimension on axis 0 is not the batch (the model does not keep its samples apart), for
  // the errors compiling it as a shape dimension gives; empty when none is.
  std::string batch_refusal;

  bool empty() const { return dims.empty(); }
};

// The samples of `dims` (their main functions still to import). Throws Error for more than three
// dimensions (3^3 + 2 samples to compile).
DimSamples PlanDimSamples(std::vector<runtime::ShapeDim> dims);

}  // namespace kiln::ir
