// Reading files whole: MappedFile (a regular file mapped, anything else read) and ReadFile.
#include "runtime/mapped_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "runtime/error.h"
#include "runtime/params.h"

namespace kiln::runtime {
namespace {

namespace fs = std::filesystem;

class FileReadingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("kiln_mapped_file_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(FileReadingTest, RegularFilesEmptyFilesAndPipesReadWhole) {
  std::string content(3 << 20, '\0');  // larger than any read buffer
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 31 % 251);
  std::string path = (dir_ / "data.bin").string();
  std::ofstream(path, std::ios::binary) << content;
  EXPECT_EQ(MappedFile(path).bytes(), content);
  EXPECT_EQ(ReadFile(path), content);

  std::string empty = (dir_ / "empty.bin").string();
  std::ofstream(empty, std::ios::binary).flush();
  EXPECT_EQ(MappedFile(empty).bytes(), "");
  EXPECT_EQ(ReadFile(empty), "");

  // A named pipe has no size: it is read to its end.
  std::string pipe = (dir_ / "pipe").string();
  ASSERT_EQ(mkfifo(pipe.c_str(), 0600), 0);
  for (int reader = 0; reader < 2; ++reader) {
    std::thread writer([&] { std::ofstream(pipe, std::ios::binary) << content.substr(0, 100000); });
    std::string read = reader == 0 ? std::string(MappedFile(pipe).bytes()) : ReadFile(pipe);
    writer.join();
    EXPECT_EQ(read, content.substr(0, 100000)) << reader;
  }
}

TEST_F(FileReadingTest, MissingFileIsAnErrorNamingIt) {
  std::string missing = (dir_ / "missing.onnx").string();
  try {
    MappedFile file(missing);
    FAIL() << "opened a missing file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open '" + missing + "'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::runtime
