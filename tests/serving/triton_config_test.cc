// The Triton backend's model configuration against a library (serving/triton/model_config.h), and
// a library loaded for Triton with executors that share its weights (library.h). No server: the
// configuration is Triton's JSON, as TRITONBACKEND_ModelConfig hands it over (int64 as strings).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "runtime/error.h"
#include "serving/triton/library.h"
#include "serving/triton/model_config.h"

namespace kiln::triton {
namespace {

using nlohmann::json;

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kI64{kDLInt, 64, 1};

// x: float32 [1, 16], ids: int64 [1, 4] -> output_0: float32 [1, 8], output_1: float32 [1, 1].
LibraryTensors BatchOneLibrary() {
  return {{{"x", {1, 16}, kF32, -1}, {"ids", {1, 4}, kI64, -1}},
          {{"output_0", {1, 8}, kF32, -1}, {"output_1", {1, 1}, kF32, -1}}};
}

std::string ErrorOf(const json& config, const LibraryTensors& library) {
  try {
    CheckConfig(config, library, 2);
  } catch (const runtime::Error& e) {
    return e.what();
  }
  return "no error";
}

json Completed(json config, const LibraryTensors& library) {
  AutoCompleteConfig(config, library);
  return config;
}

TEST(TritonConfig, OneLineConfigIsCompletedFromTheLibrary) {
  json config = {{"name", "m"}, {"backend", "kiln"}};
  EXPECT_TRUE(AutoCompleteConfig(config, BatchOneLibrary()));
  EXPECT_EQ(config["input"], json::parse(R"([{"name": "x", "data_type": "TYPE_FP32", "dims": [1, 16]},
                                             {"name": "ids", "data_type": "TYPE_INT64", "dims": [1, 4]}])"));
  EXPECT_EQ(config["output"][1], json::parse(R"({"name": "output_1", "data_type": "TYPE_FP32", "dims": [1, 1]})"));
  EXPECT_FALSE(AutoCompleteConfig(config, BatchOneLibrary()));  // complete already

  ServingConfig serving = CheckConfig(config, BatchOneLibrary(), 2);
  EXPECT_EQ(serving.max_batch_size, 0);
  ASSERT_EQ(serving.inputs.size(), 2u);
  EXPECT_EQ(serving.inputs[1].type, TRITONSERVER_TYPE_INT64);
  EXPECT_EQ(serving.outputs[1].position, 1);
  EXPECT_EQ(serving.num_threads, 2);
  EXPECT_FALSE(serving.warmup);
}

TEST(TritonConfig, BatchingTakesTheLeadingOneOff) {
  json config = Completed({{"name", "m"}, {"max_batch_size", "8"}}, BatchOneLibrary());
  EXPECT_EQ(config["input"][0]["dims"], json::parse("[16]"));
  EXPECT_EQ(config["output"][0]["dims"], json::parse("[8]"));
  ServingConfig serving = CheckConfig(config, BatchOneLibrary(), 2);
  EXPECT_EQ(serving.max_batch_size, 8);
  EXPECT_EQ(serving.inputs[0].dims, (std::vector<int64_t>{16}));
}

TEST(TritonConfig, BatchingALibraryWithAnotherLeadingDimensionIsAnError) {
  LibraryTensors wide = {{{"x", {4, 16}, kF32, -1}}, {{"output_0", {4, 8}, kF32, -1}}};
  json config = {{"name", "wide"}, {"max_batch_size", 4}};
  try {
    AutoCompleteConfig(config, wide);
    FAIL() << "no error";
  } catch (const runtime::Error& e) {
    EXPECT_STREQ(e.what(),
                 "model 'wide': max_batch_size 4 needs every input and output of the library to have a leading "
                 "dimension of 1 (one row per sample), but input 'x' has shape [4, 16]; set max_batch_size: 0, or "
                 "compile the library with a batch of 1 or a batch dimension (--dims)");
  }
  // Data-dependent extents cannot be stacked row by row either.
  LibraryTensors dynamic = {{{"x", {1, 16}, kF32, -1}}, {{"output_0", {1, 100}, kF32, 1}}};
  json unbatched = Completed({{"name", "d"}}, dynamic);
  EXPECT_EQ(unbatched["output"][0]["dims"], json::parse("[1, -1]"));
  json batched = {{"name", "d"}, {"max_batch_size", 2}};
  try {
    AutoCompleteConfig(batched, dynamic);
    FAIL() << "no error";
  } catch (const runtime::Error& e) {
    EXPECT_NE(std::string(e.what()).find("output 'output_0' has an extent the data decides"), std::string::npos)
        << e.what();
  }
}

// BatchOneLibrary compiled with a batch dimension of 2 to 6 samples (kiln compile --dims N=2..6).
LibraryTensors BatchDimensionLibrary() {
  LibraryTensors library = BatchOneLibrary();
  for (auto* tensors : {&library.inputs, &library.outputs}) {
    for (TensorSpec& t : *tensors) t.batched = true;
  }
  library.batch_min = 2;
  library.batch_max = 6;
  return library;
}

TEST(TritonConfig, ALibraryWithABatchDimensionBatchesUpToItsLargest) {
  json config = Completed({{"name", "m"}}, BatchDimensionLibrary());
  EXPECT_EQ(config["max_batch_size"], 6);
  EXPECT_EQ(config["input"][0]["dims"], json::parse("[16]"));
  ServingConfig serving = CheckConfig(config, BatchDimensionLibrary(), 2);
  EXPECT_EQ(serving.max_batch_size, 6);
  EXPECT_EQ(serving.run_rows_min, 2);
  EXPECT_EQ(serving.run_rows_max, 6);
  // A written max_batch_size is kept (rows past the library's largest batch run in several runs);
  // 0 serves one sample per request.
  ServingConfig larger = CheckConfig(Completed({{"name", "m"}, {"max_batch_size", "16"}}, BatchDimensionLibrary()),
                                     BatchDimensionLibrary(), 2);
  EXPECT_EQ(larger.max_batch_size, 16);
  EXPECT_EQ(larger.run_rows_max, 6);
  // Triton's JSON has max_batch_size 0 when the file leaves it out: completed as well. Written
  // tensors keep a max_batch_size of 0: one sample per request.
  EXPECT_EQ(Completed({{"name", "m"}, {"max_batch_size", "0"}}, BatchDimensionLibrary())["max_batch_size"], 6);
  LibraryTensors from_one = BatchDimensionLibrary();
  from_one.batch_min = 1;
  json written = Completed({{"name", "m"}}, BatchOneLibrary());
  EXPECT_FALSE(Completed(written, from_one).contains("max_batch_size"));
  EXPECT_EQ(CheckConfig(written, from_one, 2).run_rows_max, 1);
  // A library of fixed shapes gets no max_batch_size and runs a row at a time.
  json fixed = Completed({{"name", "m"}}, BatchOneLibrary());
  EXPECT_FALSE(fixed.contains("max_batch_size"));
  EXPECT_EQ(CheckConfig(Completed({{"name", "m"}, {"max_batch_size", 4}}, BatchOneLibrary()), BatchOneLibrary(), 2)
                .run_rows_max,
            1);
}

TEST(TritonConfig, AConfigurationNoRequestOfWhichTheLibraryRunsIsAnError) {
  // The library takes 2 to 6 rows: one row per request, or at most one, never reaches 2.
  json written = Completed({{"name", "m"}}, BatchOneLibrary());  // tensors listed: max_batch_size stays 0
  EXPECT_EQ(ErrorOf(written, BatchDimensionLibrary()),
            "model 'm': the library runs batches of 2 to 6 rows, and with max_batch_size 0 no request could reach 2");
  EXPECT_EQ(ErrorOf(Completed({{"name", "m"}, {"max_batch_size", 1}}, BatchDimensionLibrary()), BatchDimensionLibrary()),
            "model 'm': the library runs batches of 2 to 6 rows, and with max_batch_size 1 no request could reach 2");
}

TEST(TritonConfig, ATensorTheBatchDoesNotReachCannotBeBatched) {
  LibraryTensors library = BatchDimensionLibrary();
  library.outputs[1].batched = false;  // [1, 1] whatever the batch
  EXPECT_FALSE(Completed({{"name", "m"}}, library).contains("max_batch_size"));  // not every tensor holds the batch
  EXPECT_EQ(ErrorOf(Completed({{"name", "m"}, {"max_batch_size", 4}}, library), library),
            "model 'm': the library's batch dimension does not reach 'output_1', so its rows cannot run as one batch; "
            "set max_batch_size: 0");
}

TEST(TritonConfig, WrittenEntriesAreCheckedAgainstTheLibrary) {
  json good = json::parse(R"({"name": "m", "input": [{"name": "ids", "data_type": "TYPE_INT64", "dims": ["1", "-1"]},
                                                     {"name": "x", "data_type": "TYPE_FP32", "dims": ["1", "16"]}],
                              "output": [{"name": "output_1", "data_type": "TYPE_FP32", "dims": ["-1", "1"]}]})");
  ServingConfig serving = CheckConfig(good, BatchOneLibrary(), 2);
  EXPECT_EQ(serving.inputs[0].library.name, "x");  // in the library's order
  EXPECT_EQ(serving.outputs.size(), 1u);

