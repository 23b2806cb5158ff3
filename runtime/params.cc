// Reading and writing NDArray records and params files.
#include "runtime/params.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "runtime/error.h"

namespace kiln::runtime {
namespace {

constexpr int32_t kMaxDims = 64;

}  // namespace

void WriteNDArray(ByteWriter& writer, const NDArray& array) {
  const DLTensor& t = *array.get();
  Check(t.dtype.lanes == 1, "cannot save an array of vector dtype ", DTypeToString(t.dtype),
        ": the params format has no lanes");
  writer.Write<uint64_t>(kNDArrayMagic);
  writer.Write<uint64_t>(0);
  writer.Write<int32_t>(kDLCPU);
  writer.Write<int32_t>(0);
  writer.Write<int32_t>(t.ndim);
  writer.Write<uint8_t>(t.dtype.code);
  writer.Write<uint8_t>(t.dtype.bits);
  writer.Write<uint16_t>(t.dtype.lanes);
  for (int i = 0; i < t.ndim; ++i) writer.Write<int64_t>(t.shape[i]);
  int64_t bytes = static_cast<int64_t>(array.NumBytes());
  writer.Write<int64_t>(bytes);
  writer.WriteBytes(std::string_view(static_cast<const char*>(array.data()), bytes));
}

ArrayHeader ReadArrayHeader(ByteReader& reader) {
  uint64_t magic = reader.Read<uint64_t>("array magic");
  if (magic != kNDArrayMagic) reader.FailAt("bad array magic (not an NDArray record)");
  reader.Read<uint64_t>("array reserved field");
  int32_t device_type = reader.Read<int32_t>("array device type");
  reader.Read<int32_t>("array device id");
  if (device_type != kDLCPU) {
    reader.FailAt(StrCat("array is stored for device type ", device_type,
                         "; only CPU (1) arrays can be loaded"));
  }
  int32_t ndim = reader.Read<int32_t>("array ndim");
  if (ndim < 0 || ndim > kMaxDims) reader.FailAt(StrCat("array has ", ndim, " dimensions"));
  ArrayHeader header;
  DLDataType& dtype = header.dtype;
  dtype.code = reader.Read<uint8_t>("array dtype code");
  dtype.bits = reader.Read<uint8_t>("array dtype bits");
  dtype.lanes = reader.Read<uint16_t>("array dtype lanes");
  bool known_code = dtype.code == kDLInt || dtype.code == kDLUInt || dtype.code == kDLFloat ||
                    dtype.code == kDLBfloat || IsFloat8(dtype);
  // The widths ParseDType accepts: no float7 or bfloat32 arrays that no graph could use.
  bool valid_bits = dtype.code == kDLFloat    ? dtype.bits == 16 || dtype.bits == 32 || dtype.bits == 64
                    : dtype.code == kDLBfloat ? dtype.bits == 16
                                              : dtype.bits != 0;
  if (!known_code || !valid_bits || dtype.lanes != 1) {
    reader.FailAt(StrCat("array has an unknown dtype (code ", int{dtype.code}, ", bits ",
                         int{dtype.bits}, ", lanes ", dtype.lanes, ")"));
  }
  header.shape.resize(ndim);
  for (int64_t& dim : header.shape) {
    dim = reader.Read<int64_t>("array shape");
    if (dim < 0) reader.FailAt(StrCat("array has a negative dimension ", dim));
  }
  int64_t data_bytes = reader.Read<int64_t>("array data size");
  // The format stores ceil(bits / 8) bytes per element.
  int64_t elements = 1, expected = 0;
  for (int64_t dim : header.shape) {
    if (__builtin_mul_overflow(elements, dim, &elements)) reader.FailAt("array shape overflows");
  }
  if (__builtin_mul_overflow(elements, int64_t{(dtype.bits + 7) / 8}, &expected) ||
      data_bytes != expected) {
    reader.FailAt(StrCat("array data size ", data_bytes, " does not match dtype ",
                         DTypeToString(dtype), " and shape ", ShapeToString(header.shape), " (",
                         expected, " bytes)"));
  }
  header.data = reader.ReadBytes(data_bytes, "array data");
  return header;
}

NDArray ReadNDArray(ByteReader& reader) {
  ArrayHeader header = ReadArrayHeader(reader);
  NDArray array = NDArray::Empty(header.shape, header.dtype);
  array.CopyFromBytes(header.data.data(), header.data.size());
  return array;
}

std::string SaveParams(const NamedArrays& params) {
  ByteWriter writer;
  writer.Write<uint64_t>(kNDArrayListMagic);
  writer.Write<uint64_t>(0);
  writer.Write<uint64_t>(params.size());
  for (const auto& [name, array] : params) writer.WriteString(name);
  writer.Write<uint64_t>(params.size());
  for (const auto& [name, array] : params) WriteNDArray(writer, array);
  return writer.Take();
}

namespace {

// Reads the list header and names of a params file; leaves `reader` at the first array.
std::vector<std::string> ReadParamsHeader(ByteReader& reader) {
  if (reader.Read<uint64_t>("list magic") != kNDArrayListMagic) {
    reader.FailAt("bad magic: this is not a TVM params file");
  }
  reader.Read<uint64_t>("reserved field");
  std::vector<std::string> names = reader.ReadStringVector("names");
  uint64_t count = reader.Read<uint64_t>("array count");
  if (count != names.size()) {
    reader.FailAt(StrCat("holds ", names.size(), " names but ", count, " arrays"));
  }
  std::set<std::string> seen;
  for (const std::string& name : names) {
    if (!seen.insert(name).second) reader.FailAt(StrCat("name '", name, "' appears twice"));
  }
  return names;
}

template <typename ReadOne>
void ForEachArray(ByteReader& reader, const std::vector<std::string>& names, ReadOne read_one) {
  for (const std::string& name : names) {
    try {
      read_one(name);
    } catch (const Error& e) {
      Fail(e.what(), " in array '", name, "'");
    }
  }
  if (reader.remaining() != 0) reader.FailAt(StrCat(reader.remaining(), " bytes follow the last array"));
}

}  // namespace

NamedArrays LoadParams(std::string_view bytes) {
  ByteReader reader(bytes, "params");
  std::vector<std::string> names = ReadParamsHeader(reader);
  NamedArrays params;
  params.reserve(names.size());
  ForEachArray(reader, names, [&](const std::string& name) {
    params.emplace_back(name, ReadNDArray(reader));
  });
  return params;
}

std::vector<ParamInfo> LoadParamInfos(std::string_view bytes) {
  ByteReader reader(bytes, "params");
  std::vector<std::string> names = ReadParamsHeader(reader);
  std::vector<ParamInfo> infos;
  ForEachArray(reader, names, [&](const std::string& name) {
    ArrayHeader header = ReadArrayHeader(reader);
    infos.push_back(ParamInfo{name, header.shape, header.dtype});
  });
  return infos;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  Check(in.good(), "cannot open '", path, "'");
  // A regular file is read into a string of its size at once (a stream into a growing string
  // copied a 440 MB model four times: 1.2 s); anything else (a pipe) as a stream.
  std::error_code error;
  uintmax_t size = std::filesystem::is_regular_file(path, error) ? std::filesystem::file_size(path, error) : 0;
  if (!error && size > 0) {
    std::string content(size, '\0');
    in.read(content.data(), static_cast<std::streamsize>(size));
    Check(!in.bad(), "cannot read '", path, "'");
    content.resize(static_cast<size_t>(in.gcount()));
    if (in.peek() == std::ifstream::traits_type::eof()) return content;  // else it grew meanwhile
    std::ostringstream rest;
    rest << in.rdbuf();
    Check(!in.bad(), "cannot read '", path, "'");
    return content + rest.str();
  }
  std::ostringstream content;
  content << in.rdbuf();
  Check(!in.bad(), "cannot read '", path, "'");
  return content.str();
}

}  // namespace kiln::runtime
