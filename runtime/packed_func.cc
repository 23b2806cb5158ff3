// Typed access to packed arguments and the owned return value.
#include "runtime/packed_func.h"

#include <unordered_set>
#include <vector>

#include "runtime/error.h"
#include "runtime/module.h"

namespace kiln::runtime {

const char* TypeCodeName(int code) {
  switch (code) {
    case kTVMArgInt: return "int";
    case kDLUInt: return "uint";
    case kTVMArgFloat: return "float";
    case kTVMOpaqueHandle: return "handle";
    case kTVMNullptr: return "null";
    case kTVMDataType: return "dtype";
    case kDLDevice: return "device";
    case kTVMDLTensorHandle: return "DLTensor*";
    case kTVMObjectHandle: return "object";
    case kTVMModuleHandle: return "module";
    case kTVMPackedFuncHandle: return "function";
    case kTVMStr: return "string";
    case kTVMBytes: return "bytes";
    case kTVMNDArrayHandle: return "NDArray";
    case kTVMObjectRValueRefArg: return "object rvalue reference";
    case kTVMArgBool: return "bool";
    default: return "unknown type";
  }
}

void ArgValue::Mismatch(const char* expected) const {
  std::string where = index_ >= 0 ? StrCat("argument ", index_) : std::string("return value");
  Fail(where, ": expected ", expected, ", got ", TypeCodeName(code_), " (type code ", code_, ")");
}

int64_t ArgValue::AsInt() const {
  if (!IsInt()) Mismatch("an int");
  return value_.v_int64;
}

double ArgValue::AsFloat() const {
  if (code_ == kTVMArgFloat) return value_.v_float64;
  if (IsInt()) return static_cast<double>(value_.v_int64);
  Mismatch("a float");
}

std::string ArgValue::AsString() const { return std::string(AsBytes()); }

std::string_view ArgValue::AsBytes() const {
  if (code_ == kTVMStr) {
    if (value_.v_str == nullptr) Mismatch("a string");
    return value_.v_str;
  }
  if (code_ == kTVMBytes) {
    const auto* bytes = static_cast<const TVMByteArray*>(value_.v_handle);
    if (bytes == nullptr || (bytes->data == nullptr && bytes->size != 0)) Mismatch("bytes");
    return std::string_view(bytes->data, bytes->size);
  }
  Mismatch("a string or bytes");
}

DLTensor* ArgValue::AsTensor() const {
  if ((code_ != kTVMDLTensorHandle && code_ != kTVMNDArrayHandle) || value_.v_handle == nullptr) {
    Mismatch("a tensor (DLTensor* or NDArray)");
  }
  return static_cast<DLTensor*>(value_.v_handle);
}

NDArray ArgValue::AsNDArray() const {
  if (code_ != kTVMNDArrayHandle || value_.v_handle == nullptr) Mismatch("an NDArray");
  return NDArray::FromHandle(static_cast<DLTensor*>(value_.v_handle));
}

Module ArgValue::AsModule() const {
  if (code_ != kTVMModuleHandle || value_.v_handle == nullptr) Mismatch("a module");
  return *static_cast<const Module*>(value_.v_handle);
}

PackedFunc ArgValue::AsFunc() const {
  if (code_ != kTVMPackedFuncHandle || value_.v_handle == nullptr) Mismatch("a function");
  return *static_cast<const PackedFunc*>(value_.v_handle);
}

DLDevice ArgValue::AsDevice() const {
  if (code_ != kDLDevice) Mismatch("a device");
  return value_.v_device;
}

void* ArgValue::AsHandle() const {
  if (code_ == kTVMNullptr) return nullptr;
  if (code_ != kTVMOpaqueHandle) Mismatch("a handle");
  return value_.v_handle;
}

ArgValue Args::operator[](int i) const {
  if (i < 0 || i >= size_) Fail("argument ", i, " is missing (", size_, " were given)");
  return ArgValue(values_[i], codes_[i], i);
}

void Args::CheckCount(const char* function, int min_count, int max_count) const {
  if (size_ >= min_count && size_ <= max_count) return;
  if (min_count == max_count) Fail(function, ": expected ", min_count, " arguments, got ", size_);
  Fail(function, ": expected ", min_count, " to ", max_count, " arguments, got ", size_);
}

ArgValue RetValue::AsArg() const {
  TVMValue value = value_;
  if (code_ == kTVMStr) value.v_str = str_.c_str();
  if (code_ == kTVMBytes) {
    bytes_ = TVMByteArray{str_.data(), str_.size()};
    value.v_handle = &bytes_;
  }
  if (code_ == kTVMNDArrayHandle) value.v_handle = const_cast<DLTensor*>(array_.get());
  if (code_ == kTVMModuleHandle) value.v_handle = const_cast<Module*>(&module_);
  if (code_ == kTVMPackedFuncHandle) value.v_handle = const_cast<PackedFunc*>(&func_);
  return ArgValue(value, code_, -1);
}

void RetValue::Clear() {
  code_ = kTVMNullptr;
  value_ = TVMValue{};
  str_.clear();
  array_ = NDArray();
  module_ = Module();
  func_ = PackedFunc();
}

void RetValue::SetInt(int64_t v) { Clear(); code_ = kTVMArgInt; value_.v_int64 = v; }
void RetValue::SetFloat(double v) { Clear(); code_ = kTVMArgFloat; value_.v_float64 = v; }
void RetValue::SetString(std::string v) { Clear(); code_ = kTVMStr; str_ = std::move(v); }
void RetValue::SetBytes(std::string v) { Clear(); code_ = kTVMBytes; str_ = std::move(v); }
void RetValue::SetDevice(DLDevice v) { Clear(); code_ = kDLDevice; value_.v_device = v; }
void RetValue::SetHandle(void* v) {
  Clear();
  code_ = v == nullptr ? kTVMNullptr : kTVMOpaqueHandle;
  value_.v_handle = v;
}
void RetValue::Set(NDArray v) { Clear(); code_ = kTVMNDArrayHandle; array_ = std::move(v); }
void RetValue::Set(Module v) { Clear(); code_ = kTVMModuleHandle; module_ = std::move(v); }
void RetValue::Set(PackedFunc v) { Clear(); code_ = kTVMPackedFuncHandle; func_ = std::move(v); }

void RetValue::SetPlain(TVMValue value, int code) {
  switch (code) {
    case kTVMArgInt: case kDLUInt: case kTVMArgBool: case kTVMArgFloat: case kTVMOpaqueHandle:
    case kTVMNullptr: case kTVMDataType: case kDLDevice:
      Clear();
      code_ = code;
      value_ = value;
      return;
    case kTVMStr:
      SetString(value.v_str == nullptr ? "" : value.v_str);
      return;
    default:
      Fail("a compiled function returned a value of type ", TypeCodeName(code), " (type code ",
           code, "), which the runtime cannot take over");
  }
}

PackedFunc Module::GetFunction(const std::string& name, bool query_imports) const {
  Check(defined(), "GetFunction('", name, "') on an empty module");
  PackedFunc f = node_->GetFunction(name);
  if (f || !query_imports) return f;
  // Depth first through the imports in order, as TVM does, but each module of the import DAG
  // once: a crafted blob of shared imports cannot make a failed lookup take exponential time.
  std::unordered_set<const ModuleNode*> visited{node_.get()};
  std::vector<const Module*> pending;
  auto push_imports = [&pending](const ModuleNode& node) {
    for (auto it = node.imports().rbegin(); it != node.imports().rend(); ++it) pending.push_back(&*it);
  };
  push_imports(*node_);
  while (!pending.empty()) {
    const Module& module = *pending.back();
    pending.pop_back();
    if (!visited.insert(module.node_.get()).second) continue;
    f = module.node_->GetFunction(name);
    if (f) return f;
    push_imports(*module.node_);
  }
  return f;
}

const char* Module::type_key() const { return node_ == nullptr ? "(empty)" : node_->type_key(); }

}  // namespace kiln::runtime
