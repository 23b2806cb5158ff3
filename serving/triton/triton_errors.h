// The one error boundary between kiln and Triton: Triton's TRITONSERVER_Error objects become
// kiln::runtime::Error exceptions inside the backend (ThrowIfError), and exceptions become
// TRITONSERVER_Error objects at each entry point (Guard). Plus logging through Triton's log.
#pragma once

#include <exception>
#include <string>

#include "runtime/error.h"
#include "serving/triton/triton_api.h"

namespace kiln::triton {

// A request Triton let through that this model cannot run: reported as INVALID_ARG (HTTP 400).
class RequestError : public runtime::Error {
 public:
  using runtime::Error::Error;
};

// Throws Error("<context>: <Triton's message>") when `error` is set, deleting it.
void ThrowIfError(TRITONSERVER_Error* error, const std::string& context);

// Writes to Triton's log (its --log-* options decide what is shown), naming the caller's file
// and line as Triton's own messages do.
void Log(TRITONSERVER_LogLevel level, const std::string& message, const char* file = __builtin_FILE(),
         int line = __builtin_LINE());

// Runs `body`, returning null, or a new TRITONSERVER_Error carrying the exception's message:
// INVALID_ARG for kiln's user errors (a wrong configuration, library or request), INTERNAL for
// anything else.
template <typename Body>
TRITONSERVER_Error* Guard(Body&& body) {
  try {
    body();
    return nullptr;
  } catch (const runtime::InternalError& e) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, e.what());
  } catch (const runtime::Error& e) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, e.what());
  } catch (const std::bad_alloc&) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "kiln backend: out of memory");
  } catch (const std::exception& e) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, (std::string("kiln backend: ") + e.what()).c_str());
  }
}

}  // namespace kiln::triton
