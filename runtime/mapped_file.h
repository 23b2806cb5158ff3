// A file's bytes mapped read-only into memory: a large model is read through the page cache,
// never copied into a buffer of its own first. (As with any mapping, a file cut short by another
// process while it is read ends the reader with SIGBUS: the model files it maps are not written
// while they are imported.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::runtime {

class MappedFile {
 public:
  // Maps the regular file at `path` (an empty file: no mapping); anything else (a pipe, a
  // device) is read into memory instead. Throws Error when it cannot be opened or read.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::string_view bytes() const { return mapped_ != nullptr ? std::string_view(mapped_, size_) : read_; }

 private:
  const char* mapped_ = nullptr;
  uint64_t size_ = 0;
  std::string read_;  // what was read when the file is not mapped
};

}  // namespace kiln::runtime
