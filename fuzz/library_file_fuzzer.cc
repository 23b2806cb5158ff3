// Fuzzes the checks a library file passes before dlopen (runtime/library_file.h): any bytes are
// accepted or rejected with kiln::runtime::Error; the checks never read outside the file or crash.
// The input goes through a memory file, as CheckLibraryFile reads a path. Nothing is loaded.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/error.h"
#include "runtime/library_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("library", MFD_CLOEXEC);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) __builtin_trap();
  try {
    kiln::runtime::CheckLibraryFile(path);
  } catch (const kiln::runtime::Error&) {
  }
  return 0;
}
