// A JSON runtime module for the tests (type key "kiln_test_json"): it runs float32 subgraphs of
// add, multiply, nn.relu and the composite test.multiply_add (a * b + c) by plain loops. Init
// copies the constants and counts its calls; each call of the function keeps its intermediate
// values in buffers of its own, so concurrent calls share nothing but the constants.
#pragma once

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/json_runtime.h"

namespace kiln::test {

class TestJsonModule final : public runtime::JsonRuntimeBase {
 public:
  using JsonRuntimeBase::JsonRuntimeBase;
  static constexpr char kTypeKey[] = "kiln_test_json";
  static std::atomic<int>& InitCalls() {
    static std::atomic<int> calls{0};
    return calls;
  }

  const char* type_key() const override { return kTypeKey; }

  // Makes the runtime load the module from an import blob.
  static void RegisterLoader() {
    runtime::RegisterGlobalFunction(
        std::string("runtime.module.loadbinary_") + kTypeKey,
        runtime::PackedFunc([](const runtime::Args& args, runtime::RetValue* result) {
          auto* reader = static_cast<runtime::ByteReader*>(args[0].AsHandle());
          runtime::JsonModuleFields f = runtime::ReadJsonModuleFields(*reader);
          result->Set(runtime::Module(std::make_shared<TestJsonModule>(f.symbol, f.graph_json, f.const_names)));
        }),
        true);
  }

 protected:
  void Init(const std::vector<runtime::NDArray>& constants) override {
    ++InitCalls();
    for (const runtime::NDArray& c : constants) {
      std::vector<float> values(c.NumBytes() / sizeof(float));
      c.CopyToBytes(values.data(), c.NumBytes());
      constants_.push_back(std::move(values));
    }
  }

  void Run(const std::vector<const DLTensor*>& inputs, const std::vector<DLTensor*>& outputs) const override {
    const runtime::JsonGraph& g = graph();
    std::vector<std::vector<float>> values(g.num_entries());  // this call's own
    std::vector<const float*> at(g.num_entries(), nullptr);
    for (size_t i = 0; i < inputs.size(); ++i) at[input_entries()[i]] = static_cast<const float*>(inputs[i]->data);
    for (size_t i = 0; i < constants_.size(); ++i) at[const_entries()[i]] = constants_[i].data();
    for (uint32_t n = 0; n < g.nodes.size(); ++n) {
      const runtime::JsonNode& node = g.nodes[n];
      if (node.op != "kernel") continue;
      size_t count = 1;
      for (int64_t d : node.shapes[0]) count *= static_cast<size_t>(d);
      std::vector<const float*> in;
      for (const runtime::JsonEntry& e : node.inputs) in.push_back(at[g.EntryId(e)]);
      std::vector<float>& out = values[g.node_row_ptr[n]];
      out.resize(count);
      for (size_t i = 0; i < count; ++i) {
        if (node.name == "add") out[i] = in[0][i] + in[1][i];
        else if (node.name == "multiply") out[i] = in[0][i] * in[1][i];
        else if (node.name == "nn.relu") out[i] = in[0][i] > 0 ? in[0][i] : 0;
        else if (node.name == "test.multiply_add") out[i] = in[0][i] * in[1][i] + in[2][i];
        else runtime::Fail("kiln_test_json: no kernel for ", node.name);
      }
      at[g.node_row_ptr[n]] = out.data();
    }
    for (size_t k = 0; k < outputs.size(); ++k) {
      std::memcpy(outputs[k]->data, at[g.EntryId(g.heads[k])], runtime::DataBytes(*outputs[k]));
    }
  }

 private:
  std::vector<std::vector<float>> constants_;  // written by Init only
};

}  // namespace kiln::test
