// Tensors with external data (data_location EXTERNAL) are refused before ONNX's checker or anything
// else looks for their files: for a model from bytes (which has no folder) and from a file alike,
// whether the location escapes the model's folder ("..", an absolute path, a symlink) or not. The
// error names the tensor and where it is (initializer, node attribute, subgraph).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "frontend/onnx/onnx_import.h"
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

// From a file, the data beside the model, outside its folder and behind a symlink out of it are
// all refused the same way: kiln reads no file a model names.
TEST(OnnxExternalData, RefusedFromAFileInsideOrOutsideItsFolder) {
  fs::path dir = fs::temp_directory_path() / ("kiln_external_data_" + std::to_string(::getpid()));
  fs::create_directories(dir / "model");
  std::ofstream(dir / "model" / "w.bin", std::ios::binary).write("\0\0\0\0\0\0\0\0", 8);
  std::ofstream(dir / "outside.bin", std::ios::binary).write("\0\0\0\0\0\0\0\0", 8);
  fs::create_symlink(dir / "outside.bin", dir / "model" / "link.bin");
  for (const std::string& location : std::vector<std::string>{"w.bin", "../outside.bin", "link.bin", (dir / "outside.bin").string()}) {
    fs::path path = dir / "model" / "m.onnx";
    std::ofstream(path, std::ios::binary) << ModelWithExternalInitializer(location).SerializeAsString();
    try {
      ImportOnnxFile(path.string());
      ADD_FAILURE() << location << " was imported";
    } catch (const runtime::Error& e) {
      std::string message = e.what();
      EXPECT_NE(message.find(path.string() + ": initializer 'w': keeps its data in an external file ('" + location),
                std::string::npos)
          << message;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln::frontend
