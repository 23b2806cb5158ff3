// The base of the runtime modules that run a JSON subgraph (TVM's JSONRuntimeBase): a module
// holding one external function's graph (json_graph.h), its symbol and the names of the
// constants it takes. Packed functions: `get_symbol`, `get_const_vars` (the names, comma-joined),
// `<symbol>`(inputs..., outputs...) and `__init_<symbol>`(constants...), whose first call
// initializes the module (Init) once even when several threads call it together; `<symbol>`
// initializes a module without constants itself.
//
// What is shared and what is not: a loaded library holds one such module, which every executor
// made from it calls. Init builds what all calls share (prepared primitives, reordered weights)
// and is the only writer of it; Run gets the call's inputs and outputs and keeps what one call
// needs (bindings, intermediate buffers) out of the module, so executors may run it concurrently.
//
// Binary form (TVM v0.19): string symbol; string graph JSON; vector<string> constant names.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/json_graph.h"
#include "runtime/module.h"

namespace kiln::runtime {

class JsonRuntimeBase : public ModuleNode {
 public:
  // Throws Error when the graph is malformed or its constants are not `const_names` in order.
  JsonRuntimeBase(std::string symbol, std::string graph_json, std::vector<std::string> const_names);

  bool IsBinarySerializable() const override { return true; }
  void SaveToBinary(ByteWriter& writer) const override;
  PackedFunc GetFunction(const std::string& name) override;

  const std::string& symbol() const { return symbol_; }
  const std::string& graph_json() const { return graph_json_; }
  const std::vector<std::string>& const_names() const { return const_names_; }
  const JsonGraph& graph() const { return graph_; }

 protected:
  // Called once, with one array per constant name, in order.
  virtual void Init(const std::vector<NDArray>& constants) = 0;
  // Computes the outputs (the graph's heads) from the inputs (its input nodes' outputs, in
  // arg_nodes order); both checked against the graph's shapes and dtypes.
  virtual void Run(const std::vector<const DLTensor*>& inputs, const std::vector<DLTensor*>& outputs) const = 0;

  // The entries of the input nodes and of the constant nodes, in arg_nodes order.
  const std::vector<uint32_t>& input_entries() const { return input_entries_; }
  const std::vector<uint32_t>& const_entries() const { return const_entries_; }

 private:
  void CheckArgument(const DLTensor& t, uint32_t entry, const std::string& what) const;

  std::string symbol_;
  std::string graph_json_;
  std::vector<std::string> const_names_;
  JsonGraph graph_;
  std::vector<uint32_t> input_entries_;
  std::vector<uint32_t> const_entries_;
  std::once_flag initialized_;
  std::atomic<bool> ready_{false};  // Init has returned
};

// Reads the binary form: (symbol, graph JSON, constant names).
struct JsonModuleFields {
  std::string symbol;
  std::string graph_json;
  std::vector<std::string> const_names;
};
JsonModuleFields ReadJsonModuleFields(ByteReader& reader);

}  // namespace kiln::runtime