  auto with = [&](const char* pointer, json value) {
    json changed = good;
    changed[json::json_pointer(pointer)] = value;
    return ErrorOf(changed, BatchOneLibrary());
  };
  EXPECT_EQ(with("/input/1/data_type", "TYPE_FP64"),
            "model 'm': input 'x': data_type TYPE_FP64 does not match the library's float32 (TYPE_FP32)");
  EXPECT_EQ(with("/input/1/dims/1", "15"),
            "model 'm': input 'x': dims [1, 15] do not fit the library's [1, 16]; -1 may stand for any dimension");
  EXPECT_EQ(with("/input/1/name", "y"), "model 'm': input 'y' is not an input of the library (its inputs: 'x', 'ids')");
  EXPECT_EQ(with("/output/0/name", "y"),
            "model 'm': output 'y' is not an output of the library (its outputs: 'output_0', 'output_1')");
  EXPECT_NE(with("/input/1/data_type", "TYPE_STRING").find("BYTES (TYPE_STRING) tensors are not supported"),
            std::string::npos);
  EXPECT_NE(with("/input/1/reshape", json{{"shape", {16}}}).find("reshape is not supported"), std::string::npos);
  // Fields of the wrong JSON type name the entry instead of leaking nlohmann's exception.
  EXPECT_EQ(with("/input/1/data_type", 11),
            "model 'm': input 1 of the configuration ('x'): a field has the wrong JSON type "
            "([json.exception.type_error.302] type must be string, but is number)");
  EXPECT_NE(with("/output/0/optional", "yes").find("model 'm': output 0 of the configuration ('output_1'): a field "
                                                   "has the wrong JSON type"),
            std::string::npos);
  EXPECT_EQ(with("/input/0", "ids"), "model 'm': an input of the configuration has no name");
  EXPECT_EQ(with("/input", json{{"name", "x"}}), "model 'm': input is not a list");

