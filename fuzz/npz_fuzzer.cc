// Fuzzes the command line's .npz reader (`kiln run --inputs x.npz`): any bytes either load as
// named arrays, which then write back and read again to the same arrays, or are rejected with
// kiln::runtime::Error. A crash, a sanitizer report or another exception type is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "runtime/error.h"
#include "tools/npz.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("KILN_MAX_TENSOR_BYTES", "67108864", /*overwrite=*/1);  // huge shapes refused, not allocated
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  kiln::tools::NamedArrayList arrays;
  try {
    arrays = kiln::tools::ParseNpz(bytes, "fuzz.npz");
  } catch (const kiln::runtime::Error&) {
    return 0;
  }
  for (const auto& [name, array] : arrays) {
    kiln::runtime::NDArray again = kiln::tools::ParseNpy(kiln::tools::FormatNpy(array), name);
    if (again.shape() != array.shape() || again.NumBytes() != array.NumBytes() ||
        std::memcmp(again.data(), array.data(), array.NumBytes()) != 0) {
      __builtin_trap();
    }
  }
  return 0;
}
