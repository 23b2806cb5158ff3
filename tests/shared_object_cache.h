// The object cache the tests that build models but do not test the cache itself share: objects
// are keyed by their content, flags and compiler (backend/compiler.h), so one cache serves every
// such test, process and build tree, and the kernel library compiles once rather than once per
// test (about 45 s each).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace kiln::test {

inline std::string SharedObjectCache() {
  return (std::filesystem::path(::testing::TempDir()) / "kiln_test_object_cache").string();
}

}  // namespace kiln::test
