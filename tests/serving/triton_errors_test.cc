// The Triton backend's error boundary (serving/triton/triton_errors.h) without a server: Triton's
// error functions are stood in for here, so Guard's codes and ThrowIfError's are checked directly.
#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <string>

#include "runtime/error.h"
#include "serving/triton/triton_errors.h"

// Stand-ins for the server's definitions (the backend resolves them from tritonserver).
struct TRITONSERVER_Error {
  TRITONSERVER_Error_Code code;
  std::string message;
};

extern "C" {
TRITONSERVER_Error* TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code, const char* msg) {
  return new TRITONSERVER_Error{code, msg};
}
void TRITONSERVER_ErrorDelete(TRITONSERVER_Error* error) { delete error; }
TRITONSERVER_Error_Code TRITONSERVER_ErrorCode(TRITONSERVER_Error* error) { return error->code; }
const char* TRITONSERVER_ErrorMessage(TRITONSERVER_Error* error) { return error->message.c_str(); }
bool TRITONSERVER_LogIsEnabled(TRITONSERVER_LogLevel) { return false; }
TRITONSERVER_Error* TRITONSERVER_LogMessage(TRITONSERVER_LogLevel, const char*, const int, const char*) {
  return nullptr;
}
}  // extern "C"

namespace kiln::triton {
namespace {

// Guard's answer to `body` as (code, message); the error is deleted.
template <typename Body>
std::pair<TRITONSERVER_Error_Code, std::string> Answer(Body body, TRITONSERVER_Error_Code kiln_code) {
  TRITONSERVER_Error* error = Guard(body, kiln_code);
  if (error == nullptr) return {TRITONSERVER_ERROR_UNKNOWN, "no error"};
  std::pair<TRITONSERVER_Error_Code, std::string> answer{error->code, error->message};
  TRITONSERVER_ErrorDelete(error);
  return answer;
}

TEST(TritonErrors, ThrowIfErrorKeepsTritonsCode) {
  EXPECT_NO_THROW(ThrowIfError(nullptr, "nothing"));
  try {
    ThrowIfError(TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE, "busy"), "model 'm': output 'y'");
    FAIL() << "no error";
  } catch (const TritonError& e) {
    EXPECT_EQ(e.code(), TRITONSERVER_ERROR_UNAVAILABLE);
    EXPECT_STREQ(e.what(), "model 'm': output 'y': busy");
  }
}

TEST(TritonErrors, GuardMapsEachKindOfFailureToItsCode) {
  for (TRITONSERVER_Error_Code kiln_code : {TRITONSERVER_ERROR_INVALID_ARG, TRITONSERVER_ERROR_INTERNAL}) {
    EXPECT_EQ(Answer([] {}, kiln_code).second, "no error");
    // Triton's code passes through whatever the phase.
    auto triton = Answer([] { ThrowIfError(TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_NOT_FOUND, "no input"), "x"); },
                         kiln_code);
    EXPECT_EQ(triton.first, TRITONSERVER_ERROR_NOT_FOUND);
    EXPECT_EQ(triton.second, "x: no input");
    // A request kiln cannot run is the client's error (HTTP 400).
    auto request = Answer([] { throw RequestError("model 'm': input 'x': the request's shape is [1, 15]"); }, kiln_code);
    EXPECT_EQ(request.first, TRITONSERVER_ERROR_INVALID_ARG);
    EXPECT_EQ(request.second, "model 'm': input 'x': the request's shape is [1, 15]");
    // kiln's other errors take the phase's code: INVALID_ARG at load, INTERNAL while executing.
    auto kiln = Answer([] { runtime::Fail("model 'm': kiln could not run the request: out of range"); }, kiln_code);
    EXPECT_EQ(kiln.first, kiln_code);
    EXPECT_EQ(kiln.second, "model 'm': kiln could not run the request: out of range");
    // Bugs and the rest are INTERNAL.
    EXPECT_EQ(Answer([] { runtime::CheckInternal(false, "broken"); }, kiln_code).first, TRITONSERVER_ERROR_INTERNAL);
    EXPECT_EQ(Answer([] { throw std::bad_alloc(); }, kiln_code),
              std::make_pair(TRITONSERVER_ERROR_INTERNAL, std::string("kiln backend: out of memory")));
    EXPECT_EQ(Answer([] { throw std::logic_error("oops"); }, kiln_code),
              std::make_pair(TRITONSERVER_ERROR_INTERNAL, std::string("kiln backend: oops")));
    EXPECT_EQ(Answer([] { throw 3; }, kiln_code).first, TRITONSERVER_ERROR_INTERNAL);
  }
}

}  // namespace
}  // namespace kiln::triton
