// Params files and NDArray records (tvm-formats.md A.2): SaveParams/WriteNDArray write exactly
// TVM's bytes (checked against files built by hand here from the documented layout), LoadParams
// gives back identical names, dtypes, shapes and bytes for every dtype (including 0-d and
// zero-size arrays), and every damaged file (bad magic, truncation at any byte, count mismatch,
// bad dtype or device, duplicate names, trailing bytes, ...) is rejected with a clear Error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <optional>

#include "runtime/error.h"
#include "runtime/params.h"

namespace kiln::runtime {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

constexpr uint64_t kListMagic = 0xF7E58D4F05049CB7ULL;   // kTVMNDArrayListMagic
constexpr uint64_t kArrayMagic = 0xDD5E40F096B4A13FULL;  // kTVMNDArrayMagic

// Little-endian bytes appended one at a time, independently of kiln's ByteWriter.
struct Bytes {
  std::string data;
  Bytes& Int(uint64_t value, int size) {
    for (int i = 0; i < size; ++i) data.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
    return *this;
  }
  Bytes& U64(uint64_t v) { return Int(v, 8); }
  Bytes& I64(int64_t v) { return Int(static_cast<uint64_t>(v), 8); }
  Bytes& I32(int32_t v) { return Int(static_cast<uint32_t>(v), 4); }
  Bytes& Str(const std::string& s) { U64(s.size()); data += s; return *this; }
  Bytes& Raw(const std::string& s) { data += s; return *this; }
};

// One NDArray record as the fields of A.2; `size` and `ndim`, unless set, are the consistent values.
struct Record {
  uint8_t code = kDLFloat, bits = 32;
  uint16_t lanes = 1;
  std::vector<int64_t> shape;
  std::string data;
  int32_t device_type = kDLCPU;
  uint64_t magic = kArrayMagic;
  std::optional<int64_t> size{};
  std::optional<int32_t> ndim{};
};

std::string RecordBytes(const Record& r) {
  Bytes b;
  b.U64(r.magic).U64(0).I32(r.device_type).I32(0);
  b.I32(r.ndim.value_or(static_cast<int32_t>(r.shape.size())));
  b.Int(r.code, 1).Int(r.bits, 1).Int(r.lanes, 2);
  for (int64_t d : r.shape) b.I64(d);
  b.I64(r.size.value_or(static_cast<int64_t>(r.data.size())));
  return b.Raw(r.data).data;
}

std::string FileBytes(const std::vector<std::string>& names, const std::vector<Record>& records,
                      uint64_t magic = kListMagic) {
  Bytes b;
  b.U64(magic).U64(0).U64(names.size());
  for (const std::string& name : names) b.Str(name);
  b.U64(records.size());
  for (const Record& r : records) b.Raw(RecordBytes(r));
  return b.data;
}

// `count` bytes 0x10, 0x17, 0x1e, ... (a pattern that shows misplaced bytes).
std::string Pattern(size_t count, int seed = 0x10) {
  std::string s;
  for (size_t i = 0; i < count; ++i) s.push_back(static_cast<char>(seed + 7 * i));
  return s;
}

NDArray MakeArray(const std::vector<int64_t>& shape, const char* dtype, int seed = 0x10) {
  NDArray array = NDArray::Empty(shape, ParseDType(dtype));
  std::string bytes = Pattern(array.NumBytes(), seed);
  array.CopyFromBytes(bytes.data(), bytes.size());
  return array;
}

std::string DataOf(const NDArray& array) {
  std::string bytes(array.NumBytes(), '\0');
  array.CopyToBytes(bytes.data(), bytes.size());
  return bytes;
}

std::string LoadError(const std::string& file) {
  try {
    LoadParams(file);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string InfoError(const std::string& file) {
  try {
    LoadParamInfos(file);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A valid file of two float32 arrays, "w" [2, 2] and "b" [3], to damage.
Record W() { return Record{kDLFloat, 32, 1, {2, 2}, Pattern(16)}; }
Record B() { return Record{kDLFloat, 32, 1, {3}, Pattern(12, 0x40)}; }

TEST(Params, SaveMatchesTvmByteLayout) {
  NamedArrays params = {{"w", MakeArray({2, 2}, "float32")}, {"bias", MakeArray({3}, "int8", 0x40)}};
  std::string saved = SaveParams(params);
  std::string expected = FileBytes({"w", "bias"}, {W(), Record{kDLInt, 8, 1, {3}, Pattern(3, 0x40)}});
  EXPECT_EQ(saved, expected);
  // The magic numbers as they appear in TVM files.
  EXPECT_EQ(saved.substr(0, 8), std::string("\xB7\x9C\x04\x05\x4F\x8D\xE5\xF7", 8));
  EXPECT_EQ(saved.substr(8, 8), std::string(8, '\0'));
  size_t first_record = 8 + 8 + 8 + (8 + 1) + (8 + 4) + 8;
  EXPECT_EQ(saved.substr(first_record, 8), std::string("\x3F\xA1\xB4\x96\xF0\x40\x5E\xDD", 8));
  // DLDevice (1, 0), ndim 2, dtype (2, 32, 1), shape 2, 2, then 16 data bytes.
  EXPECT_EQ(saved.substr(first_record + 16, 12), std::string("\x01\0\0\0\0\0\0\0\x02\0\0\0", 12));
  EXPECT_EQ(saved.substr(first_record + 28, 4), std::string("\x02\x20\x01\x00", 4));
  EXPECT_EQ(saved.size(), expected.size());
}

TEST(Params, LoadsAHandBuiltFile) {
  Record scalar{kDLInt, 64, 1, {}, Pattern(8, 0x70)};
  NamedArrays params = LoadParams(FileBytes({"w", "b", "step"}, {W(), B(), scalar}));
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[0].first, "w");
  EXPECT_EQ(params[1].first, "b");
  EXPECT_EQ(params[2].first, "step");
  EXPECT_EQ(params[0].second.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(params[0].second.dtype(), (DLDataType{kDLFloat, 32, 1}));
  EXPECT_EQ(DataOf(params[0].second), Pattern(16));
  EXPECT_EQ(DataOf(params[1].second), Pattern(12, 0x40));
  EXPECT_EQ(params[2].second->ndim, 0);
  EXPECT_EQ(params[2].second.dtype(), (DLDataType{kDLInt, 64, 1}));
  EXPECT_EQ(DataOf(params[2].second), Pattern(8, 0x70));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(params[1].second.data()) % kAllocAlignment, 0u);
}

TEST(Params, RoundTripsEveryDtypeAndShape) {
  const char* dtypes[] = {"float32", "float16", "bfloat16", "float64", "int8", "uint8", "int16",
                          "uint16", "int32", "int64", "uint64", "uint1", "bool", "int4"};
  const std::vector<int64_t> shapes[] = {{}, {0}, {2, 0, 3}, {5}, {2, 3}, {1, 1, 1, 1, 3}};
  NamedArrays params;
  int seed = 1;
  for (const char* dtype : dtypes) {
    for (const auto& shape : shapes) {
      params.emplace_back(std::string(dtype) + "_" + std::to_string(params.size()), MakeArray(shape, dtype, seed++));
    }
  }
  std::string saved = SaveParams(params);
  NamedArrays loaded = LoadParams(saved);
  ASSERT_EQ(loaded.size(), params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string& name = params[i].first;
    EXPECT_EQ(loaded[i].first, name);
    EXPECT_EQ(loaded[i].second.dtype(), params[i].second.dtype()) << name;
    EXPECT_EQ(loaded[i].second.shape(), params[i].second.shape()) << name;
    EXPECT_EQ(DataOf(loaded[i].second), DataOf(params[i].second)) << name;
  }
  EXPECT_EQ(SaveParams(loaded), saved);

  std::vector<ParamInfo> infos = LoadParamInfos(saved);
  ASSERT_EQ(infos.size(), params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(infos[i].name, params[i].first);
    EXPECT_EQ(infos[i].shape, params[i].second.shape());
    EXPECT_EQ(infos[i].dtype, params[i].second.dtype());
  }
}

TEST(Params, DtypeFieldsAndSubByteSizesMatchTvm) {
  // Per element ceil(bits / 8) bytes: a bool or an int4 takes a whole byte.
  struct Case { const char* dtype; uint8_t code, bits; std::vector<int64_t> shape; size_t bytes; };
  const Case cases[] = {
      {"bool", kDLUInt, 1, {3}, 3},          {"uint1", kDLUInt, 1, {2, 2}, 4},
      {"int4", kDLInt, 4, {5}, 5},           {"float16", kDLFloat, 16, {3}, 6},
      {"bfloat16", kDLBfloat, 16, {2}, 4},   {"int8", kDLInt, 8, {}, 1},
      {"float64", kDLFloat, 64, {0, 4}, 0},
  };
  for (const Case& c : cases) {
    NDArray array = MakeArray(c.shape, c.dtype);
    EXPECT_EQ(SaveParams({{"a", array}}),
              FileBytes({"a"}, {Record{c.code, c.bits, 1, c.shape, Pattern(c.bytes)}})) << c.dtype;
  }
}

TEST(Params, EmptyFile) {
  std::string expected = Bytes().U64(kListMagic).U64(0).U64(0).U64(0).data;
  EXPECT_EQ(SaveParams({}), expected);
  EXPECT_TRUE(LoadParams(expected).empty());
  EXPECT_TRUE(LoadParamInfos(expected).empty());
}

TEST(Params, NDArrayRecordsStandAlone) {
  ByteWriter writer;
  WriteNDArray(writer, MakeArray({2, 2}, "float32"));
  WriteNDArray(writer, MakeArray({3}, "float32", 0x40));
  std::string bytes = writer.Take();
  EXPECT_EQ(bytes, RecordBytes(W()) + RecordBytes(B()));  // no list magic, no names

  ByteReader reader(bytes, "records");
  NDArray first = ReadNDArray(reader);
  EXPECT_EQ(reader.offset(), RecordBytes(W()).size());
  ArrayHeader second = ReadArrayHeader(reader);
  EXPECT_EQ(reader.remaining(), 0u);
  EXPECT_EQ(DataOf(first), Pattern(16));
  EXPECT_EQ(second.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(second.dtype, (DLDataType{kDLFloat, 32, 1}));
  EXPECT_EQ(std::string(second.data), Pattern(12, 0x40));
  EXPECT_EQ(second.data.data(), bytes.data() + bytes.size() - 12);  // a view, not a copy

  ByteReader empty("", "records");
  try {
    ReadNDArray(empty);
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("records: truncated: array magic needs 8 bytes but only 0 are left (at byte 0)"));
  }
}

TEST(Params, VectorDtypesHaveNoParamsForm) {
  // The format counts ceil(bits / 8) bytes per element, ignoring lanes, so a float32x4 array
  // cannot be written faithfully: saving refuses, and so does loading a record with lanes.
  try {
    SaveParams({{"v", MakeArray({2}, "float32x4")}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot save an array of vector dtype float32x4"));
  }
  EXPECT_THAT(LoadError(FileBytes({"v"}, {Record{kDLFloat, 32, 4, {2}, Pattern(8)}})),
              HasSubstr("array has an unknown dtype (code 2, bits 32, lanes 4)"));
  EXPECT_THAT(LoadError(FileBytes({"v"}, {Record{kDLFloat, 32, 4, {2}, Pattern(32)}})),
              HasSubstr("lanes 4"));
}

TEST(Params, RejectsBadListMagic) {
  std::string file = FileBytes({"w"}, {W()}, kListMagic ^ 1);
  EXPECT_EQ(LoadError(file), "params: bad magic: this is not a TVM params file (at byte 8)");
  EXPECT_THAT(InfoError(file), HasSubstr("bad magic: this is not a TVM params file"));
  EXPECT_THAT(LoadError(RecordBytes(W())), HasSubstr("bad magic"));  // a bare NDArray record
  EXPECT_THAT(LoadError("PK\x03\x04 a zip file"), HasSubstr("bad magic"));
  EXPECT_THAT(LoadError(""), HasSubstr("params: truncated: list magic needs 8 bytes but only 0 are left"));
}

TEST(Params, RejectsBadArrayMagic) {
  Record bad = B();
  bad.magic = kListMagic;
  EXPECT_THAT(LoadError(FileBytes({"w", "b"}, {W(), bad})),
              HasSubstr("bad array magic (not an NDArray record)"));
  EXPECT_THAT(LoadError(FileBytes({"w", "b"}, {W(), bad})), HasSubstr("in array 'b'"));
  EXPECT_THAT(InfoError(FileBytes({"w", "b"}, {bad, B()})), HasSubstr("bad array magic (not an NDArray record) (at byte"));
}

TEST(Params, RejectsNamesAndArraysOfDifferentCounts) {
  EXPECT_THAT(LoadError(FileBytes({"w", "b"}, {W()})), HasSubstr("holds 2 names but 1 arrays"));
  EXPECT_THAT(LoadError(FileBytes({"w"}, {W(), B()})), HasSubstr("holds 1 names but 2 arrays"));
  EXPECT_THAT(InfoError(FileBytes({}, {W()})), HasSubstr("holds 0 names but 1 arrays"));
}

TEST(Params, RejectsUnknownOrInvalidDtypes) {
  struct Case { uint8_t code, bits; uint16_t lanes; const char* message; };
  const Case cases[] = {
      {3, 64, 1, "unknown dtype (code 3, bits 64, lanes 1)"},    // opaque handle
      {5, 64, 1, "unknown dtype (code 5, bits 64, lanes 1)"},    // kDLComplex
      {200, 8, 1, "unknown dtype (code 200, bits 8, lanes 1)"},
      {kDLFloat, 0, 1, "unknown dtype (code 2, bits 0, lanes 1)"},
      {kDLFloat, 7, 1, "unknown dtype (code 2, bits 7, lanes 1)"},     // not a dtype ParseDType knows
      {kDLFloat, 8, 1, "unknown dtype (code 2, bits 8, lanes 1)"},
      {kDLBfloat, 32, 1, "unknown dtype (code 4, bits 32, lanes 1)"},
      {kDLInt, 0, 1, "unknown dtype (code 0, bits 0, lanes 1)"},
      {kDLInt, 8, 0, "unknown dtype (code 0, bits 8, lanes 0)"},
  };
  for (const Case& c : cases) {
    std::string file = FileBytes({"w", "x"}, {W(), Record{c.code, c.bits, c.lanes, {2}, Pattern(2 * ((c.bits + 7) / 8))}});
    EXPECT_THAT(LoadError(file), HasSubstr(c.message));
    EXPECT_THAT(LoadError(file), HasSubstr("in array 'x'"));
    EXPECT_THAT(InfoError(file), HasSubstr(c.message));
  }
}

TEST(Params, RejectsNonCpuArrays) {
  for (int32_t device : {0, 2, 4, 16, -1}) {
    Record r = W();
    r.device_type = device;
    EXPECT_THAT(LoadError(FileBytes({"w"}, {r})),
                HasSubstr("array is stored for device type " + std::to_string(device) + "; only CPU (1) arrays can be loaded"));
  }
}

TEST(Params, RejectsDuplicateNamesAndTrailingBytes) {
  EXPECT_THAT(LoadError(FileBytes({"w", "w"}, {W(), B()})), HasSubstr("name 'w' appears twice"));
  EXPECT_THAT(InfoError(FileBytes({"b", "w", "b"}, {B(), W(), B()})), HasSubstr("name 'b' appears twice"));
  std::string file = FileBytes({"w", "b"}, {W(), B()});
  EXPECT_THAT(LoadError(file + "x"), HasSubstr("1 bytes follow the last array"));
  EXPECT_THAT(LoadError(file + RecordBytes(B())), HasSubstr(std::to_string(RecordBytes(B()).size()) + " bytes follow the last array"));
  EXPECT_THAT(InfoError(file + std::string(8, '\0')), HasSubstr("8 bytes follow the last array"));
  EXPECT_EQ(LoadError(file), "(no error)");
}

TEST(Params, RejectsBadShapesAndSizes) {
  auto with = [](auto change) {
    Record r = W();
    change(r);
    return FileBytes({"w"}, {r});
  };
  EXPECT_THAT(LoadError(with([](Record& r) { r.ndim = -1; })), HasSubstr("array has -1 dimensions"));
  EXPECT_THAT(LoadError(with([](Record& r) { r.ndim = 65; r.shape.assign(65, 1); r.data = Pattern(4); })),
              HasSubstr("array has 65 dimensions"));
  EXPECT_THAT(LoadError(with([](Record& r) { r.shape = {2, -2}; })), HasSubstr("array has a negative dimension -2"));
  EXPECT_THAT(LoadError(with([](Record& r) { r.size = 15; r.data.pop_back(); })),
              HasSubstr("array data size 15 does not match dtype float32 and shape [2, 2] (16 bytes)"));
  EXPECT_THAT(LoadError(with([](Record& r) { r.size = 17; r.data += "x"; })), HasSubstr("array data size 17 does not match"));
  EXPECT_THAT(LoadError(with([](Record& r) { r.size = -16; })), HasSubstr("array data size -16 does not match"));
  EXPECT_THAT(LoadError(with([](Record& r) { r.shape = {int64_t{1} << 62, int64_t{1} << 62}; })),
              HasSubstr("array shape overflows"));
  // A size consistent with a huge shape, but the bytes are not there: rejected before any
  // allocation is attempted.
  EXPECT_THAT(LoadError(with([](Record& r) { r.shape = {int64_t{1} << 40}; r.size = int64_t{1} << 42; })),
              HasSubstr("truncated: array data needs 4398046511104 bytes"));
  // Counts that cannot fit in the bytes that are left.
  std::string huge_names = Bytes().U64(kListMagic).U64(0).U64(uint64_t{1} << 60).data;
  EXPECT_THAT(LoadError(huge_names), HasSubstr("names claims 1152921504606846976 elements"));
  std::string long_name = Bytes().U64(kListMagic).U64(0).U64(1).U64(uint64_t{1} << 40).Raw("w").data;
  EXPECT_THAT(LoadError(long_name), HasSubstr("names claims 1099511627776 elements, more than the 1 bytes left"));
}

TEST(Params, EveryTruncationIsAnError) {
  std::string file = FileBytes({"w", "b", "flag"}, {W(), B(), Record{kDLUInt, 1, 1, {2}, std::string("\x01\x00", 2)}});
  ASSERT_EQ(LoadError(file), "(no error)");
  for (size_t size = 0; size < file.size(); ++size) {
    std::string cut = file.substr(0, size);
    EXPECT_THAT(LoadError(cut), AnyOf(HasSubstr("truncated"), HasSubstr("claims"))) << size;
    EXPECT_THAT(LoadError(cut), HasSubstr("params: ")) << size;
    EXPECT_THAT(InfoError(cut), AnyOf(HasSubstr("truncated"), HasSubstr("claims"))) << size;
  }
}

TEST(Params, EveryDamagedByteIsLoadedOrRejected) {
  // Each byte changed in turn: the loader either gives consistent arrays or throws Error (any
  // other exception, or a crash under the sanitizers, fails).
  std::string file = FileBytes({"w", "b"}, {W(), B()});
  for (size_t i = 0; i < file.size(); ++i) {
    for (int delta : {1, 0x80, 0xff}) {
      std::string damaged = file;
      damaged[i] = static_cast<char>(damaged[i] ^ delta);
      try {
        for (const auto& [name, array] : LoadParams(damaged)) {
          EXPECT_EQ(DataOf(array).size(), array.NumBytes()) << i;
          EXPECT_EQ(array->device.device_type, kDLCPU) << i;
        }
      } catch (const Error& e) {
        EXPECT_THAT(e.what(), HasSubstr("params: ")) << i;
      }
    }
  }
}

TEST(Params, ReadFileReadsBinaryFiles) {
  std::string path = ::testing::TempDir() + "/params_test.params";
  std::string file = FileBytes({"w"}, {W()});
  std::ofstream(path, std::ios::binary) << file;
  EXPECT_EQ(ReadFile(path), file);  // including the NUL bytes
  EXPECT_EQ(DataOf(LoadParams(ReadFile(path))[0].second), Pattern(16));
  try {
    ReadFile("/nonexistent/dir/x.params");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot open '/nonexistent/dir/x.params'"));
  }
}

}  // namespace
}  // namespace kiln::runtime
