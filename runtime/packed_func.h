// The packed-function ABI: TVMValue + type code arguments, typed access to them, an owned return
// value, PackedFunc (a callable with that signature) and Module (a handle to a ModuleNode, see
// module.h). This is how compiled operators, executors and the C API talk to each other.
//
// Handles crossing the C ABI: a module (code 9) is a `Module*`, a function (code 10) a
// `PackedFunc*`, an array (code 13) the `DLTensor*` of an NDArray (see NDArray::ReleaseHandle).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/c_runtime_api.h"
#include "runtime/error.h"
#include "runtime/ndarray.h"

namespace kiln::runtime {

class ModuleNode;
class PackedFunc;
class RetValue;

// A shared reference to a ModuleNode; empty when default-constructed.
class Module {
 public:
  Module() = default;
  explicit Module(std::shared_ptr<ModuleNode> node) : node_(std::move(node)) {}

  bool defined() const { return node_ != nullptr; }
  ModuleNode* operator->() const { return node_.get(); }
  ModuleNode* get() const { return node_.get(); }
  const std::shared_ptr<ModuleNode>& node() const { return node_; }

  // An empty PackedFunc when neither the module nor (if asked) its imports define `name`.
  PackedFunc GetFunction(const std::string& name, bool query_imports = false) const;
  const char* type_key() const;

 private:
  std::shared_ptr<ModuleNode> node_;
};

// One borrowed argument.
class ArgValue {
 public:
  ArgValue(TVMValue value, int code, int index) : value_(value), code_(code), index_(index) {}

  int code() const { return code_; }
  const TVMValue& value() const { return value_; }
  bool IsNull() const { return code_ == kTVMNullptr; }
  bool IsInt() const { return code_ == kTVMArgInt || code_ == kDLUInt || code_ == kTVMArgBool; }
  bool IsString() const { return code_ == kTVMStr; }

  // Each throws Error naming the argument and the type it had when the code does not fit.
  int64_t AsInt() const;
  double AsFloat() const;
  std::string AsString() const;       // string (11) or bytes (12)
  std::string_view AsBytes() const;   // bytes (12) or string (11)
  DLTensor* AsTensor() const;         // DLTensor* (7) or NDArray (13), never null
  NDArray AsNDArray() const;          // NDArray (13)
  Module AsModule() const;            // module (9)
  PackedFunc AsFunc() const;          // function (10)
  DLDevice AsDevice() const;          // device (6)
  void* AsHandle() const;             // opaque handle (3) or null (4)

 private:
  [[noreturn]] void Mismatch(const char* expected) const;
  TVMValue value_;
  int code_;
  int index_;
};

// The borrowed arguments of one call.
class Args {
 public:
  Args(const TVMValue* values, const int* codes, int size)
      : values_(values), codes_(codes), size_(size) {}
  int size() const { return size_; }
  ArgValue operator[](int i) const;
  const TVMValue* values() const { return values_; }
  const int* codes() const { return codes_; }
  // Throws Error "<function>: expected N arguments, got M" outside [min_count, max_count].
  void CheckCount(const char* function, int min_count, int max_count) const;

 private:
  const TVMValue* values_;
  const int* codes_;
  int size_;
};

const char* TypeCodeName(int code);

class PackedFunc {
 public:
  using Body = std::function<void(const Args& args, RetValue* result)>;

  PackedFunc() = default;
  explicit PackedFunc(Body body) : body_(std::make_shared<const Body>(std::move(body))) {}

  bool defined() const { return body_ != nullptr; }
  explicit operator bool() const { return defined(); }
  void CallPacked(const Args& args, RetValue* result) const { (*body_)(args, result); }

  // Calls with C++ values packed as arguments (see PackArg below).
  template <typename... Values>
  RetValue operator()(const Values&... values) const;

