// The executor factory module and its binary form (tvm-formats.md A.3).
#include "runtime/graph_executor_factory.h"

#include <set>

#include "runtime/error.h"
#include "runtime/graph_executor_module.h"

namespace kiln::runtime {
namespace {

// The smallest NDArray record: magic, reserved, device, ndim, dtype and data size (tvm-formats.md A.2).
constexpr size_t kMinArrayRecordBytes = 40;

// Whether the payload after the graph JSON reads as kiln before 0.2 wrote it: the names as a vector, then
// their count, then an NDArray record. TVM's order (count, then names) never reads this way: its
// names vector would have to end where a copy of its count and an array magic follow.
bool HasNamesBeforeCount(ByteReader reader) {
  uint64_t names = 0, count = 0, magic = 0;
  if (!reader.TryRead(&names) || names == 0) return false;
  for (uint64_t i = 0; i < names; ++i) {
    uint64_t length = 0;
    if (!reader.TryRead(&length) || !reader.TrySkip(length)) return false;
  }
  return reader.TryRead(&count) && count == names && reader.TryRead(&magic) && magic == kNDArrayMagic;
}

class GraphExecutorFactoryNode final : public ModuleNode {
 public:
  GraphExecutorFactoryNode(std::string graph_json, Graph graph, NamedArrays params,
                           std::string module_name)
      : graph_json_(std::move(graph_json)),
        graph_(std::move(graph)),
        params_(std::move(params)),
        module_name_(std::move(module_name)) {}

  const char* type_key() const override { return "GraphExecutorFactory"; }
  bool IsBinarySerializable() const override { return true; }

  void SaveToBinary(ByteWriter& writer) const override {
    // TVM v0.19's GraphExecutorFactory::SaveToBinary: the count comes before the names.
    writer.WriteString(graph_json_);
    std::vector<std::string> names;
    for (const auto& [name, array] : params_) names.push_back(name);
    writer.Write<uint64_t>(params_.size());
    writer.WriteStringVector(names);
    for (const auto& [name, array] : params_) WriteNDArray(writer, array);
    writer.WriteString(module_name_);
  }

  PackedFunc GetFunction(const std::string& name) override {
    auto self = std::static_pointer_cast<GraphExecutorFactoryNode>(shared_from_this());
    if (name == module_name_) {
      return PackedFunc([self](const Args& args, RetValue* result) {
        result->Set(CreateGraphExecutorModule(self->CreateExecutor(DevicesFromArgs(args, 0))));
      });
    }
    if (name == "debug_create") {
      return PackedFunc([self](const Args& args, RetValue* result) {
        args.CheckCount("debug_create", 1, 64);
        std::string requested = args[0].AsString();
        Check(requested == self->module_name_, "debug_create: this factory holds module '",
              self->module_name_, "', not '", requested, "'");
        result->Set(CreateGraphExecutorModule(self->CreateExecutor(DevicesFromArgs(args, 1)), true));
      });
    }
    if (name == "get_graph_json") {
      return PackedFunc([self](const Args&, RetValue* result) { result->SetString(self->graph_json_); });
    }
    if (name == "get_graph_params") {
      return PackedFunc([self](const Args&, RetValue* result) {
        result->SetBytes(SaveParams(self->params_));
      });
    }
    if (name == "remove_params") {
      return PackedFunc([self](const Args&, RetValue* result) {
        auto copy = std::make_shared<GraphExecutorFactoryNode>(self->graph_json_, self->graph_,
                                                               NamedArrays(), self->module_name_);
        for (const Module& import : self->imports()) copy->Import(import);
        result->Set(Module(copy));
      });
    }
    return PackedFunc();
  }

 private:
  std::shared_ptr<GraphExecutor> CreateExecutor(const std::vector<DLDevice>& devices) {
    Check(!imports().empty(), "GraphExecutorFactory '", module_name_,
          "' has no code module imported (the library is incomplete)");
    auto executor = std::make_shared<GraphExecutor>(graph_, imports()[0], devices);
    executor->LoadParams(params_);
    return executor;
  }

  std::string graph_json_;
  Graph graph_;
  NamedArrays params_;
  std::string module_name_;
};

}  // namespace

Module CreateGraphExecutorFactory(const std::string& graph_json, NamedArrays params,
                                  const std::string& module_name, const Module& lib) {
  auto node = std::make_shared<GraphExecutorFactoryNode>(graph_json, ParseGraphJson(graph_json),
                                                         std::move(params), module_name);
  if (lib.defined()) node->Import(lib);
  return Module(node);
}

Module LoadGraphExecutorFactory(ByteReader& reader) {
  // TVM v0.19's GraphExecutorFactoryModuleLoadBinary: graph JSON, count, names, arrays, name.
  std::string graph_json = reader.ReadString("factory graph JSON");
  if (HasNamesBeforeCount(reader)) {
    reader.FailAt("the factory's parameter names come before their count, the layout of kiln before 0.2 "
                  "that TVM cannot read (TVM writes the count first); export the library again");
  }
  uint64_t count = reader.ReadCount("factory parameter count", kMinArrayRecordBytes);
  std::vector<std::string> names = reader.ReadStringVector("factory parameter names");
  if (count != names.size()) {
    reader.FailAt(StrCat("factory counts ", count, " parameters but lists ", names.size(), " names"));
  }
  std::set<std::string> seen;
  NamedArrays params;
  for (const std::string& name : names) {
    if (!seen.insert(name).second) reader.FailAt(StrCat("factory parameter '", name, "' appears twice"));
    try {
      params.emplace_back(name, ReadNDArray(reader));
    } catch (const Error& e) {
      Fail(e.what(), " in factory parameter '", name, "'");
    }
  }
  std::string module_name = reader.ReadString("factory module name");
  return CreateGraphExecutorFactory(graph_json, std::move(params), module_name, Module());
}

}  // namespace kiln::runtime