  json missing = good;
  missing["input"].erase(0);
  EXPECT_EQ(ErrorOf(missing, BatchOneLibrary()),
            "model 'm': the library's input 'ids' is not in the configuration (kiln needs every input)");
}

TEST(TritonConfig, InstancesThreadsAndParameters) {
  json config = Completed({{"name", "m"}}, BatchOneLibrary());
  config["instance_group"] = json::parse(R"([{"kind": "KIND_CPU", "count": 2}, {"kind": "KIND_CPU", "count": "1"}])");
  EXPECT_EQ(CheckConfig(config, BatchOneLibrary(), 6).num_threads, 2);  // 6 cores over 3 instances
  EXPECT_EQ(CheckConfig(config, BatchOneLibrary(), 2).num_threads, 1);  // never below 1
  EXPECT_EQ(CheckConfig(config, BatchOneLibrary(), 2).instance_count, 3);
  EXPECT_FALSE(CheckConfig(config, BatchOneLibrary(), 2).num_threads_set);  // follows the live instances
  // The rule each instance applies before a run with the count of live instances.
  EXPECT_EQ(DefaultThreadCount(8, 1), 8);
  EXPECT_EQ(DefaultThreadCount(8, 4), 2);
  EXPECT_EQ(DefaultThreadCount(8, 3), 2);
  EXPECT_EQ(DefaultThreadCount(2, 4), 1);
  EXPECT_EQ(DefaultThreadCount(4, 0), 4);  // between instances
  EXPECT_NE(ErrorOf([&] {
              json kinds = config;
              kinds["instance_group"][1]["kind"] = 2;
              return kinds;
            }(), BatchOneLibrary()).find("model 'm': instance_group 1: a field has the wrong JSON type"),
            std::string::npos);

  config["parameters"] = json::parse(R"({"num_threads": {"string_value": "3"}, "warmup": {"string_value": "TRUE"},
                                         "intra_op_thread_count": {"string_value": "1"}})");
  ServingConfig serving = CheckConfig(config, BatchOneLibrary(), 2);
  EXPECT_EQ(serving.num_threads, 3);
  EXPECT_TRUE(serving.num_threads_set);
  EXPECT_TRUE(serving.warmup);
  ASSERT_EQ(serving.warnings.size(), 1u);
  EXPECT_NE(serving.warnings[0].find("'intra_op_thread_count' is not one of the kiln backend's parameters"),
            std::string::npos);

  config["parameters"]["num_threads"]["string_value"] = "two";
  EXPECT_EQ(ErrorOf(config, BatchOneLibrary()),
            "model 'm': parameter 'num_threads': 'two' is not a thread count (an integer from 0 to 1024; 0: the default)");
  config["parameters"].erase("num_threads");
  config["parameters"]["warmup"]["string_value"] = "maybe";
  EXPECT_EQ(ErrorOf(config, BatchOneLibrary()), "model 'm': parameter 'warmup': 'maybe' is not true or false");
  config["parameters"].erase("warmup");
  config["instance_group"][0]["kind"] = "KIND_GPU";
  EXPECT_EQ(ErrorOf(config, BatchOneLibrary()),
            "model 'm': instance_group kind KIND_GPU is not supported: kiln runs on the CPU (use KIND_CPU)");
}

