// The compiled host code of a build as a module of the module tree: the object files of its
// operator functions (and the kernel library), and the C++ they were compiled from. It is
// DSO-exportable: export_library links its objects into the library file and writes it as `_lib`
// in the import blob. It has no functions of its own; the library loaded back runs them.
#pragma once

#include <string>
#include <vector>

#include "runtime/module.h"

namespace kiln::backend {

class HostCodeModule final : public runtime::ModuleNode {
 public:
  HostCodeModule(std::vector<std::string> objects, std::string source)
      : objects_(std::move(objects)), source_(std::move(source)) {}
  const char* type_key() const override { return "object_files"; }
  bool IsDSOExportable() const override { return true; }
  runtime::PackedFunc GetFunction(const std::string&) override { return runtime::PackedFunc(); }
  const std::vector<std::string>& objects() const { return objects_; }
  // The generated operator functions, one translation unit after another.
  const std::string& source() const { return source_; }

 private:
  std::vector<std::string> objects_;
  std::string source_;
};

}  // namespace kiln::backend
