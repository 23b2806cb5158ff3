// Bounds-checked reading and writing of dmlc's binary stream encoding (little-endian integers,
// strings as u64 length + bytes, vectors as u64 count + elements), used by params files and the
// module import blob. Every read failure throws Error naming the source, the field and the offset.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "kiln's binary formats assume a little-endian host");

namespace kiln::runtime {

class ByteReader {
 public:
  // `source` names what is read in error messages, e.g. "params file".
  ByteReader(std::string_view data, std::string source)
      : data_(data), source_(std::move(source)) {}

  template <typename T>
  T Read(const char* field) {
    static_assert(std::is_arithmetic_v<T>);
    T value;
    std::memcpy(&value, Take(sizeof(T), field).data(), sizeof(T));
    return value;
  }
  std::string_view ReadBytes(size_t count, const char* field) { return Take(count, field); }
  // Non-throwing forms for probing a layout: false (and nothing consumed) when too few bytes are left.
  template <typename T>
  bool TryRead(T* value) {
    static_assert(std::is_arithmetic_v<T>);
    if (remaining() < sizeof(T)) return false;
    std::memcpy(value, data_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return true;
  }
  bool TrySkip(uint64_t count) {
    if (count > remaining()) return false;
    offset_ += count;
    return true;
  }
  std::string ReadString(const char* field);
  std::vector<std::string> ReadStringVector(const char* field);
  std::vector<uint64_t> ReadU64Vector(const char* field);
  // Reads a u64 count of elements of at least `min_element_bytes` each, rejecting counts that
  // cannot fit in what is left.
  uint64_t ReadCount(const char* field, size_t min_element_bytes);

  size_t offset() const { return offset_; }
  size_t remaining() const { return data_.size() - offset_; }
  const std::string& source() const { return source_; }
  [[noreturn]] void FailAt(const std::string& message) const;

 private:
  std::string_view Take(size_t count, const char* field);
  std::string_view data_;
  size_t offset_ = 0;
  std::string source_;
};

class ByteWriter {
 public:
  template <typename T>
  void Write(T value) {
    static_assert(std::is_arithmetic_v<T>);
    out_.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  void WriteBytes(std::string_view bytes) { out_.append(bytes); }
  void WriteString(std::string_view text) {
    Write<uint64_t>(text.size());
    out_.append(text);
  }
  void WriteStringVector(const std::vector<std::string>& items) {
    Write<uint64_t>(items.size());
    for (const std::string& item : items) WriteString(item);
  }
  void WriteU64Vector(const std::vector<uint64_t>& items) {
    Write<uint64_t>(items.size());
    for (uint64_t item : items) Write<uint64_t>(item);
  }
  const std::string& bytes() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace kiln::runtime
