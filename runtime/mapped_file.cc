// Mapping a file read-only (mapped_file.h).
#include "runtime/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/error.h"

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
  if (regular) {  // empty
    close(fd);
    return;
  }
  // A pipe (or another stream) is read from this descriptor to its end: opening it again would
  // leave its writer, for a moment, without a reader (SIGPIPE).
  char buffer[1 << 16];
  for (;;) {
    ssize_t got = read(fd, buffer, sizeof(buffer));
    if (got == 0) break;
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      int saved = errno;
      close(fd);
      Fail("cannot read '", path, "': ", std::strerror(saved));
    }
    read_.append(buffer, static_cast<size_t>(got));
  }
  close(fd);
}

MappedFile::~MappedFile() {
  if (mapped_ != nullptr) munmap(const_cast<char*>(mapped_), size_);
}

}  // namespace kiln::runtime
