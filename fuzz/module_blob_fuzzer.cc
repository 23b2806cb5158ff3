// Fuzzes the reader of a library's import blob (__tvm_dev_mblob payload), including the
// GraphExecutorFactory payload and its graph JSON and params inside: any input either builds a
// module tree or is rejected with kiln::runtime::Error.
#include <cstddef>
#include <cstdint>

#include "runtime/error.h"
#include "runtime/module.h"

namespace {

class FakeLibrary final : public kiln::runtime::ModuleNode {
 public:
  const char* type_key() const override { return "library"; }
  bool IsDSOExportable() const override { return true; }
  kiln::runtime::PackedFunc GetFunction(const std::string&) override { return kiln::runtime::PackedFunc(); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view payload(reinterpret_cast<const char*>(data), size);
  kiln::runtime::Module lib(std::make_shared<FakeLibrary>());
  try {
    kiln::runtime::Module root = kiln::runtime::ProcessModuleBlob(payload, lib);
    // A factory found in the tree must answer its queries.
    if (kiln::runtime::PackedFunc json = root.GetFunction("get_graph_json", true)) json();
  } catch (const kiln::runtime::Error&) {
  }
  return 0;
}
