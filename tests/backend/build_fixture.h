// A fixture for compile-flow tests written in IR text: build a function, export it as one
// library in a temporary folder, load it with the runtime alone and give its executor. Objects
// come from the tests' shared cache.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "backend/build.h"
#include "ir/text.h"
#include "runtime/graph_executor_module.h"
#include "runtime/module.h"
#include "tests/shared_object_cache.h"

namespace kiln::backend {

class BuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) / ("kiln_build_test_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    options_.compiler.cache_dir = test::SharedObjectCache();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // `report` and `source` (the generated C++), when given, are filled in.
  std::shared_ptr<runtime::GraphExecutor> BuildAndLoad(const std::string& text, BuildReport* report = nullptr,
                                                       std::string* source = nullptr) {
    ExecutorFactory factory = Build(ir::ParseFunction(text), options_, report);
    if (source != nullptr) *source = factory.GetSource();
    std::string path = (dir_ / ("model" + std::to_string(counter_++) + ".so")).string();
    factory.ExportLibrary(path);
    runtime::Module lib = runtime::LoadModuleFromFile(path);
    return runtime::GetGraphExecutor(lib.GetFunction("default")(runtime::kCPU).AsModule());
  }

  std::filesystem::path dir_;
  BuildOptions options_;
  int counter_ = 0;
};

}  // namespace kiln::backend
