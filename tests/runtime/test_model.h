// What the test model libraries hold, shared by the tool that packs them and the tests that run
// them: the deterministic parameter values, and the reference computation of the test graph
// (tests/runtime/data/test_model.json) written with plain loops.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace kiln::test {

// Value i of every test parameter.
inline float ParamValue(int64_t i) { return static_cast<float>(i % 7) * 0.25f - 0.5f; }

// test_model.json: x[1,8], p_w[1,8] -> t = relu(x + p_w) ->
//   out0[i] = (6 t)[7 - i]^2   (two_outputs -> workspace -> parallel mirror)
//   out1[i] = t[i] + 1         (two_outputs -> flat copy)
inline void ReferenceTestModel(const std::vector<float>& x, std::vector<float>& out0,
                               std::vector<float>& out1) {
  const size_t n = x.size();
  std::vector<float> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = std::max(0.0f, x[i] + ParamValue(static_cast<int64_t>(i)));
  out0.resize(n);
  out1.resize(n);
  for (size_t i = 0; i < n; ++i) {
    float mirrored = 6 * t[n - 1 - i];
    out0[i] = mirrored * mirrored;
    out1[i] = t[i] + 1;
  }
}

}  // namespace kiln::test
