// The Triton model configuration against a kiln library: completion, checks, parameters.
#include "serving/triton/model_config.h"

#include <algorithm>
#include <cctype>

#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/ndarray.h"
#include "serving/triton/data_types.h"

namespace kiln::triton {

using nlohmann::json;
using runtime::Check;
using runtime::Fail;
using runtime::ShapeToString;

namespace {

// Triton writes int64 fields (dims, max_batch_size) as JSON strings; a hand-made JSON has numbers.
int64_t JsonInt(const json& value, const std::string& what) {
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    try {
      size_t used = 0;
      int64_t result = std::stoll(text, &used);
      if (used == text.size()) return result;
    } catch (const std::exception&) {
    }
  }
  Fail(what, " is not an integer: ", value.dump());
}

// Runs `read`, turning nlohmann's exceptions (a field of the wrong JSON type) into kiln's Error
// naming the configuration entry `where`.
template <typename Read>
auto ReadingEntry(const std::string& where, Read&& read) {
  try {
    return read();
  } catch (const json::exception& e) {
    Fail(where, ": a field has the wrong JSON type (", e.what(), ")");
  }
}

std::string ModelName(const json& config) {
  return config.contains("name") && config["name"].is_string() ? config["name"].get<std::string>() : "?";
}

int64_t MaxBatchSize(const json& config) {
  if (!config.contains("max_batch_size")) return 0;
  int64_t value = JsonInt(config["max_batch_size"], "model '" + ModelName(config) + "': max_batch_size");
  Check(value >= 0, "model '", ModelName(config), "': max_batch_size ", value, " is negative");
  return value;
}

TRITONSERVER_DataType TritonTypeOrFail(const TensorSpec& tensor, const char* kind, const std::string& model) {
  std::optional<TRITONSERVER_DataType> type = TritonTypeOf(tensor.dtype);
  Check(type.has_value(), "model '", model, "': the library's ", kind, " '", tensor.name, "' has dtype ",
        runtime::DTypeToString(tensor.dtype), ", which Triton has no type for");
  return *type;
}

// The tensor's dims as Triton sees them: without the leading 1 when the model batches, and -1
// along an axis the data or a shape dimension decides.
std::vector<int64_t> ServedDims(const TensorSpec& tensor, const char* kind, int64_t max_batch_size,
                                const std::string& model) {
  std::vector<int64_t> dims = tensor.shape;
  if (tensor.data_dependent_axis >= 0) dims[tensor.data_dependent_axis] = -1;
  for (size_t i = 0; i < tensor.varying.size(); ++i) {
    if (tensor.varying[i]) dims[i] = -1;
  }
  if (max_batch_size == 0) return dims;
  Check(tensor.data_dependent_axis < 0, "model '", model, "': max_batch_size ", max_batch_size,
        " needs outputs of fixed shape, and the library's output '", tensor.name,
        "' has an extent the data decides; set max_batch_size: 0");
  Check(!dims.empty() && dims[0] == 1, "model '", model, "': max_batch_size ", max_batch_size,
        " needs every input and output of the library to have a leading dimension of 1 (one row per "
        "sample), but ", kind, " '", tensor.name, "' has shape ", ShapeToString(tensor.shape),
        "; set max_batch_size: 0, or compile the library with a batch of 1 or a batch dimension (--dims)");
  dims.erase(dims.begin());
  return dims;
}

json TensorEntry(const TensorSpec& tensor, const char* kind, int64_t max_batch_size, const std::string& model) {
  json dims = json::array();
  for (int64_t d : ServedDims(tensor, kind, max_batch_size, model)) dims.push_back(d);
  return json{{"name", tensor.name},
              {"data_type", ConfigTypeName(TritonTypeOrFail(tensor, kind, model))},
              {"dims", dims}};
}

const TensorSpec* FindTensor(const std::vector<TensorSpec>& tensors, const std::string& name) {
  for (const TensorSpec& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string NameList(const std::vector<TensorSpec>& tensors) {
  std::string names;
  for (const TensorSpec& t : tensors) names += (names.empty() ? "'" : ", '") + t.name + "'";
  return names.empty() ? "none" : names;
}

// One configuration entry ("input" or "output") against the library's tensor of its name.
ServedTensor CheckEntry(const json& entry, const std::vector<TensorSpec>& tensors, const char* kind,
                        int64_t max_batch_size, const std::string& model) {
  Check(entry.contains("name") && entry["name"].is_string(), "model '", model, "': an ", kind,
        " of the configuration has no name");
  std::string name = entry["name"].get<std::string>();
  std::string where = runtime::StrCat("model '", model, "': ", kind, " '", name, "'");
  const TensorSpec* tensor = FindTensor(tensors, name);
  Check(tensor != nullptr, where, " is not an ", kind, " of the library (its ", kind, "s: ", NameList(tensors), ")");

  ServedTensor served;
  served.library = *tensor;
  served.position = static_cast<int>(tensor - tensors.data());
  std::string type_name = entry.contains("data_type") ? entry["data_type"].get<std::string>() : "TYPE_INVALID";
  Check(type_name != "TYPE_STRING", where,
        ": BYTES (TYPE_STRING) tensors are not supported by the kiln backend (kiln computes on numeric tensors)");
  served.type = TritonTypeOrFail(*tensor, kind, model);
  Check(TypeFromConfigName(type_name) == served.type, where, ": data_type ", type_name,
        " does not match the library's ", runtime::DTypeToString(tensor->dtype), " (",
        ConfigTypeName(served.type), ")");
  Check(!entry.contains("reshape") || entry["reshape"].is_null(), where,
        ": reshape is not supported by the kiln backend; give the library's dims");
  Check(!entry.value("is_shape_tensor", false), where, ": shape tensors are not supported by the kiln backend");
  Check(!entry.value("optional", false), where, ": kiln needs every input, so none may be optional");

  served.dims = ServedDims(*tensor, kind, max_batch_size, model);
  std::vector<int64_t> written;
  if (entry.contains("dims")) {
    for (const json& d : entry["dims"]) written.push_back(JsonInt(d, where + " dims"));
  }
  bool fits = written.size() == served.dims.size();
  for (size_t i = 0; fits && i < written.size(); ++i) {
    fits = written[i] == served.dims[i] || (written[i] == -1);
    if (served.dims[i] == -1) fits = written[i] == -1;
  }
  Check(fits, where, ": dims ", ShapeToString(written), " do not fit the library's ",
        ShapeToString(served.dims), max_batch_size > 0 ? " (its shape without the leading batch dimension)" : "",
        "; -1 may stand for any dimension");
  return served;
}

bool ParseBool(const std::string& text, bool* value) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "true" || lower == "1" || lower == "yes" || lower == "on") return *value = true, true;
  if (lower == "false" || lower == "0" || lower == "no" || lower == "off") return *value = false, true;
  return false;
}

// parameters { key: "num_threads" value: { string_value: "2" } } and "warmup".
void ReadParameters(const json& config, ServingConfig& serving) {
  if (!config.contains("parameters") || !config["parameters"].is_object()) return;
  for (const auto& [key, value] : config["parameters"].items()) {
    std::string where = runtime::StrCat("model '", serving.model_name, "': parameter '", key, "'");
    std::string text = value.is_object() && value.contains("string_value") && value["string_value"].is_string()
                           ? value["string_value"].get<std::string>()
                           : std::string();
    if (key == "num_threads") {
      int64_t n = -1;
      try {
        n = JsonInt(json(text), where);
      } catch (const runtime::Error&) {
      }
      Check(n >= 0 && n <= 1024, where, ": '", text, "' is not a thread count (an integer from 0 to 1024; 0: the default)");
      serving.num_threads = static_cast<int>(n);
    } else if (key == "warmup") {
      Check(ParseBool(text, &serving.warmup), where, ": '", text, "' is not true or false");
    } else {
      serving.warnings.push_back(where + " is not one of the kiln backend's parameters (num_threads, warmup): ignored");
    }
  }
}

}  // namespace

