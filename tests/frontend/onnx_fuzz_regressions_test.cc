// Models that fuzz_onnx_import once found crashing or misleading the importer
// (fuzz/regressions/onnx_import/): each must now be rejected with a clear Error, not an
// InternalError or another exception.
#include <gtest/gtest.h>

#include "frontend/onnx/onnx_import.h"
#include "runtime/error.h"
#include "runtime/params.h"
#include "tests/fuzz_regression_inputs.h"

namespace kiln::frontend {
namespace {

TEST(OnnxFuzzRegressions, EachIsRejectedWithError) {
  std::vector<std::string> files = test::FuzzRegressionInputs("onnx_import");
  EXPECT_FALSE(files.empty());
  for (const std::string& file : files) {
    try {
      ImportOnnxBytes(runtime::ReadFile(file));
      ADD_FAILURE() << file << " was imported";
    } catch (const runtime::InternalError& e) {
      ADD_FAILURE() << file << ": " << e.what();
    } catch (const runtime::Error& e) {
      EXPECT_NE(std::string(e.what()), "") << file;
    }
  }
}

}  // namespace
}  // namespace kiln::frontend
