// Packed-function interface of the graph executor.
#include "runtime/graph_executor_module.h"

#include <nlohmann/json.hpp>

#include "runtime/error.h"
#include "runtime/profiler.h"

namespace kiln::runtime {
namespace {

// TVM's {"shape": {name: dims}, "dtype": {name: dtype}}; a dimension decided at run time is -1,
// named in kiln's "dim_names": {name: [dimension name or null per axis]} (only with such dims).
std::string InfoJson(const std::vector<TensorInfo>& infos) {
  nlohmann::ordered_json shapes = nlohmann::ordered_json::object();
  nlohmann::ordered_json dtypes = nlohmann::ordered_json::object();
  nlohmann::ordered_json names = nlohmann::ordered_json::object();
  for (const TensorInfo& info : infos) {
    std::vector<int64_t> shape = info.shape;
    if (!info.batch_dim.empty() || !info.axis_dims.empty()) {
      nlohmann::ordered_json axes = nlohmann::ordered_json::array();
      for (size_t i = 0; i < shape.size(); ++i) {
        const std::string& name = i == 0 && !info.batch_dim.empty() ? info.batch_dim
                                  : i < info.axis_dims.size()        ? info.axis_dims[i]
                                                                     : std::string();
        if (name.empty()) {
          axes.push_back(nullptr);
          continue;
        }
        shape[i] = -1;
        axes.push_back(name);
      }
      names[info.name] = axes;
    }
    shapes[info.name] = shape;
    dtypes[info.name] = DTypeToString(info.dtype);
  }
  nlohmann::ordered_json result{{"shape", shapes}, {"dtype", dtypes}};
  if (!names.empty()) result["dim_names"] = names;
  return result.dump();
}

class GraphExecutorModuleNode final : public ModuleNode {
 public:
  GraphExecutorModuleNode(std::shared_ptr<GraphExecutor> executor, bool debug)
      : executor_(std::move(executor)), debug_(debug) {}

  const char* type_key() const override { return debug_ ? "GraphExecutorDebug" : "GraphExecutor"; }
  const std::shared_ptr<GraphExecutor>& executor() const { return executor_; }

