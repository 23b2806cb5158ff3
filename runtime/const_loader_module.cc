// The const-loader module and its binary form.
#include "runtime/const_loader_module.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <mutex>
#include <set>

#include "runtime/error.h"
#include "runtime/tvm_object_array.h"

namespace kiln::runtime {
namespace {

using SymbolConstants = std::vector<std::pair<std::string, std::vector<std::string>>>;

class ConstLoaderModuleNode final : public ModuleNode {
 public:
  ConstLoaderModuleNode(NamedArrays constants, SymbolConstants by_symbol)
      : constants_(std::move(constants)), by_symbol_(std::move(by_symbol)) {
    std::set<std::string> names;
    for (const auto& [name, array] : constants_) {
      Check(names.insert(name).second, "const_loader: the constant '", name, "' is listed twice");
    }
    std::set<std::string> symbols;
    for (const auto& [symbol, wanted] : by_symbol_) {
      Check(symbols.insert(symbol).second, "const_loader: the function '", symbol, "' is listed twice");
      for (const std::string& name : wanted) {
        Check(names.count(name) != 0, "const_loader: the function '", symbol, "' takes the constant '", name,
              "', which it does not hold");
      }
      pending_.insert(symbol);
    }
  }

  const char* type_key() const override { return "const_loader"; }
  bool IsBinarySerializable() const override { return true; }

  void SaveToBinary(ByteWriter& writer) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    Check(pending_.size() == by_symbol_.size() || by_symbol_.empty(),
          "const_loader: its constants were handed to the functions and dropped; it cannot be saved again");
    std::vector<std::string> names, symbols;
    for (const auto& [name, array] : constants_) names.push_back(name);
    writer.WriteStringVector(names);
    writer.Write<uint64_t>(constants_.size());
    for (const auto& [name, array] : constants_) WriteNDArray(writer, array);
    for (const auto& [symbol, wanted] : by_symbol_) symbols.push_back(symbol);
    writer.WriteStringVector(symbols);
    writer.Write<uint64_t>(by_symbol_.size());
    for (const auto& [symbol, wanted] : by_symbol_) writer.WriteStringVector(wanted);
  }

  PackedFunc GetFunction(const std::string& name) override {
    if (name == "get_const_var_ndarray") {
      auto self = std::static_pointer_cast<ConstLoaderModuleNode>(shared_from_this());
      return PackedFunc([self](const Args&, RetValue* result) {
        std::lock_guard<std::mutex> lock(self->mutex_);
        result->SetInt(static_cast<int64_t>(self->constants_.size()));
      });
    }
    InitializeOnce(name);
    for (const Module& import : imports()) {
      PackedFunc f = import.GetFunction(name, /*query_imports=*/true);
      if (f.defined()) return f;
    }
    return PackedFunc();
  }

 private:
  // Calls `__init_<symbol>` with the symbol's constants the first time the symbol is looked up.
  // Lookups wait for an initialization under way; one that fails leaves the symbol pending.
  void InitializeOnce(const std::string& symbol) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (pending_.count(symbol) == 0) return;
    const std::vector<std::string>* wanted = nullptr;
    for (const auto& [s, names] : by_symbol_) {
      if (s == symbol) wanted = &names;
    }
    PackedFunc init;
    for (const Module& import : imports()) {
      init = import.GetFunction("__init_" + symbol, /*query_imports=*/true);
      if (init.defined()) break;
    }
    // A symbol without constants may have no `__init_` (a ccompiler function), as in TVM.
    Check(init.defined() || wanted->empty(), "const_loader: no module defines __init_", symbol, " to take the ",
          wanted->size(), " constants of '", symbol, "'");
    if (init.defined()) Initialize(init, *wanted);
    pending_.erase(symbol);
    if (pending_.empty()) {
      constants_.clear();
#ifdef __GLIBC__
      malloc_trim(0);  // give the freed weights back to the system, not only to malloc
#endif
    }
  }

  // Calls `init` with the constants `wanted`. TVM's convention: one argument, an Array<NDArray>
  // object. The `__init_` that libraries of earlier kiln versions hold takes one tensor per
  // constant instead: when the array is refused, that form is tried, and the array's error
  // reported if it fails too.
  void Initialize(const PackedFunc& init, const std::vector<std::string>& wanted) {
    std::vector<NDArray> arrays;
    for (const std::string& wanted_name : wanted) {
      for (const auto& [name, array] : constants_) {
        if (name == wanted_name) arrays.push_back(array);
      }
    }
    TvmNDArrayArray array(arrays);
    TVMValue value;
    value.v_handle = array.handle();
    int code = kTVMObjectHandle;
    RetValue ignored;
    try {
      init.CallPacked(Args(&value, &code, 1), &ignored);
    } catch (const Error& first) {
      std::vector<TVMValue> values(arrays.size());
      std::vector<int> codes(arrays.size());
      for (size_t i = 0; i < arrays.size(); ++i) PackArg(values[i], codes[i], arrays[i]);
      try {
        init.CallPacked(Args(values.data(), codes.data(), static_cast<int>(values.size())), &ignored);
      } catch (const Error&) {
        throw first;
      }
    }
  }

  mutable std::mutex mutex_;
  NamedArrays constants_;
  SymbolConstants by_symbol_;
  std::set<std::string> pending_;  // symbols not initialized yet
};

}  // namespace

Module CreateConstLoaderModule(NamedArrays constants, SymbolConstants constants_by_symbol) {
  return Module(std::make_shared<ConstLoaderModuleNode>(std::move(constants), std::move(constants_by_symbol)));
}

Module LoadConstLoaderModule(ByteReader& reader) {
  std::vector<std::string> names = reader.ReadStringVector("const_loader constant names");
  uint64_t count = reader.Read<uint64_t>("const_loader constant count");
  Check(count == names.size(), "const_loader: ", names.size(), " constant names but ", count, " arrays");
  NamedArrays constants;
  for (const std::string& name : names) constants.emplace_back(name, ReadNDArray(reader));
  std::vector<std::string> symbols = reader.ReadStringVector("const_loader symbols");
  uint64_t symbol_count = reader.Read<uint64_t>("const_loader symbol count");
  Check(symbol_count == symbols.size(), "const_loader: ", symbols.size(), " symbols but ", symbol_count,
        " constant lists");
  SymbolConstants by_symbol;
  for (const std::string& symbol : symbols) {
    by_symbol.emplace_back(symbol, reader.ReadStringVector("const_loader constant list"));
  }
  return CreateConstLoaderModule(std::move(constants), std::move(by_symbol));
}

}  // namespace kiln::runtime
