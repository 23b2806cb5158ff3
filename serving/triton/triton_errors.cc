// Triton's errors and log from inside the kiln backend.
#include "serving/triton/triton_errors.h"

#include <cstring>

namespace kiln::triton {

void ThrowIfError(TRITONSERVER_Error* error, const std::string& context) {
  if (error == nullptr) return;
  TRITONSERVER_Error_Code code = TRITONSERVER_ErrorCode(error);
  std::string message = context + ": " + TRITONSERVER_ErrorMessage(error);
  TRITONSERVER_ErrorDelete(error);
  throw TritonError(code, message);
}

void Log(TRITONSERVER_LogLevel level, const std::string& message, const char* file, int line) {
  if (!TRITONSERVER_LogIsEnabled(level)) return;
  const char* slash = std::strrchr(file, '/');
  TRITONSERVER_Error* error = TRITONSERVER_LogMessage(level, slash != nullptr ? slash + 1 : file, line, message.c_str());
  if (error != nullptr) TRITONSERVER_ErrorDelete(error);
}

}  // namespace kiln::triton
