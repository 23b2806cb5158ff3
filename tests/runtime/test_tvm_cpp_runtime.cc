// A library as TVM's ccompiler codegen builds one: C++ that calls TVM's C++ runtime API
// (libtvm_runtime), which kiln does not provide. Loading it must fail and name what it needs.
#include <string>

namespace tvm::runtime {
class Object {
 public:
  static std::string TypeIndex2Key(unsigned type_index);
};
}  // namespace tvm::runtime

extern "C" __attribute__((visibility("default"))) int kiln_test_type_key_length(unsigned type_index) {
  return static_cast<int>(tvm::runtime::Object::TypeIndex2Key(type_index).size());
}
