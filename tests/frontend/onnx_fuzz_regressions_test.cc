// Models that fuzz_onnx_import once found crashing or misleading the importer
// (fuzz/regressions/onnx_import/): each must now be rejected with a clear Error, not an
// InternalError or another exception.
#include <gtest/gtest.h>

#include <filesystem>

#include "frontend/onnx/onnx_import.h"
#include "runtime/error.h"
#include "runtime/params.h"

namespace kiln::frontend {
namespace {

namespace fs = std::filesystem;

TEST(OnnxFuzzRegressions, EachIsRejectedWithError) {
  fs::path dir = fs::path(KILN_SOURCE_DIR) / "fuzz/regressions/onnx_import";
  ASSERT_TRUE(fs::exists(dir));
  int count = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    ++count;
    std::string bytes = runtime::ReadFile(entry.path().string());
    try {
      ImportOnnxBytes(bytes);
      ADD_FAILURE() << entry.path() << " was imported";
    } catch (const runtime::InternalError& e) {
      ADD_FAILURE() << entry.path() << ": " << e.what();
    } catch (const runtime::Error& e) {
      EXPECT_NE(std::string(e.what()), "") << entry.path();
    }
  }
  EXPECT_GT(count, 0);
}

}  // namespace
}  // namespace kiln::frontend
