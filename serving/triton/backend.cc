// libtriton_kiln: Triton Inference Server's entry points (TRITONBACKEND_*) for kiln model
// libraries. A model loads its library once (ModelInitialize: load, complete and check the
// configuration); each instance gets an executor sharing the library's weights
// (ModelInstanceInitialize); ModelInstanceExecute runs requests on it (instance.h).
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "runtime/error.h"
#include "runtime/thread_pool.h"
#include "serving/triton/instance.h"
#include "serving/triton/library.h"
#include "serving/triton/model_config.h"
#include "serving/triton/triton_api.h"
#include "serving/triton/triton_errors.h"

namespace kiln::triton {
namespace {

using nlohmann::json;
using runtime::StrCat;

json ReadConfig(TRITONBACKEND_Model* model, const std::string& name) {
  TRITONSERVER_Message* message = nullptr;
  ThrowIfError(TRITONBACKEND_ModelConfig(model, 1, &message), "model '" + name + "': reading the configuration");
  const char* base = nullptr;
  size_t size = 0;
  TRITONSERVER_Error* error = TRITONSERVER_MessageSerializeToJson(message, &base, &size);
  json config;
  if (error == nullptr) config = json::parse(base, base + size, nullptr, false);
  TRITONSERVER_Error* deleted = TRITONSERVER_MessageDelete(message);
  if (deleted != nullptr) TRITONSERVER_ErrorDelete(deleted);
  ThrowIfError(error, "model '" + name + "': reading the configuration");
  runtime::Check(config.is_object(), "model '", name, "': Triton's configuration is not a JSON object");
  return config;
}

void WriteConfig(TRITONBACKEND_Model* model, const std::string& name, const json& config) {
  std::string text = config.dump();
  TRITONSERVER_Message* message = nullptr;
  ThrowIfError(TRITONSERVER_MessageNewFromSerializedJson(&message, text.data(), text.size()),
               "model '" + name + "': completing the configuration");
  TRITONSERVER_Error* error = TRITONBACKEND_ModelSetConfig(model, 1, message);
  TRITONSERVER_Error* deleted = TRITONSERVER_MessageDelete(message);
  if (deleted != nullptr) TRITONSERVER_ErrorDelete(deleted);
  ThrowIfError(error, "model '" + name + "': completing the configuration");
}

std::shared_ptr<ServedModel> LoadModel(TRITONBACKEND_Model* model) {
  const char* name_chars = nullptr;
  ThrowIfError(TRITONBACKEND_ModelName(model, &name_chars), "kiln backend: reading the model's name");
  std::string name = name_chars;
  uint64_t version = 0;
  ThrowIfError(TRITONBACKEND_ModelVersion(model, &version), "model '" + name + "': reading its version");
  TRITONBACKEND_ArtifactType artifact_type = TRITONBACKEND_ARTIFACT_FILESYSTEM;
  const char* location = nullptr;
  ThrowIfError(TRITONBACKEND_ModelRepository(model, &artifact_type, &location),
               "model '" + name + "': reading its repository path");
  runtime::Check(artifact_type == TRITONBACKEND_ARTIFACT_FILESYSTEM, "model '", name,
                 "': the kiln backend reads models from a file system only");

  json config = ReadConfig(model, name);
  std::string version_dir = (std::filesystem::path(location) / std::to_string(version)).string();
  auto served = std::make_shared<ServedModel>();
  try {
    served->library = ModelLibrary::Load(version_dir, LibraryFileName(config));
  } catch (const runtime::Error& e) {
    throw runtime::Error(StrCat("model '", name, "' version ", version, ": ", e.what()));
  }

  bool auto_complete = false;
  ThrowIfError(TRITONBACKEND_ModelAutoCompleteConfig(model, &auto_complete), "model '" + name + "'");
  if (auto_complete && AutoCompleteConfig(config, served->library->tensors())) {
    WriteConfig(model, name, config);
    config = ReadConfig(model, name);  // as Triton completed it further
  }
  served->cores = runtime::NumThreads();
  served->config = CheckConfig(config, served->library->tensors(), served->cores);
  for (const std::string& warning : served->config.warnings) Log(TRITONSERVER_LOG_WARN, warning);
  std::string threads = served->config.num_threads_set
                            ? "(parameter num_threads)"
                            : StrCat("(", served->cores, " threads over ", served->config.instance_count,
                                     " instances; follows the live instances)");
  Log(TRITONSERVER_LOG_INFO,
      StrCat("model '", name, "' version ", version, ": kiln library ", served->library->path(), ", ",
             served->config.inputs.size(), " inputs, ", served->config.outputs.size(), " outputs, max_batch_size ",
             served->config.max_batch_size, ", ", served->config.num_threads, " threads per instance ", threads));
  return served;
}

// The model state Triton holds for us: a heap-allocated shared_ptr, so instances keep the model.
using ModelHandle = std::shared_ptr<ServedModel>;

}  // namespace
}  // namespace kiln::triton

