// Inputs that the fuzzers once found crashing the parsers (fuzz/regressions/<target>/): each must
// now be rejected with a clear Error.
#include <gtest/gtest.h>

#include "runtime/error.h"
#include "runtime/graph_json.h"
#include "runtime/module.h"
#include "runtime/params.h"
#include "tests/fuzz_regression_inputs.h"

namespace kiln::runtime {
namespace {

class FakeLibrary final : public ModuleNode {
 public:
  const char* type_key() const override { return "library"; }
  bool IsDSOExportable() const override { return true; }
  PackedFunc GetFunction(const std::string&) override { return PackedFunc(); }
};

TEST(FuzzRegressions, ModuleBlob) {
  std::vector<std::string> files = test::FuzzRegressionInputs("module_blob");
  EXPECT_FALSE(files.empty());
  for (const std::string& file : files) {
    Module lib(std::make_shared<FakeLibrary>());
    EXPECT_THROW(ProcessModuleBlob(ReadFile(file), lib), Error) << file;
  }
}

TEST(FuzzRegressions, GraphJsonAndParams) {
  // None yet: these fuzzers have found nothing since the folders were made.
  for (const std::string& file : test::FuzzRegressionInputs("graph_json")) {
    EXPECT_THROW(ParseGraphJson(ReadFile(file)), Error) << file;
  }
  for (const std::string& file : test::FuzzRegressionInputs("params")) EXPECT_THROW(LoadParams(ReadFile(file)), Error) << file;
}

}  // namespace
}  // namespace kiln::runtime
