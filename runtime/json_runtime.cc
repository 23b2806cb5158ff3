// JsonRuntimeBase: argument checks, one-time initialization and the binary form.
#include "runtime/json_runtime.h"

#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/tvm_object_array.h"

namespace kiln::runtime {

JsonRuntimeBase::JsonRuntimeBase(std::string symbol, std::string graph_json, std::vector<std::string> const_names)
    : symbol_(std::move(symbol)),
      graph_json_(std::move(graph_json)),
      const_names_(std::move(const_names)),
      graph_(ParseJsonGraph(graph_json_)) {
  std::vector<std::string> consts;
  for (uint32_t n : graph_.arg_nodes) {
    const JsonNode& node = graph_.nodes[n];
    for (uint32_t k = 0; k < node.num_outputs(); ++k) {
      (node.op == "input" ? input_entries_ : const_entries_).push_back(graph_.node_row_ptr[n] + k);
    }
    if (node.op == "const") consts.push_back(node.name);
  }
  Check(consts == const_names_, "external module '", symbol_, "': its graph's constants (", consts.size(),
        ") are not the constant names it was given (", const_names_.size(), ") in order");
}

void JsonRuntimeBase::SaveToBinary(ByteWriter& writer) const {
  writer.WriteString(symbol_);
  writer.WriteString(graph_json_);
  writer.WriteStringVector(const_names_);
}

JsonModuleFields ReadJsonModuleFields(ByteReader& reader) {
  JsonModuleFields fields;
  fields.symbol = reader.ReadString("external module symbol");
  fields.graph_json = reader.ReadString("external module graph JSON");
  fields.const_names = reader.ReadStringVector("external module constant names");
  return fields;
}

void JsonRuntimeBase::CheckArgument(const DLTensor& t, uint32_t entry, const std::string& what) const {
  uint32_t node = 0;
  while (graph_.node_row_ptr[node + 1] <= entry) ++node;
  const std::vector<int64_t>& shape = graph_.nodes[node].shapes[entry - graph_.node_row_ptr[node]];
  DLDataType dtype = graph_.nodes[node].dtypes[entry - graph_.node_row_ptr[node]];
  Check(t.device.device_type == kDLCPU, symbol_, ": ", what, " is not on the CPU");
  bool same = t.dtype == dtype && t.ndim == static_cast<int>(shape.size()) &&
              std::equal(shape.begin(), shape.end(), t.shape) && IsCompact(t);
  Check(same, symbol_, ": ", what, " is ", DTypeToString(t.dtype), ShapeToString(t.shape, t.ndim),
        ", expected a compact ", DTypeToString(dtype), ShapeToString(shape));
}

PackedFunc JsonRuntimeBase::GetFunction(const std::string& name) {
  auto self = std::static_pointer_cast<JsonRuntimeBase>(shared_from_this());
  if (name == "get_symbol") {
    return PackedFunc([self](const Args&, RetValue* result) { result->SetString(self->symbol_); });
  }
  if (name == "get_const_vars") {
    return PackedFunc([self](const Args&, RetValue* result) {
      std::string joined;
      for (const std::string& c : self->const_names_) joined += (joined.empty() ? "" : ",") + c;
      result->SetString(joined);
    });
  }
  if (name == "__init_" + symbol_) {
    return PackedFunc([self](const Args& args, RetValue* result) {
      // TVM's convention: one Array<NDArray> object; one tensor per constant, as kiln's const
      // loader passed them before, is taken too.
      std::vector<NDArray> constants;
      if (args.size() == 1 && args[0].code() == kTVMObjectHandle) {
        constants = NDArraysOfTvmArray(args[0].value().v_handle, "__init_" + self->symbol_ + "'s argument");
      } else {
        for (int i = 0; i < args.size(); ++i) constants.push_back(args[i].AsNDArray());
      }
      Check(constants.size() == self->const_names_.size(), "__init_", self->symbol_, ": expected ",
            self->const_names_.size(), " constants, got ", constants.size());
      for (size_t i = 0; i < constants.size(); ++i) {
        self->CheckArgument(*constants[i].get(), self->const_entries_[i], "constant '" + self->const_names_[i] + "'");
      }
      std::call_once(self->initialized_, [&] {
        self->Init(constants);
        self->ready_ = true;
      });
      result->SetInt(0);  // what TVM's const loader reads back
    });
  }
  if (name == symbol_) {
    return PackedFunc([self](const Args& args, RetValue*) {
      size_t num_inputs = self->input_entries_.size(), num_outputs = self->graph_.heads.size();
      args.CheckCount(self->symbol_.c_str(), static_cast<int>(num_inputs + num_outputs),
                      static_cast<int>(num_inputs + num_outputs));
      std::vector<const DLTensor*> inputs;
      std::vector<DLTensor*> outputs;
      for (int i = 0; i < args.size(); ++i) {
        DLTensor* t = args[i].AsTensor();
        size_t k = static_cast<size_t>(i);
        if (k < num_inputs) {
          self->CheckArgument(*t, self->input_entries_[k], StrCat("input ", k));
          inputs.push_back(t);
        } else {
          self->CheckArgument(*t, self->graph_.EntryId(self->graph_.heads[k - num_inputs]), StrCat("output ", k - num_inputs));
          outputs.push_back(t);
        }
      }
      if (self->const_names_.empty()) {
        std::call_once(self->initialized_, [&] {
          self->Init({});
          self->ready_ = true;
        });
      }
      Check(self->ready_, self->symbol_, ": not initialized: its ", self->const_names_.size(),
            " constants were not given (__init_", self->symbol_, " was not called)");
      self->Run(inputs, outputs);
    });
  }
  return PackedFunc();
}

}  // namespace kiln::runtime
