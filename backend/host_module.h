// The compiled host code of a build as a module of the module tree: the object files of its
// operator functions (and the kernel library). It is DSO-exportable: export_library links its
// objects into the library file and writes it as `_lib` in the import blob. It has no functions
// of its own; the library loaded back runs them.
#pragma once

#include <string>
#include <vector>

#include "runtime/module.h"

namespace kiln::backend {

class HostCodeModule final : public runtime::ModuleNode {
 public:
  explicit HostCodeModule(std::vector<std::string> objects) : objects_(std::move(objects)) {}
  const char* type_key() const override { return "object_files"; }
  bool IsDSOExportable() const override { return true; }
  runtime::PackedFunc GetFunction(const std::string&) override { return runtime::PackedFunc(); }
  const std::vector<std::string>& objects() const { return objects_; }

 private:
  std::vector<std::string> objects_;
};

}  // namespace kiln::backend
