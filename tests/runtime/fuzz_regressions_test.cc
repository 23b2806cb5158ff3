// Inputs that the fuzzers once found crashing the parsers (fuzz/regressions/<target>/): each must
// now be rejected with a clear Error.
#include <gtest/gtest.h>

#include <filesystem>

#include "runtime/error.h"
#include "runtime/graph_json.h"
#include "runtime/module.h"
#include "runtime/params.h"

namespace kiln::runtime {
namespace {

namespace fs = std::filesystem;

class FakeLibrary final : public ModuleNode {
 public:
  const char* type_key() const override { return "library"; }
  bool IsDSOExportable() const override { return true; }
  PackedFunc GetFunction(const std::string&) override { return PackedFunc(); }
};

std::vector<std::string> Inputs(const std::string& target) {
  std::vector<std::string> files;
  fs::path dir = fs::path(KILN_SOURCE_DIR) / "fuzz/regressions" / target;
  if (fs::exists(dir)) {
    for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path().string());
  }
  return files;
}

TEST(FuzzRegressions, ModuleBlob) {
  std::vector<std::string> files = Inputs("module_blob");
  EXPECT_FALSE(files.empty());
  for (const std::string& file : files) {
    Module lib(std::make_shared<FakeLibrary>());
    EXPECT_THROW(ProcessModuleBlob(ReadFile(file), lib), Error) << file;
  }
}

TEST(FuzzRegressions, GraphJsonAndParams) {
  for (const std::string& file : Inputs("graph_json")) EXPECT_THROW(ParseGraphJson(ReadFile(file)), Error) << file;
  for (const std::string& file : Inputs("params")) EXPECT_THROW(LoadParams(ReadFile(file)), Error) << file;
}

}  // namespace
}  // namespace kiln::runtime