 private:
  std::shared_ptr<const Body> body_;
};

// An owned return value.
class RetValue {
 public:
  RetValue() = default;
  RetValue(const RetValue&) = delete;
  RetValue& operator=(const RetValue&) = delete;
  RetValue(RetValue&&) = default;
  RetValue& operator=(RetValue&&) = default;

  int code() const { return code_; }
  ArgValue AsArg() const;
  int64_t AsInt() const { return AsArg().AsInt(); }
  double AsFloat() const { return AsArg().AsFloat(); }
  std::string AsString() const { return AsArg().AsString(); }
  NDArray AsNDArray() const { return array_; }
  Module AsModule() const { return module_; }
  PackedFunc AsFunc() const { return func_; }
  bool IsNull() const { return code_ == kTVMNullptr; }

  void Clear();
  void SetInt(int64_t v);
  void SetFloat(double v);
  void SetString(std::string v);
  void SetBytes(std::string v);
  void SetDevice(DLDevice v);
  void SetHandle(void* v);
  void Set(NDArray v);
  void Set(Module v);
  void Set(PackedFunc v);
  // Copies a value of a plain (non-object) type code, as returned by compiled C functions.
  void SetPlain(TVMValue value, int code);
  // The string/bytes payload (codes 11, 12).
  const std::string& string_payload() const { return str_; }

 private:
  int code_ = kTVMNullptr;
  TVMValue value_{};
  std::string str_;
  NDArray array_;
  Module module_;
  PackedFunc func_;
  mutable TVMByteArray bytes_{};  // what a bytes value's handle points to
};

// Packing C++ values into arguments. The packed values borrow from the originals.
inline void PackArg(TVMValue& v, int& c, int64_t x) { v.v_int64 = x; c = kTVMArgInt; }
inline void PackArg(TVMValue& v, int& c, int x) { v.v_int64 = x; c = kTVMArgInt; }
inline void PackArg(TVMValue& v, int& c, double x) { v.v_float64 = x; c = kTVMArgFloat; }
inline void PackArg(TVMValue& v, int& c, const char* x) { v.v_str = x; c = kTVMStr; }
inline void PackArg(TVMValue& v, int& c, const std::string& x) { v.v_str = x.c_str(); c = kTVMStr; }
inline void PackArg(TVMValue& v, int& c, const TVMByteArray& x) {
  v.v_handle = const_cast<TVMByteArray*>(&x);
  c = kTVMBytes;
}
inline void PackArg(TVMValue& v, int& c, DLTensor* x) { v.v_handle = x; c = kTVMDLTensorHandle; }
inline void PackArg(TVMValue& v, int& c, const NDArray& x) {
  v.v_handle = const_cast<DLTensor*>(x.get());
  c = kTVMNDArrayHandle;
}
inline void PackArg(TVMValue& v, int& c, const Module& x) {
  v.v_handle = const_cast<Module*>(&x);
  c = kTVMModuleHandle;
}
inline void PackArg(TVMValue& v, int& c, const PackedFunc& x) {
  v.v_handle = const_cast<PackedFunc*>(&x);
  c = kTVMPackedFuncHandle;
}
inline void PackArg(TVMValue& v, int& c, DLDevice x) { v.v_device = x; c = kDLDevice; }
inline void PackArg(TVMValue& v, int& c, std::nullptr_t) { v.v_handle = nullptr; c = kTVMNullptr; }
inline void PackArg(TVMValue& v, int& c, void* x) { v.v_handle = x; c = kTVMOpaqueHandle; }

template <typename... Values>
RetValue PackedFunc::operator()(const Values&... values) const {
  TVMValue packed[sizeof...(Values) + 1];
  int codes[sizeof...(Values) + 1];
  int i = 0;
  ((PackArg(packed[i], codes[i], values), ++i), ...);
  RetValue result;
  CallPacked(Args(packed, codes, static_cast<int>(sizeof...(Values))), &result);
  return result;
}

}  // namespace kiln::runtime
