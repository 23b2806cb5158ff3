// The inputs a fuzzer once found crashing or misleading a reader, kept in fuzz/regressions/<target>/
// for the tests that check each is now rejected with a clear error.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace kiln::test {

// The files of fuzz/regressions/<target>/, sorted; a missing folder gives none (the caller's
// check that there are some then fails).
inline std::vector<std::string> FuzzRegressionInputs(const std::string& target) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  fs::path dir = fs::path(KILN_SOURCE_DIR) / "fuzz/regressions" / target;
  if (fs::exists(dir)) {
    for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace kiln::test
