// The C source module (TVM's CSourceModule, type key "c"): C++ source an external codegen emits
// (ccompiler), the functions it defines and the constants its `__init_<symbol>` takes. It is
// DSO-exportable: Build compiles its code with kiln's host code, so its functions are in the
// exported library and the const-loader module finds them there. Packed functions: `get_symbol`,
// `get_const_vars` (comma-joined), `get_func_names` (comma-joined).
//
// Binary form (TVM v0.19 source_module.cc): string code; string format; vector<string> function
// names; vector<string> constant names.
#pragma once

#include <string>
#include <vector>

#include "runtime/module.h"

namespace kiln::backend {

class CSourceModule final : public runtime::ModuleNode {
 public:
  CSourceModule(std::string code, std::string format, std::vector<std::string> func_names,
                std::vector<std::string> const_vars);

  const char* type_key() const override { return "c"; }
  bool IsDSOExportable() const override { return true; }
  bool IsBinarySerializable() const override { return true; }
  void SaveToBinary(runtime::ByteWriter& writer) const override;
  runtime::PackedFunc GetFunction(const std::string& name) override;

  const std::string& code() const { return code_; }
  const std::string& format() const { return format_; }
  const std::vector<std::string>& func_names() const { return func_names_; }
  const std::vector<std::string>& const_vars() const { return const_vars_; }

  static runtime::Module LoadFromBinary(runtime::ByteReader& reader);

 private:
  std::string code_;
  std::string format_;
  std::vector<std::string> func_names_;
  std::vector<std::string> const_vars_;
};

}  // namespace kiln::backend
