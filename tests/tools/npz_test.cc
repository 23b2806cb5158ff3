// The command line's .npz reader (tools/npz.cc): arrays written by WriteNpz read back the same,
// and the inputs fuzz_npz once found crashing it (fuzz/regressions/npz/) are rejected with Error.
#include "tools/npz.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include <unistd.h>

#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/params.h"
#include "tests/fuzz_regression_inputs.h"

namespace kiln::tools {
namespace {

namespace fs = std::filesystem;

TEST(Npz, WrittenArraysReadBack) {
  runtime::NDArray a = runtime::NDArray::Empty({2, 3}, DLDataType{kDLFloat, 32, 1});
  for (int i = 0; i < 6; ++i) static_cast<float*>(a.data())[i] = static_cast<float>(i) - 2.5f;
  runtime::NDArray b = runtime::NDArray::Empty({}, DLDataType{kDLInt, 64, 1});
  *static_cast<int64_t*>(b.data()) = -7;
  fs::path path = fs::temp_directory_path() / ("kiln_npz_test_" + std::to_string(::getpid()) + ".npz");
  WriteNpz(path.string(), {{"a", a}, {"b", b}});
  NamedArrayList arrays = ReadNpz(path.string());
  fs::remove(path);
  ASSERT_EQ(arrays.size(), 2u);
  EXPECT_EQ(arrays[0].first, "a");
  EXPECT_EQ(arrays[0].second.shape(), a.shape());
  EXPECT_EQ(std::memcmp(arrays[0].second.data(), a.data(), a.NumBytes()), 0);
  EXPECT_EQ(arrays[1].first, "b");
  EXPECT_EQ(arrays[1].second.shape(), std::vector<int64_t>{});
  EXPECT_EQ(*static_cast<int64_t*>(arrays[1].second.data()), -7);
}

// numpy has no bfloat16 or float8: such arrays are written as their bits, unsigned integers of
// their width, and read back as those.
TEST(Npz, NarrowFloatsAreWrittenAsTheirBits) {
  runtime::NDArray bf16 = runtime::NDArray::Empty({2}, DLDataType{kDLBfloat, 16, 1});
  uint16_t halves[] = {0x3F80, 0xC000};  // 1, -2
  std::memcpy(bf16.data(), halves, sizeof(halves));
  runtime::NDArray f8 = runtime::NDArray::Empty({3}, DLDataType{runtime::kDLFloat8E5M2, 8, 1});
  uint8_t bytes[] = {0x3C, 0x7C, 0x80};
  std::memcpy(f8.data(), bytes, sizeof(bytes));
  fs::path path = fs::temp_directory_path() / ("kiln_npz_narrow_" + std::to_string(::getpid()) + ".npz");
  WriteNpz(path.string(), {{"bf16", bf16}, {"f8", f8}});
  NamedArrayList arrays = ReadNpz(path.string());
  fs::remove(path);
  ASSERT_EQ(arrays.size(), 2u);
  EXPECT_EQ(arrays[0].second.dtype(), (DLDataType{kDLUInt, 16, 1}));
  EXPECT_EQ(std::memcmp(arrays[0].second.data(), halves, sizeof(halves)), 0);
  EXPECT_EQ(arrays[1].second.dtype(), (DLDataType{kDLUInt, 8, 1}));
  EXPECT_EQ(std::memcmp(arrays[1].second.data(), bytes, sizeof(bytes)), 0);
}

TEST(Npz, FuzzRegressionsAreRejectedWithError) {
  std::vector<std::string> files = test::FuzzRegressionInputs("npz");
  EXPECT_FALSE(files.empty());
  for (const std::string& file : files) EXPECT_THROW(ParseNpz(runtime::ReadFile(file), file), runtime::Error) << file;
}

}  // namespace
}  // namespace kiln::tools