using kiln::triton::Guard;
using kiln::triton::Instance;
using kiln::triton::ModelHandle;
using kiln::triton::ThrowIfError;

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend*) {
  uint32_t major = 0, minor = 0;
  TRITONSERVER_Error* error = TRITONBACKEND_ApiVersion(&major, &minor);
  if (error != nullptr) return error;
  if (major != KILN_TRITONBACKEND_API_VERSION_MAJOR || minor < KILN_TRITONBACKEND_API_VERSION_MINOR) {
    std::string message = kiln::runtime::StrCat(
        "kiln backend: built for Triton's backend API ", KILN_TRITONBACKEND_API_VERSION_MAJOR, ".",
        KILN_TRITONBACKEND_API_VERSION_MINOR, " (Triton 2.51) or a later 1.x; this server has ", major, ".", minor);
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED, message.c_str());
  }
  return nullptr;
}

// Without an instance_group, Triton makes CPU instances for kiln models (its default on a machine
// with GPUs would be GPU ones); instances may be made in parallel (ModelLibrary::NewExecutor locks).
TRITONSERVER_Error* TRITONBACKEND_GetBackendAttribute(TRITONBACKEND_Backend*,
                                                      TRITONBACKEND_BackendAttribute* attributes) {
  TRITONSERVER_Error* error =
      TRITONBACKEND_BackendAttributeAddPreferredInstanceGroup(attributes, TRITONSERVER_INSTANCEGROUPKIND_CPU, 0, nullptr, 0);
  if (error != nullptr) return error;
  return TRITONBACKEND_BackendAttributeSetParallelModelInstanceLoading(attributes, true);
}

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  return Guard([&] {
    auto handle = std::make_unique<ModelHandle>(kiln::triton::LoadModel(model));
    ThrowIfError(TRITONBACKEND_ModelSetState(model, handle.get()), "kiln backend: keeping the model's state");
    handle.release();
  });
}

TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  return Guard([&] {
    void* state = nullptr;
    ThrowIfError(TRITONBACKEND_ModelState(model, &state), "kiln backend: finding the model's state");
    delete static_cast<ModelHandle*>(state);
  });
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* triton_instance) {
  return Guard([&] {
    const char* name = nullptr;
    ThrowIfError(TRITONBACKEND_ModelInstanceName(triton_instance, &name), "kiln backend: reading an instance's name");
    TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
    ThrowIfError(TRITONBACKEND_ModelInstanceKind(triton_instance, &kind), std::string("instance '") + name + "'");
    kiln::runtime::Check(kind == TRITONSERVER_INSTANCEGROUPKIND_CPU, "instance '", name,
                         "': kiln runs on the CPU only (use instance_group kind KIND_CPU)");
    TRITONBACKEND_Model* model = nullptr;
    ThrowIfError(TRITONBACKEND_ModelInstanceModel(triton_instance, &model), std::string("instance '") + name + "'");
    void* state = nullptr;
    ThrowIfError(TRITONBACKEND_ModelState(model, &state), std::string("instance '") + name + "'");
    const ModelHandle& served = *static_cast<ModelHandle*>(state);

    auto instance = std::make_unique<Instance>(served, name);
    if (served->config.warmup) {
      auto start = std::chrono::steady_clock::now();
      instance->Warmup();
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      kiln::triton::Log(TRITONSERVER_LOG_INFO, kiln::runtime::StrCat("instance '", name, "': warm-up run took ", ms, " ms"));
    }
    ThrowIfError(TRITONBACKEND_ModelInstanceSetState(triton_instance, instance.get()),
                 std::string("instance '") + name + "'");
    instance.release();
  });
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* triton_instance) {
  return Guard([&] {
    void* state = nullptr;
    ThrowIfError(TRITONBACKEND_ModelInstanceState(triton_instance, &state), "kiln backend: finding an instance's state");
    std::unique_ptr<Instance> instance(static_cast<Instance*>(state));
    const char* name = nullptr;
    if (TRITONBACKEND_ModelInstanceName(triton_instance, &name) == nullptr && instance != nullptr) {
      kiln::triton::Log(TRITONSERVER_LOG_INFO, kiln::runtime::StrCat("instance '", name, "': ", instance->Summary()));
    }
  });
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* triton_instance,
                                                       TRITONBACKEND_Request** requests, const uint32_t count) {
  // No exception may cross into Triton. Instance::Execute answers each request's failures in its
  // response and releases every request whatever happens; it throws only before taking any
  // (out of memory for a log line), and then Triton's error leaves all the requests to Triton.
  try {
    void* state = nullptr;
    TRITONSERVER_Error* error = TRITONBACKEND_ModelInstanceState(triton_instance, &state);
    if (error != nullptr) return error;  // the requests stay Triton's
    static_cast<Instance*>(state)->Execute(triton_instance, requests, count);
    return nullptr;
  } catch (...) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "kiln backend: executing requests failed");
  }
}

}  // extern "C"
