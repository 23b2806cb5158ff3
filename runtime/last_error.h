// The per-thread last error message behind TVMGetLastError / TVMAPISetLastError.
#pragma once

#include <string>

namespace kiln::runtime {

void SetLastError(std::string message);
const std::string& LastError();

}  // namespace kiln::runtime
