// Reading and writing .npy payloads and the stored (uncompressed) zip container of .npz.
#include "tools/npz.h"

#include <cstring>
#include <fstream>

#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/params.h"

namespace kiln::tools {

using runtime::Check;
using runtime::Fail;
using runtime::StrCat;

namespace {

uint32_t Crc32(const std::string& data) {
  static uint32_t table[256];
  static bool ready = false;
  if (!ready) {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
    ready = true;
  }
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char ch : data) crc = table[(crc ^ ch) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

template <typename T>
T Load(const std::string& bytes, size_t offset, const std::string& what) {
  Check(offset + sizeof(T) <= bytes.size(), what, ": truncated");
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

template <typename T>
void Put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

std::string Descr(DLDataType d) {
  if (d.code == kDLFloat) return StrCat("<f", d.bits / 8);
  if (d.code == kDLInt) return d.bits == 8 ? "|i1" : StrCat("<i", d.bits / 8);
  if (d.code == kDLUInt && d.bits == 1) return "|b1";
  if (d.code == kDLUInt) return d.bits == 8 ? "|u1" : StrCat("<u", d.bits / 8);
  // numpy has no bfloat16 or float8: their bits, as unsigned integers of their width.
  if (d.code == kDLBfloat && d.bits == 16) return "<u2";
  if (runtime::IsFloat8(d)) return "|u1";
  Fail("cannot write dtype ", runtime::DTypeToString(d), " to .npy");
}

// The dtypes .npy files hold that kiln has: little-endian (or single-byte) ints, unsigned ints and
// floats of the usual widths, and bool.
DLDataType FromDescr(const std::string& descr, const std::string& what) {
  Check(descr.size() >= 3 && descr.size() <= 4, what, ": unknown dtype '", descr, "'");
  char order = descr[0], kind = descr[1];
  Check(order == '<' || order == '|' || order == '=', what, ": big-endian dtype '", descr, "' is not supported");
  std::string width = descr.substr(2);
  int bytes = width == "1" ? 1 : width == "2" ? 2 : width == "4" ? 4 : width == "8" ? 8 : 0;
  Check(bytes != 0, what, ": dtype '", descr, "' is not supported");
  auto bits = static_cast<uint8_t>(bytes * 8);
  switch (kind) {
    case 'f': Check(bytes >= 2, what, ": dtype '", descr, "' is not supported"); return DLDataType{kDLFloat, bits, 1};
    case 'i': return DLDataType{kDLInt, bits, 1};
    case 'u': return DLDataType{kDLUInt, bits, 1};
    case 'b': Check(bytes == 1, what, ": dtype '", descr, "' is not supported"); return DLDataType{kDLUInt, 1, 1};
    default: Fail(what, ": dtype '", descr, "' is not supported");
  }
}

// The value of 'key' in the npy header dict, as text: a quoted string, a parenthesized tuple or a
// bare word up to the next ',' or '}'.
std::string HeaderField(const std::string& header, const std::string& key, const std::string& what) {
  size_t at = header.find("'" + key + "'");
  Check(at != std::string::npos, what, ": the .npy header has no '", key, "'");
  size_t colon = header.find(':', at + key.size() + 2);
  size_t begin = colon == std::string::npos ? colon : header.find_first_not_of(' ', colon + 1);
  Check(begin != std::string::npos, what, ": the .npy header has no value for '", key, "'");
  size_t end = header[begin] == '('    ? header.find(')', begin)
               : header[begin] == '\'' ? header.find('\'', begin + 1)
                                       : header.find_first_of(",}", begin);
  Check(end != std::string::npos, what, ": the .npy header's value for '", key, "' does not end");
  if (header[begin] == '(' || header[begin] == '\'') ++end;  // keep the closing bracket or quote
  return header.substr(begin, end - begin);
}

// "(2, 3)", "(5,)" or "()": the dims, each a decimal number that fits int64.
std::vector<int64_t> ParseShape(const std::string& text, const std::string& what) {
  Check(text.size() >= 2 && text.front() == '(' && text.back() == ')', what, ": the .npy shape '", text,
        "' is not a tuple");
  std::vector<int64_t> shape;
  size_t i = 1;
  while (i < text.size() - 1) {
    size_t end = text.find_first_of(",)", i);  // found: the text ends with ')'
    size_t first = text.find_first_not_of(' ', i);
    size_t last = text.find_last_not_of(' ', end - 1);
    if (first < end) {
      int64_t d = 0;
      for (size_t k = first; k <= last; ++k) {
        Check(text[k] >= '0' && text[k] <= '9', what, ": the .npy shape '", text, "' holds a dim that is not a number");
        Check(!__builtin_mul_overflow(d, 10, &d) && !__builtin_add_overflow(d, text[k] - '0', &d), what,
              ": the .npy shape '", text, "' holds a dim too large for 64 bits");
      }
      shape.push_back(d);
      Check(shape.size() <= 32, what, ": the .npy shape '", text, "' has more than 32 dims");
    }
    i = end + 1;
  }
  return shape;
}

}  // namespace

runtime::NDArray ParseNpy(const std::string& bytes, const std::string& what) {
  Check(bytes.size() >= 10 && bytes.compare(0, 6, "\x93NUMPY") == 0, what, ": not a .npy array");
  uint8_t major = static_cast<uint8_t>(bytes[6]);
  Check(major >= 1 && major <= 3, what, ": .npy format version ", int{major}, " is not supported");
  size_t header_len = major == 1 ? Load<uint16_t>(bytes, 8, what) : Load<uint32_t>(bytes, 8, what);
  size_t header_start = major == 1 ? 10 : 12;
  Check(header_start + header_len <= bytes.size(), what, ": truncated .npy header");
  std::string header = bytes.substr(header_start, header_len);
  std::string descr = HeaderField(header, "descr", what);
  Check(descr.size() >= 2 && descr.front() == '\'' && descr.back() == '\'', what, ": the .npy dtype ", descr,
        " is not a string");
  DLDataType dtype = FromDescr(descr.substr(1, descr.size() - 2), what);
  Check(HeaderField(header, "fortran_order", what) == "False", what, ": Fortran-ordered arrays are not supported");
  std::vector<int64_t> shape = ParseShape(HeaderField(header, "shape", what), what);
  size_t expected = static_cast<size_t>(runtime::CheckedTensorBytes(shape, dtype, what + ": the array"));
  size_t data_start = header_start + header_len;
  Check(bytes.size() - data_start == expected, what, ": holds ", bytes.size() - data_start,
        " bytes of data, expected ", expected, " for ", runtime::DTypeToString(dtype), " ",
        runtime::ShapeToString(shape));
  runtime::NDArray array = runtime::NDArray::Empty(shape, dtype);
  array.CopyFromBytes(bytes.data() + data_start, array.NumBytes());
  return array;
}

std::string FormatNpy(const runtime::NDArray& array) {
  std::string shape = "(";
  for (int64_t d : array.shape()) shape += std::to_string(d) + ", ";
  if (array.shape().size() > 1) shape.resize(shape.size() - 2);
  if (array.shape().size() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = "{'descr': '" + Descr(array.dtype()) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  Put<uint16_t>(out, static_cast<uint16_t>(header.size()));
  out += header;
  out.append(static_cast<const char*>(array.data()), array.NumBytes());
  return out;
}

NamedArrayList ReadNpz(const std::string& path) { return ParseNpz(runtime::ReadFile(path), path); }

NamedArrayList ParseNpz(const std::string& bytes, const std::string& what) {
  // End of central directory: the last "PK\5\6".
  size_t eocd = bytes.rfind(std::string("PK\x05\x06", 4));
  Check(eocd != std::string::npos && eocd + 22 <= bytes.size(), what, ": not a .npz file (no zip directory)");
  uint16_t count = Load<uint16_t>(bytes, eocd + 10, what);
  size_t entry = Load<uint32_t>(bytes, eocd + 16, what);
  NamedArrayList arrays;
  for (uint16_t i = 0; i < count; ++i) {
    Check(Load<uint32_t>(bytes, entry, what) == 0x02014b50u, what, ": damaged zip directory");
    uint16_t method = Load<uint16_t>(bytes, entry + 10, what);
    uint64_t size = Load<uint32_t>(bytes, entry + 20, what);
    uint16_t name_len = Load<uint16_t>(bytes, entry + 28, what), extra_len = Load<uint16_t>(bytes, entry + 30, what);
    uint16_t comment_len = Load<uint16_t>(bytes, entry + 32, what);
    size_t local = Load<uint32_t>(bytes, entry + 42, what);
    Check(entry + 46 + name_len <= bytes.size(), what, ": damaged zip directory");
    std::string name = bytes.substr(entry + 46, name_len);
    Check(method == 0, what, ": '", name, "' is compressed; write the file with numpy.savez (not savez_compressed)");
    uint16_t local_name = Load<uint16_t>(bytes, local + 26, what), local_extra = Load<uint16_t>(bytes, local + 28, what);
    size_t data = local + 30 + local_name + local_extra;
    Check(data <= bytes.size(), what, ": '", name, "' is truncated");
    if (size == 0xFFFFFFFFu) size = bytes.size() - data;  // zip64: the .npy header tells the true size
    Check(size <= bytes.size() - data, what, ": '", name, "' is truncated");
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
    arrays.emplace_back(name, ParseNpy(bytes.substr(data, size), what + ":" + name));
    entry += 46 + name_len + extra_len + comment_len;
  }
  return arrays;
}

void WriteNpz(const std::string& path, const NamedArrayList& arrays) {
  std::string out, directory;
  for (const auto& [name, array] : arrays) {
    std::string file = name + ".npy";
    std::string payload = FormatNpy(array);
    Check(payload.size() < 0xFFFFFFFFu, "array '", name, "' is too large for a .npz file");
    uint32_t crc = Crc32(payload);
    uint32_t offset = static_cast<uint32_t>(out.size());
    auto common = [&](std::string& s) {
      Put<uint16_t>(s, 20);  // version needed
      Put<uint16_t>(s, 0);   // flags
      Put<uint16_t>(s, 0);   // stored
      Put<uint16_t>(s, 0);   // time
      Put<uint16_t>(s, 0x21);  // date (1980-01-01)
      Put<uint32_t>(s, crc);
      Put<uint32_t>(s, static_cast<uint32_t>(payload.size()));
      Put<uint32_t>(s, static_cast<uint32_t>(payload.size()));
      Put<uint16_t>(s, static_cast<uint16_t>(file.size()));
      Put<uint16_t>(s, 0);  // extra
    };
    Put<uint32_t>(out, 0x04034b50u);
    common(out);
    out += file;
    out += payload;
    Put<uint32_t>(directory, 0x02014b50u);
    Put<uint16_t>(directory, 20);  // version made by
    common(directory);
    Put<uint16_t>(directory, 0);  // comment
    Put<uint16_t>(directory, 0);  // disk
    Put<uint16_t>(directory, 0);  // internal attributes
    Put<uint32_t>(directory, 0);  // external attributes
    Put<uint32_t>(directory, offset);
    directory += file;
  }
  uint32_t directory_offset = static_cast<uint32_t>(out.size());
  out += directory;
  Put<uint32_t>(out, 0x06054b50u);
  Put<uint16_t>(out, 0);
  Put<uint16_t>(out, 0);
  Put<uint16_t>(out, static_cast<uint16_t>(arrays.size()));
  Put<uint16_t>(out, static_cast<uint16_t>(arrays.size()));
  Put<uint32_t>(out, static_cast<uint32_t>(directory.size()));
  Put<uint32_t>(out, directory_offset);
  Put<uint16_t>(out, 0);
  std::ofstream file(path, std::ios::binary);
  file.write(out.data(), static_cast<std::streamsize>(out.size()));
  Check(file.good(), "cannot write '", path, "'");
}

}  // namespace kiln::tools
