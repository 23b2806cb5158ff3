// The op table: built once from the registration functions of the op files.
#include "ir/op.h"

#include "runtime/error.h"

namespace kiln::ir {

const char* OpPatternName(OpPattern pattern) {
  switch (pattern) {
    case OpPattern::kElemWise: return "elemwise";
    case OpPattern::kBroadcast: return "broadcast";
    case OpPattern::kInjective: return "injective";
    case OpPattern::kCommReduce: return "reduce";
    case OpPattern::kOutEWiseFusable: return "out_elemwise_fusable";
    case OpPattern::kTuple: return "tuple";
    case OpPattern::kOpaque: return "opaque";
  }
  return "?";
}

const OpTable& AllOps() {
  static const OpTable table = [] {
    OpTable t;
    RegisterElementwiseOps(t);
    RegisterNnOps(t);
    RegisterTransformOps(t);
    RegisterReduceOps(t);
    RegisterIndexingOps(t);
    RegisterAlongAxisOps(t);
    RegisterImageOps(t);
    RegisterDataDependentOps(t);
    RegisterRunTimeShapedOps(t);
    RegisterRunTimeSizedOps(t);
    RegisterTextOps(t);
    RegisterAnnotationOps(t);
    return t;
  }();
  return table;
}

namespace {

std::vector<std::string>& MutableOpRefNames() {
  static std::vector<std::string> names;
  return names;
}

}  // namespace

OpRef::OpRef(const char* name) : name_(name) { MutableOpRefNames().push_back(name); }

const OpDef& OpRef::get() const {
  const OpDef* op = op_.load(std::memory_order_acquire);
  if (op == nullptr) {
    op = FindOp(name_);
    runtime::CheckInternal(op != nullptr, "OpRef names the op '", name_, "', which is not registered");
    op_.store(op, std::memory_order_release);
  }
  return *op;
}

const std::vector<std::string>& OpRefNames() { return MutableOpRefNames(); }

const OpDef* FindOp(const std::string& name) {
  auto it = AllOps().find(name);
  return it == AllOps().end() ? nullptr : &it->second;
}

const OpDef& GetOp(const std::string& name) {
  const OpDef* op = FindOp(name);
  if (op == nullptr) runtime::Fail("unknown op '", name, "'");
  return *op;
}

}  // namespace kiln::ir
