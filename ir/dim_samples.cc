// Choosing the samples of shape dimensions (dim_samples.h).
#include "ir/dim_samples.h"

#include <algorithm>
#include <numeric>

#include "runtime/error.h"

namespace kiln::ir {
namespace {

bool IsPrime(int64_t n) {
  if (n < 2) return false;
  for (int64_t k = 2; k * k <= n; ++k) {
    if (n % k == 0) return false;
  }
  return true;
}

// Whether `value` is generic in its range: its quotient by the step (when the lattice is made of
// multiples of the step) or itself is a prime of at least 11.
bool Generic(const runtime::ShapeDim& dim, int64_t value) {
  int64_t core = dim.min % dim.step == 0 ? value / dim.step : value;
  return core >= 11 && IsPrime(core);
}

// The lattice value nearest to `target` that is not in `taken`, generic ones first (within 4096
// steps: primes are far denser); 0 when none.
int64_t NearestFree(const runtime::ShapeDim& dim, int64_t target, const std::vector<int64_t>& taken) {
  int64_t best = 0, best_plain = 0;
  auto distance = [&](int64_t v) { return v > target ? v - target : target - v; };
  int64_t first = std::max(dim.min, dim.min + ((target - dim.min) / dim.step - 4096) * dim.step);
  int64_t last = std::min(dim.max, dim.min + ((target - dim.min) / dim.step + 4096) * dim.step);
  for (int64_t v = first; v <= last; v += dim.step) {
    if (std::find(taken.begin(), taken.end(), v) != taken.end()) continue;
    if (Generic(dim, v) && (best == 0 || distance(v) < distance(best))) best = v;
    if (best_plain == 0 || distance(v) < distance(best_plain)) best_plain = v;
  }
  return best != 0 ? best : best_plain;
}

}  // namespace

DimSamples PlanDimSamples(std::vector<runtime::ShapeDim> dims) {
  runtime::Check(dims.size() <= 3, "kiln decides up to 3 shape dimensions at run time (besides a batch); ",
                 dims.size(), " given");
  DimSamples samples;
  std::vector<std::vector<int64_t>> checks;
  for (const runtime::ShapeDim& dim : dims) {
    std::vector<int64_t> fitting;
    for (int64_t v = dim.max; v >= dim.min && fitting.size() < 3; v -= dim.step) {
      if (Generic(dim, v)) fitting.push_back(v);
    }
    for (int64_t v = dim.max; v >= dim.min && fitting.size() < 3; v -= dim.step) {  // too few generic values
      // (1 last: an extent of 1 is one the passes simplify away, a broadcast, a transpose that is a reshape)
      if (v == 1 && dim.max - dim.min >= 3 * dim.step) continue;
      if (std::find(fitting.begin(), fitting.end(), v) == fitting.end()) fitting.push_back(v);
    }
    std::sort(fitting.rbegin(), fitting.rend());
    std::vector<int64_t> dim_checks;
    for (int64_t part : {2, 4}) {
      std::vector<int64_t> taken = fitting;
      taken.insert(taken.end(), dim_checks.begin(), dim_checks.end());
      int64_t v = NearestFree(dim, dim.min + (dim.max - dim.min) / part, taken);
      if (v != 0) dim_checks.push_back(v);
    }
    while (!dim_checks.empty() && dim_checks.size() < 2) dim_checks.push_back(dim_checks.back());
    if (dim_checks.empty()) {  // a range of 3 values or fewer: every one a fitting value
      dim_checks = {fitting.back(), fitting.back()};
    }
    samples.fitting.push_back(fitting);
    checks.push_back(dim_checks);
  }
  samples.points.push_back({});
  for (const std::vector<int64_t>& values : samples.fitting) {
    std::vector<std::vector<int64_t>> grown;
    for (const std::vector<int64_t>& point : samples.points) {
      for (int64_t v : values) {
        grown.push_back(point);
        grown.back().push_back(v);
      }
    }
    samples.points = std::move(grown);
  }
  samples.num_fitting_points = samples.points.size();
  for (size_t k = 0; k < 2; ++k) {
    std::vector<int64_t> point;
    for (const std::vector<int64_t>& c : checks) point.push_back(c[k]);
    if (std::find(samples.points.begin(), samples.points.end(), point) == samples.points.end()) {
      samples.points.push_back(point);
    }
  }
  std::vector<int64_t> largest;
  for (const runtime::ShapeDim& dim : dims) largest.push_back(dim.max);
  auto at_max = std::find(samples.points.begin(), samples.points.end(), largest);
  samples.max_point = at_max - samples.points.begin();
  if (at_max == samples.points.end()) samples.points.push_back(largest);
  samples.dims = std::move(dims);
  return samples;
}

}  // namespace kiln::ir
