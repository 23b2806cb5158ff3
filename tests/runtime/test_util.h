// Helpers shared by the runtime tests: paths of the test artifacts, loading the test model, and
// the test model's parameters and inputs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/graph_executor.h"
#include "runtime/module.h"
#include "runtime/params.h"
#include "test_model.h"
#include "tests/float_arrays.h"

namespace kiln::test {

inline std::string LibPath(const std::string& name) {
  return std::string(KILN_TEST_LIB_DIR) + "/lib" + name + ".so";
}
inline std::string DataPath(const std::string& name) { return std::string(KILN_TEST_DATA_DIR) + "/" + name; }

// The parameters of test_model.json: p_w[1,8] with values ParamValue(i).
inline runtime::NamedArrays TestModelParams() {
  std::vector<float> w(8);
  for (int i = 0; i < 8; ++i) w[i] = ParamValue(i);
  return {{"p_w", FloatArray({1, 8}, w)}};
}

// The message of the Error `f` throws, or "(no error)".
inline std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const runtime::Error& e) {
    return e.what();
  }
  return "(no error)";
}

inline std::vector<float> TestInput(float seed) {
  std::vector<float> x(8);
  for (int i = 0; i < 8; ++i) x[i] = seed * static_cast<float>(i - 3) + 0.125f;
  return x;
}

}  // namespace kiln::test
