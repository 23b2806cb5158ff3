// The executor factory module and its binary form (tvm-formats.md A.3).
#include "runtime/graph_executor_factory.h"

#include "runtime/error.h"
#include "runtime/graph_executor_module.h"

namespace kiln::runtime {
namespace {

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
    writer.WriteString(graph_json_);
    std::vector<std::string> names;
    for (const auto& [name, array] : params_) names.push_back(name);
    writer.WriteStringVector(names);
    writer.Write<uint64_t>(params_.size());
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
  std::string graph_json = reader.ReadString("factory graph JSON");
  std::vector<std::string> names = reader.ReadStringVector("factory parameter names");
  uint64_t count = reader.Read<uint64_t>("factory parameter count");
  if (count != names.size()) {
    reader.FailAt(StrCat("factory lists ", names.size(), " parameter names but ", count, " arrays"));
  }
  NamedArrays params;
  for (const std::string& name : names) {
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
