// The C source module and its binary form.
#include "backend/c_source_module.h"

#include "runtime/error.h"

namespace kiln::backend {

namespace {

std::string Joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

}  // namespace

CSourceModule::CSourceModule(std::string code, std::string format, std::vector<std::string> func_names,
                             std::vector<std::string> const_vars)
    : code_(std::move(code)), format_(std::move(format)), func_names_(std::move(func_names)),
      const_vars_(std::move(const_vars)) {}

void CSourceModule::SaveToBinary(runtime::ByteWriter& writer) const {
  writer.WriteString(code_);
  writer.WriteString(format_);
  writer.WriteStringVector(func_names_);
  writer.WriteStringVector(const_vars_);
}

runtime::Module CSourceModule::LoadFromBinary(runtime::ByteReader& reader) {
  std::string code = reader.ReadString("C source module code");
  std::string format = reader.ReadString("C source module format");
  std::vector<std::string> func_names = reader.ReadStringVector("C source module function names");
  std::vector<std::string> const_vars = reader.ReadStringVector("C source module constant names");
  return runtime::Module(std::make_shared<CSourceModule>(std::move(code), std::move(format), std::move(func_names),
                                                         std::move(const_vars)));
}

runtime::PackedFunc CSourceModule::GetFunction(const std::string& name) {
  auto self = std::static_pointer_cast<CSourceModule>(shared_from_this());
  if (name == "get_symbol") {
    return runtime::PackedFunc([self](const runtime::Args&, runtime::RetValue* result) {
      result->SetString(self->func_names_.empty() ? "" : self->func_names_[0]);
    });
  }
  if (name == "get_const_vars") {
    return runtime::PackedFunc(
        [self](const runtime::Args&, runtime::RetValue* result) { result->SetString(Joined(self->const_vars_)); });
  }
  if (name == "get_func_names") {
    return runtime::PackedFunc(
        [self](const runtime::Args&, runtime::RetValue* result) { result->SetString(Joined(self->func_names_)); });
  }
  return runtime::PackedFunc();  // its functions run from the compiled library
}

}  // namespace kiln::backend
