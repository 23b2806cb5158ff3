// Tensors with external data (data_location EXTERNAL): read from the model's folder when the model
// comes from a file, refused when it comes as bytes (no folder) or when the location escapes the
// folder ("..", an absolute path, a symlink), all before ONNX's checker looks for the files. The
// error names the tensor and where it is (initializer, node attribute, subgraph).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <tuple>

#include <unistd.h>

#include "frontend/onnx/onnx_import.h"
#include "ir/text.h"
#include "runtime/error.h"

namespace kiln::frontend {
namespace {

namespace fs = std::filesystem;

void AddValue(onnx::ValueInfoProto* value, const std::string& name) {
  value->set_name(name);
  auto* type = value->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::FLOAT);
  type->mutable_shape()->add_dim()->set_dim_value(2);
}

void MakeExternal(onnx::TensorProto* tensor, const std::string& location) {
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  tensor->add_dims(2);
  tensor->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* entry = tensor->add_external_data();
  entry->set_key("location");
  entry->set_value(location);
}

// y = x + w, with the initializer w's data in the file `location`.
onnx::ModelProto ModelWithExternalInitializer(const std::string& location) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(14);
  auto* graph = model.mutable_graph();
  graph->set_name("g");
  AddValue(graph->add_input(), "x");
  AddValue(graph->add_output(), "y");
  auto* node = graph->add_node();
  node->set_op_type("Add");
  node->set_name("add");
  node->add_input("x");
  node->add_input("w");
  node->add_output("y");
  auto* w = graph->add_initializer();
  w->set_name("w");
  MakeExternal(w, location);
  return model;
}

std::string ImportError(const std::string& bytes) {
  try {
    ImportOnnxBytes(bytes);
  } catch (const runtime::InternalError& e) {
    ADD_FAILURE() << "internal error: " << e.what();
  } catch (const runtime::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "the model was imported";
  return "";
}

TEST(OnnxExternalData, RefusedFromBytesWhereverItPoints) {
  for (const std::string location : {"../../etc/passwd", "/etc/passwd", "/etc/no-such-file", "weights.bin", ""}) {
    std::string message = ImportError(ModelWithExternalInitializer(location).SerializeAsString());
    EXPECT_NE(message.find("initializer 'w'"), std::string::npos) << message;
    EXPECT_NE(message.find("external file ('" + location + "')"), std::string::npos) << message;
    // Refused by kiln before ONNX's checker, which would test whether the file exists.
    EXPECT_EQ(message.find("checker"), std::string::npos) << message;
  }
}

TEST(OnnxExternalData, RefusedInConstantAttributesAndWithoutLocation) {
  onnx::ModelProto model = ModelWithExternalInitializer("w.bin");
  model.mutable_graph()->mutable_initializer(0)->set_data_location(onnx::TensorProto::DEFAULT);
  model.mutable_graph()->mutable_initializer(0)->clear_external_data();
  model.mutable_graph()->mutable_initializer(0)->add_float_data(1);
  model.mutable_graph()->mutable_initializer(0)->add_float_data(2);
  auto* node = model.mutable_graph()->add_node();
  node->set_op_type("Constant");
  node->set_name("k");
  node->add_output("unused");
  auto* value = node->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  MakeExternal(value->mutable_t(), "/etc/shadow");
  std::string message = ImportError(model.SerializeAsString());
  EXPECT_NE(message.find("node 'k' (Constant): attribute 'value': keeps its data in an external file ('/etc/shadow')"),
            std::string::npos)
      << message;

  value->mutable_t()->clear_external_data();  // EXTERNAL without a location
  message = ImportError(model.SerializeAsString());
  EXPECT_NE(message.find("external file (no location)"), std::string::npos) << message;
}

// From a file, data beside the model (whole files, and parts of one at an offset) loads; data
// outside its folder, at an absolute path or behind a symlink out of it is refused, and so are
// files shorter than the tensor and lengths that disagree with its shape.
TEST(OnnxExternalData, LoadedFromTheModelsFolderOnly) {
  fs::path dir = fs::temp_directory_path() / ("kiln_external_data_" + std::to_string(::getpid()));
  fs::create_directories(dir / "model" / "weights");
  const float values[4] = {1.5f, -2.25f, 7.0f, 0.125f};
  std::ofstream(dir / "model" / "weights" / "w.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(values), sizeof(values));
  std::ofstream(dir / "outside.bin", std::ios::binary).write("\0\0\0\0\0\0\0\0", 8);
  fs::create_symlink(dir / "outside.bin", dir / "model" / "link.bin");
  fs::path path = dir / "model" / "m.onnx";
  auto import = [&](const onnx::ModelProto& model) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << model.SerializeAsString();
    return ir::PrintFunction(ImportOnnxFile(path.string()));
  };
  // The whole file is 4 floats; w is [2]: its first two, or with offset 8 its last two.
  onnx::ModelProto model = ModelWithExternalInitializer("weights/w.bin");
  auto* entry = model.mutable_graph()->mutable_initializer(0)->add_external_data();
  entry->set_key("length");
  entry->set_value("8");
  EXPECT_NE(import(model).find("[1.5, -2.25]"), std::string::npos) << import(model);
  entry->set_key("offset");
  EXPECT_NE(import(model).find("[7, 0.125]"), std::string::npos) << import(model);

  std::vector<std::pair<std::string, std::string>> refused = {
      {"../outside.bin", "leaves the model's folder"},
      {"weights/../../outside.bin", "leaves the model's folder"},
      {"link.bin", "leads out of the model's folder (through a symbolic link)"},
      {(dir / "outside.bin").string(), "is an absolute path"},
      {"missing.bin", "cannot be opened"},
      {"weights", "is not a regular file"}};
  for (const auto& [location, why] : refused) {
    try {
      import(ModelWithExternalInitializer(location));
      ADD_FAILURE() << location << " was imported";
    } catch (const runtime::Error& e) {
      std::string message = e.what();
      EXPECT_NE(message.find(path.string() + ": initializer 'w': its external file '" + location + "' " + why),
                std::string::npos)
          << message;
    }
  }
  for (const auto& [key, value, why] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"offset", "12", "holds 16 bytes; the tensor needs 8 from offset 12"},
           {"length", "4", "its length 4 is not the 8 bytes of a [2] tensor"},
           {"offset", "-1", "its external data offset '-1' is not a non-negative integer"}}) {
    onnx::ModelProto bad = ModelWithExternalInitializer("weights/w.bin");
    auto* e = bad.mutable_graph()->mutable_initializer(0)->add_external_data();
    e->set_key(key);
    e->set_value(value);
    try {
      import(bad);
      ADD_FAILURE() << key << " " << value << " was imported";
    } catch (const runtime::Error& error) {
      EXPECT_NE(std::string(error.what()).find(why), std::string::npos) << error.what();
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln::frontend
