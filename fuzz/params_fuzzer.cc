// Fuzzes the params reader: any input either loads (and then saves back to the same arrays and
// agrees with the header-only reader) or is rejected with kiln::runtime::Error.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "runtime/error.h"
#include "runtime/params.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  kiln::runtime::NamedArrays params;
  try {
    params = kiln::runtime::LoadParams(bytes);
  } catch (const kiln::runtime::Error&) {
    return 0;
  }
  std::vector<kiln::runtime::ParamInfo> infos = kiln::runtime::LoadParamInfos(bytes);  // must agree
  if (infos.size() != params.size()) __builtin_trap();
  kiln::runtime::NamedArrays again = kiln::runtime::LoadParams(kiln::runtime::SaveParams(params));
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& a = params[i].second;
    const auto& b = again[i].second;
    if (params[i].first != again[i].first || infos[i].name != params[i].first || a.shape() != b.shape() ||
        a.NumBytes() != b.NumBytes() || std::memcmp(a.data(), b.data(), a.NumBytes()) != 0) {
      __builtin_trap();
    }
  }
  return 0;
}