int DefaultThreadCount(int cores, int instances) { return std::max(1, cores / std::max(1, instances)); }

std::string LibraryFileName(const json& config) {
  if (config.contains("default_model_filename") && config["default_model_filename"].is_string()) {
    std::string name = config["default_model_filename"].get<std::string>();
    if (!name.empty()) return name;
  }
  return "model.so";
}

bool AutoCompleteConfig(json& config, const LibraryTensors& library) {
  std::string model = ModelName(config);
  bool changed = false;
  // A library with a batch dimension over one row per sample batches up to its largest batch.
  auto one_row_per_sample = [](const std::vector<TensorSpec>& tensors) {
    return std::all_of(tensors.begin(), tensors.end(),
                       [](const TensorSpec& t) { return t.batched && !t.shape.empty() && t.shape[0] == 1; });
  };
  // Triton writes max_batch_size 0 when the file leaves it out (as Triton's ONNX Runtime backend
  // does, 0 is completed), and only a configuration that lists no tensors is completed: written
  // dims keep their meaning.
  auto listed = [&](const char* field) { return config.contains(field) && config[field].is_array() && !config[field].empty(); };
  if (MaxBatchSize(config) == 0 && !listed("input") && !listed("output") && library.batch_max > 0 &&
      one_row_per_sample(library.inputs) && one_row_per_sample(library.outputs)) {
    config["max_batch_size"] = library.batch_max;
    changed = true;
  }
  int64_t max_batch_size = MaxBatchSize(config);
  auto complete = [&](const char* field, const std::vector<TensorSpec>& tensors, const char* kind) {
    if (config.contains(field) && config[field].is_array() && !config[field].empty()) return;
    json entries = json::array();
    for (const TensorSpec& tensor : tensors) entries.push_back(TensorEntry(tensor, kind, max_batch_size, model));
    config[field] = entries;
    changed = true;
  };
  complete("input", library.inputs, "input");
  complete("output", library.outputs, "output");
  return changed;
}