TEST(TritonConfig, LibraryFileName) {
  EXPECT_EQ(LibraryFileName(json{{"name", "m"}}), "model.so");
  EXPECT_EQ(LibraryFileName(json{{"default_model_filename", ""}}), "model.so");
  EXPECT_EQ(LibraryFileName(json{{"default_model_filename", "resnet.so"}}), "resnet.so");
}

// The test model library (x: float32 [1, 8], one parameter p_w, two outputs [2, 4]).
TEST(TritonLibrary, ExecutorsShareTheLibrarysWeights) {
  std::string dir = KILN_TEST_LIB_DIR;
  auto library = ModelLibrary::Load(dir, "libkiln_test_model_good.so");
  ASSERT_EQ(library->tensors().inputs.size(), 1u);
  EXPECT_EQ(library->tensors().inputs[0].name, "x");
  EXPECT_EQ(library->tensors().inputs[0].shape, (std::vector<int64_t>{1, 8}));
  ASSERT_EQ(library->tensors().outputs.size(), 2u);
  EXPECT_EQ(library->tensors().outputs[1].name, "output_1");

  auto first = library->NewExecutor();
  auto second = library->NewExecutor();
  ASSERT_NE(first.get(), second.get());
  int w = first->InputIndex("p_w");
  EXPECT_EQ(first->GetInput(w).data(), second->GetInput(second->InputIndex("p_w")).data());
  // Both compute: the same input gives the same output.
  std::vector<float> x(8);
  for (int i = 0; i < 8; ++i) x[i] = static_cast<float>(i) - 3.5f;
  for (auto& executor : {first, second}) {
    runtime::NDArray input = runtime::NDArray::Empty({1, 8}, kF32);
    input.CopyFromBytes(x.data(), sizeof(float) * 8);
    executor->SetInput(executor->InputIndex("x"), *input.get());
    executor->Run();
  }
  std::vector<float> a(8), b(8);
  first->GetOutput(0).CopyToBytes(a.data(), sizeof(float) * 8);
  second->GetOutput(0).CopyToBytes(b.data(), sizeof(float) * 8);
  EXPECT_EQ(a, b);
}

// The tvmc layout: operators, graph JSON and params in three files, the weights shared likewise.
TEST(TritonLibrary, TvmcLayout) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("kiln-triton-tvmc-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(std::string(KILN_TEST_LIB_DIR) + "/libkiln_test_ops.so", dir / "mod.so");
  std::filesystem::copy_file(std::string(KILN_TEST_DATA_DIR) + "/test_model.json", dir / "mod.json");
  std::filesystem::copy_file(std::string(KILN_TEST_BIN_DIR) + "/test_model.params", dir / "mod.params");
  {
    auto library = ModelLibrary::Load(dir.string(), "model.so");
    EXPECT_EQ(library->path(), (dir / "mod.so").string());
    EXPECT_EQ(library->tensors().inputs.size(), 1u);
    auto first = library->NewExecutor();
    auto second = library->NewExecutor();
    EXPECT_EQ(first->GetInput(first->InputIndex("p_w")).data(), second->GetInput(second->InputIndex("p_w")).data());
  }
  std::filesystem::remove_all(dir);
}

TEST(TritonLibrary, MissingLibraryNamesWhatWasExpected) {
  try {
    ModelLibrary::Load("/nonexistent/1", "model.so");
    FAIL() << "no error";
  } catch (const runtime::Error& e) {
    EXPECT_STREQ(e.what(), "no model library in '/nonexistent/1': expected 'model.so' (a library written by `kiln "
                           "compile`) or the tvmc layout (mod.so, mod.json, mod.params)");
  }
}

}  // namespace
}  // namespace kiln::triton