  PackedFunc GetFunction(const std::string& name) override {
    // Closures hold the executor (not the module) so they stay valid on their own.
    std::shared_ptr<GraphExecutor> exec = executor_;
    auto input_index = [exec](const ArgValue& key) {
      return key.IsString() ? exec->InputIndex(key.AsString()) : static_cast<int>(key.AsInt());
    };
    auto output_index = [exec](const ArgValue& key) {
      return key.IsString() ? exec->OutputIndex(key.AsString()) : static_cast<int>(key.AsInt());
    };
    if (name == "set_input") {
      return PackedFunc([exec, input_index](const Args& args, RetValue*) {
        args.CheckCount("set_input", 2, 2);
        exec->SetInput(input_index(args[0]), *args[1].AsTensor());
      });
    }
    if (name == "set_input_zero_copy") {
      return PackedFunc([exec, input_index](const Args& args, RetValue*) {
        args.CheckCount("set_input_zero_copy", 2, 2);
        exec->SetInputZeroCopy(input_index(args[0]), *args[1].AsTensor());
      });
    }
    if (name == "set_output_zero_copy") {
      return PackedFunc([exec, output_index](const Args& args, RetValue*) {
        args.CheckCount("set_output_zero_copy", 2, 2);
        exec->SetOutputZeroCopy(output_index(args[0]), *args[1].AsTensor());
      });
    }
    if (name == "run") {
      if (debug_) {
        return PackedFunc([this, self = shared_from_this()](const Args& args, RetValue*) {
          args.CheckCount("run", 0, 0);
          last_profile_ = ProfileRun(*executor_);
        });
      }
      return PackedFunc([exec](const Args& args, RetValue*) {
        args.CheckCount("run", 0, 0);
        exec->Run();
      });
    }
    if (name == "set_num_threads" || name == "get_num_threads") {
      bool set = name == "set_num_threads";
      return PackedFunc([exec, set](const Args& args, RetValue* result) {
        args.CheckCount(set ? "set_num_threads" : "get_num_threads", set ? 1 : 0, set ? 1 : 0);
        if (set) exec->SetNumThreads(static_cast<int>(args[0].AsInt()));
        result->SetInt(exec->num_threads());
      });
    }
    if (name == "get_output") {
      return PackedFunc([exec, output_index](const Args& args, RetValue* result) {
        args.CheckCount("get_output", 1, 2);
        int index = output_index(args[0]);
        if (args.size() == 2) {
          exec->CopyOutputTo(index, *args[1].AsTensor());
        } else {
          result->Set(exec->GetOutput(index));
        }
      });
    }
    if (name == "get_input") {
      return PackedFunc([exec, input_index](const Args& args, RetValue* result) {
        args.CheckCount("get_input", 1, 1);
        result->Set(exec->GetInput(input_index(args[0])));
      });
    }
    if (name == "get_num_inputs" || name == "get_num_outputs") {
      bool inputs = name == "get_num_inputs";
      return PackedFunc([exec, inputs](const Args& args, RetValue* result) {
        args.CheckCount(inputs ? "get_num_inputs" : "get_num_outputs", 0, 0);
        result->SetInt(inputs ? exec->NumInputs() : exec->NumOutputs());
      });
    }
    if (name == "get_input_index" || name == "get_output_index") {
      bool inputs = name == "get_input_index";
      return PackedFunc([exec, inputs](const Args& args, RetValue* result) {
        args.CheckCount(inputs ? "get_input_index" : "get_output_index", 1, 1);
        std::string key = args[0].AsString();
        result->SetInt(inputs ? exec->GetInputIndex(key) : exec->GetOutputIndex(key));
      });
    }
    if (name == "get_input_name") {
      return PackedFunc([exec](const Args& args, RetValue* result) {
        args.CheckCount("get_input_name", 1, 1);
        result->SetString(exec->InputName(static_cast<int>(args[0].AsInt())));
      });
    }
    if (name == "get_input_info" || name == "get_output_info") {
      bool inputs = name == "get_input_info";
      return PackedFunc([exec, inputs](const Args& args, RetValue* result) {
        args.CheckCount(inputs ? "get_input_info" : "get_output_info", 0, 0);
        result->SetString(InfoJson(inputs ? exec->GetInputInfo() : exec->GetOutputInfo()));
      });
    }
    if (name == "load_params") {
      return PackedFunc([exec](const Args& args, RetValue*) {
        args.CheckCount("load_params", 1, 1);
        exec->LoadParams(args[0].AsBytes());
      });
    }
    if (name == "share_params") {
      return PackedFunc([exec](const Args& args, RetValue*) {
        args.CheckCount("share_params", 2, 2);
        std::shared_ptr<GraphExecutor> other = GetGraphExecutor(args[0].AsModule());
        exec->ShareParams(*other, args[1].AsBytes());
      });
    }
    if (!debug_) return PackedFunc();
    if (name == "profile") {
      return PackedFunc([this, self = shared_from_this()](const Args& args, RetValue* result) {
        args.CheckCount("profile", 0, 0);
        last_profile_ = ProfileRun(*executor_);
        result->SetString(last_profile_.Table());
      });
    }
    if (name == "profile_chrome_trace") {
      return PackedFunc([this, self = shared_from_this()](const Args& args, RetValue* result) {
        args.CheckCount("profile_chrome_trace", 0, 0);
        Check(!last_profile_.nodes.empty() || executor_->NumSteps() == 0,
              "profile_chrome_trace: nothing was profiled yet (call run or profile first)");
        result->SetString(last_profile_.ChromeTrace());
      });
    }
    if (name == "run_individual") {
      return PackedFunc([exec](const Args& args, RetValue* result) {
        args.CheckCount("run_individual", 2, 3);
        int min_repeat_ms = args.size() == 3 ? static_cast<int>(args[2].AsInt()) : 0;
        auto times = RunIndividual(*exec, static_cast<int>(args[0].AsInt()),
                                   static_cast<int>(args[1].AsInt()), min_repeat_ms);
        result->SetString(nlohmann::json(times).dump());
      });
    }
    return PackedFunc();
  }

 private:
  std::shared_ptr<GraphExecutor> executor_;
  bool debug_;
  ProfileReport last_profile_;
};

}  // namespace

Module CreateGraphExecutorModule(std::shared_ptr<GraphExecutor> executor, bool debug) {
  return Module(std::make_shared<GraphExecutorModuleNode>(std::move(executor), debug));
}

std::shared_ptr<GraphExecutor> GetGraphExecutor(const Module& module) {
  auto* node = dynamic_cast<GraphExecutorModuleNode*>(module.get());
  Check(node != nullptr, "expected a graph executor module, got a module of type '",
        module.type_key(), "'");
  return node->executor();
}

std::vector<DLDevice> DevicesFromArgs(const Args& args, int first) {
  std::vector<DLDevice> devices;
  for (int i = first; i < args.size(); ++i) {
    if (args[i].code() == kDLDevice) {
      devices.push_back(args[i].AsDevice());
    } else {
      Check(i + 1 < args.size(), "argument ", i, ": a device type without a device id");
      devices.push_back(DLDevice{static_cast<DLDeviceType>(args[i].AsInt()),
                                 static_cast<int32_t>(args[i + 1].AsInt())});
      ++i;
    }
  }
  if (devices.empty()) devices.push_back(kCPU);
  return devices;
}

}  // namespace kiln::runtime
