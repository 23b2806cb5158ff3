// Bounds checks of ByteReader.
#include "runtime/stream.h"

#include "runtime/error.h"

namespace kiln::runtime {

void ByteReader::FailAt(const std::string& message) const {
  Fail(source_, ": ", message, " (at byte ", offset_, ")");
}

std::string_view ByteReader::Take(size_t count, const char* field) {
  if (count > remaining()) {
    FailAt(StrCat("truncated: ", field, " needs ", count, " bytes but only ", remaining(),
                  " are left"));
  }
  std::string_view bytes = data_.substr(offset_, count);
  offset_ += count;
  return bytes;
}

uint64_t ByteReader::ReadCount(const char* field, size_t min_element_bytes) {
  uint64_t count = Read<uint64_t>(field);
  if (min_element_bytes > 0 && count > remaining() / min_element_bytes) {
    FailAt(StrCat(field, " claims ", count, " elements, more than the ", remaining(),
                  " bytes left can hold"));
  }
  return count;
}

std::string ByteReader::ReadString(const char* field) {
  uint64_t length = ReadCount(field, 1);
  return std::string(Take(length, field));
}

std::vector<std::string> ByteReader::ReadStringVector(const char* field) {
  uint64_t count = ReadCount(field, sizeof(uint64_t));
  std::vector<std::string> items;
  items.reserve(count);
  for (uint64_t i = 0; i < count; ++i) items.push_back(ReadString(field));
  return items;
}

std::vector<uint64_t> ByteReader::ReadU64Vector(const char* field) {
  uint64_t count = ReadCount(field, sizeof(uint64_t));
  std::vector<uint64_t> items(count);
  for (uint64_t& item : items) item = Read<uint64_t>(field);
  return items;
}

}  // namespace kiln::runtime