ServingConfig CheckConfig(const json& config, const LibraryTensors& library, int cores) {
  ServingConfig serving;
  serving.model_name = ModelName(config);
  const std::string& model = serving.model_name;
  serving.max_batch_size = MaxBatchSize(config);

  auto entry_where = [&](const char* kind, size_t index, const json& entry) {
    std::string where = runtime::StrCat("model '", model, "': ", kind, " ", index, " of the configuration");
    if (entry.is_object() && entry.contains("name") && entry["name"].is_string()) {
      where += " ('" + entry["name"].get<std::string>() + "')";
    }
    return where;
  };
  if (config.contains("input")) {
    Check(config["input"].is_array(), "model '", model, "': input is not a list");
    for (size_t n = 0; n < config["input"].size(); ++n) {
      const json& entry = config["input"][n];
      serving.inputs.push_back(ReadingEntry(entry_where("input", n, entry), [&] {
        return CheckEntry(entry, library.inputs, "input", serving.max_batch_size, model);
      }));
    }
  }
  for (const TensorSpec& tensor : library.inputs) {
    bool listed = std::any_of(serving.inputs.begin(), serving.inputs.end(),
                              [&](const ServedTensor& s) { return s.library.name == tensor.name; });
    Check(listed, "model '", model, "': the library's input '", tensor.name,
          "' is not in the configuration (kiln needs every input)");
  }
  std::sort(serving.inputs.begin(), serving.inputs.end(),
            [](const ServedTensor& a, const ServedTensor& b) { return a.position < b.position; });
  if (config.contains("output")) {
    Check(config["output"].is_array(), "model '", model, "': output is not a list");
    for (size_t n = 0; n < config["output"].size(); ++n) {
      const json& entry = config["output"][n];
      serving.outputs.push_back(ReadingEntry(entry_where("output", n, entry), [&] {
        return CheckEntry(entry, library.outputs, "output", serving.max_batch_size, model);
      }));
    }
  }
  Check(!serving.outputs.empty(), "model '", model, "': the configuration lists no output");
  if (library.batch_max > 0) {
    // A request's rows (or one row without batching) must reach the library's smallest batch.
    Check(serving.max_batch_size >= library.batch_min || (serving.max_batch_size == 0 && library.batch_min == 1),
          "model '", model, "': the library runs batches of ", library.batch_min, " to ", library.batch_max,
          " rows, and with max_batch_size ", serving.max_batch_size, " no request could reach ", library.batch_min);
  }
  if (serving.max_batch_size > 0 && library.batch_max > 0) {
    // Rows run as batches of the library: every served tensor must hold its samples.
    for (const std::vector<ServedTensor>* tensors : {&serving.inputs, &serving.outputs}) {
      for (const ServedTensor& t : *tensors) {
        Check(t.library.batched, "model '", model, "': the library's batch dimension does not reach '", t.library.name,
              "', so its rows cannot run as one batch; set max_batch_size: 0");
      }
    }
    serving.run_rows_min = library.batch_min;
    serving.run_rows_max = library.batch_max;
  }

  serving.instance_count = 0;
  if (config.contains("instance_group")) {
    Check(config["instance_group"].is_array(), "model '", model, "': instance_group is not a list");
    for (size_t n = 0; n < config["instance_group"].size(); ++n) {
      std::string where = runtime::StrCat("model '", model, "': instance_group ", n);
      ReadingEntry(where, [&] {
        const json& group = config["instance_group"][n];
        std::string kind = group.value("kind", std::string("KIND_CPU"));
        Check(kind == "KIND_CPU" || kind == "KIND_AUTO", "model '", model, "': instance_group kind ", kind,
              " is not supported: kiln runs on the CPU (use KIND_CPU)");
        int64_t count = group.contains("count") ? JsonInt(group["count"], where + " count") : 1;
        Check(count >= 0 && count <= 1024, where, ": count ", count, " is not from 0 to 1024");
        serving.instance_count += static_cast<int>(count);
      });
    }
  }
  serving.instance_count = std::max(serving.instance_count, 1);

  ReadingEntry("model '" + model + "': parameters", [&] { ReadParameters(config, serving); });
  serving.num_threads_set = serving.num_threads > 0;
  if (!serving.num_threads_set) serving.num_threads = DefaultThreadCount(cores, serving.instance_count);
  return serving;
}

}  // namespace kiln::triton
