// Errors inside the runtime's C++ code. `Error` is the user's mistake (a bad file, a wrong call)
// and says what and where; `InternalError` is kiln's bug. The C API turns both into -1 plus the
// message in TVMGetLastError().
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace kiln::runtime {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InternalError : public Error {
 public:
  explicit InternalError(const std::string& what)
      : Error("internal error (a bug in kiln, please report it): " + what) {}
};

// Concatenates the arguments with operator<< into one message.
template <typename... Parts>
std::string StrCat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

template <typename... Parts>
[[noreturn]] void Fail(const Parts&... parts) {
  throw Error(StrCat(parts...));
}

template <typename... Parts>
void Check(bool condition, const Parts&... parts) {
  if (!condition) throw Error(StrCat(parts...));
}

// For invariants kiln itself keeps: a failure is kiln's bug (InternalError), not the user's.
template <typename... Parts>
void CheckInternal(bool condition, const Parts&... parts) {
  if (!condition) throw InternalError(StrCat(parts...));
}

}  // namespace kiln::runtime
