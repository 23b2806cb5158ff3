// Blobs written as an ELF object (backend/blob_object.h), linked by the system compiler into a
// library and read back through the dynamic loader.
#include "backend/blob_object.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "runtime/error.h"

namespace kiln::backend {
namespace {

namespace fs = std::filesystem;

class BlobObjectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("kiln_blob_object_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(BlobObjectTest, LinkedBlobsAreSymbolsOfTheirBytes) {
  // Code that reads the hidden blob, compiled by the compiler whose object is the model.
  std::ofstream(Path("code.cc")) << "extern \"C\" char hidden_blob[];\n"
                                    "extern \"C\" __attribute__((visibility(\"default\"))) const char* Hidden() {"
                                    " return hidden_blob; }\n";
  ASSERT_EQ(std::system(("c++ -fPIC -c " + Path("code.cc") + " -o " + Path("code.o")).c_str()), 0);
  std::string exported = "abc", hidden(1000, '\0');
  for (size_t i = 0; i < hidden.size(); ++i) hidden[i] = static_cast<char>(i * 7);
  // The hidden blob in pieces: its first 100 bytes, zeros, then bytes 600 on.
  BlobBytes pieces{hidden.size(), {{0, std::string_view(hidden).substr(0, 100)}, {600, std::string_view(hidden).substr(600)}}};
  WriteBlobObject(Path("blobs.o"), {{"exported_blob", BlobBytes::Of(exported), false}, {"hidden_blob", pieces, true}},
                  Path("code.o"));
  std::fill(hidden.begin() + 100, hidden.begin() + 600, '\0');
  ASSERT_EQ(std::system(("c++ -shared -Wl,--no-undefined -o " + Path("lib.so") + " " + Path("code.o") + " " +
                         Path("blobs.o")).c_str()),
            0);
  void* lib = dlopen(Path("lib.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  const char* exported_at = static_cast<const char*>(dlsym(lib, "exported_blob"));
  ASSERT_NE(exported_at, nullptr);
  EXPECT_EQ(std::string(exported_at, exported.size()), exported);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(exported_at) % 64, 0u);
  EXPECT_EQ(dlsym(lib, "hidden_blob"), nullptr);  // not exported
  auto hidden_of = reinterpret_cast<const char* (*)()>(dlsym(lib, "Hidden"));
  ASSERT_NE(hidden_of, nullptr);
  EXPECT_EQ(std::string(hidden_of(), hidden.size()), hidden);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(hidden_of()) % 64, 0u);
  dlclose(lib);
}

TEST_F(BlobObjectTest, ModelThatIsNotAnElfObjectIsAnError) {
  std::ofstream(Path("text.o")) << "not an object";
  std::string bytes = "x";
  try {
    WriteBlobObject(Path("blobs.o"), {{"blob", BlobBytes::Of(bytes), false}}, Path("text.o"));
    FAIL() << "wrote an object for a model that is not one";
  } catch (const runtime::Error& e) {
    EXPECT_NE(std::string(e.what()).find("64-bit little-endian ELF"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::backend
