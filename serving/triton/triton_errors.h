// The one error boundary between kiln and Triton: Triton's TRITONSERVER_Error objects become
// TritonError exceptions inside the backend (ThrowIfError, keeping Triton's code), and exceptions
// become TRITONSERVER_Error objects at each entry point (Guard). Plus logging through Triton's log.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "runtime/error.h"
#include "serving/triton/triton_api.h"

namespace kiln::triton {

// A request Triton let through that this model cannot run: reported as INVALID_ARG (HTTP 400).
class RequestError : public runtime::Error {
 public:
  using runtime::Error::Error;
};

// An error a Triton call returned, with Triton's code, which Guard passes on unchanged.
class TritonError : public runtime::Error {
 public:
  TritonError(TRITONSERVER_Error_Code code, const std::string& message) : runtime::Error(message), code_(code) {}
  TRITONSERVER_Error_Code code() const { return code_; }

 private:
  TRITONSERVER_Error_Code code_;
};

// Throws TritonError(<Triton's code>, "<context>: <Triton's message>") when `error` is set,
// deleting it.
void ThrowIfError(TRITONSERVER_Error* error, const std::string& context);

// Writes to Triton's log (its --log-* options decide what is shown), naming the caller's file
// and line as Triton's own messages do.
void Log(TRITONSERVER_LogLevel level, const std::string& message, const char* file = __builtin_FILE(),
         int line = __builtin_LINE());

// Runs `body`, returning null, or a new TRITONSERVER_Error carrying the exception's message, with
// the code: Triton's own for a TritonError; INVALID_ARG for a RequestError; `kiln_error_code` for
// kiln's other errors (INVALID_ARG while loading, where they name a wrong configuration or
// library; INTERNAL while executing, where the request was checked already and the run or
// Triton's buffers failed); INTERNAL for anything else. Never throws.
template <typename Body>
TRITONSERVER_Error* Guard(Body&& body, TRITONSERVER_Error_Code kiln_error_code = TRITONSERVER_ERROR_INVALID_ARG) {
  try {
    body();
    return nullptr;
  } catch (const TritonError& e) {
    return TRITONSERVER_ErrorNew(e.code(), e.what());
  } catch (const RequestError& e) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, e.what());
  } catch (const runtime::InternalError& e) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, e.what());
  } catch (const runtime::Error& e) {
    return TRITONSERVER_ErrorNew(kiln_error_code, e.what());
  } catch (const std::bad_alloc&) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "kiln backend: out of memory");
  } catch (const std::exception& e) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, (std::string("kiln backend: ") + e.what()).c_str());
  } catch (...) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "kiln backend: an unknown exception");
  }
}

}  // namespace kiln::triton
