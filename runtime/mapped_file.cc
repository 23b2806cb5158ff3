// Mapping a file read-only (mapped_file.h).
#include "runtime/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/error.h"
#include "runtime/params.h"

namespace kiln::runtime {

MappedFile::MappedFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  Check(fd >= 0, "cannot open '", path, "': ", std::strerror(errno));
  struct stat info;
  bool regular = fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
  if (regular && info.st_size > 0) {
    void* at = mmap(nullptr, static_cast<size_t>(info.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    int saved = errno;
    close(fd);
    Check(at != MAP_FAILED, "cannot read '", path, "': ", std::strerror(saved));
    mapped_ = static_cast<const char*>(at);
    size_ = static_cast<uint64_t>(info.st_size);
    madvise(at, size_, MADV_SEQUENTIAL);
    return;
  }
  close(fd);
  if (!regular) read_ = ReadFile(path);
}

MappedFile::~MappedFile() {
  if (mapped_ != nullptr) munmap(const_cast<char*>(mapped_), size_);
}

}  // namespace kiln::runtime
