// Errors inside the runtime's C++ code. `Error` is the user's mistake (a bad file, a wrong call)
// and says what and where; `InternalError` is kiln's bug. The C API turns both into -1 plus the
// message in TVMGetLastError().
#pragma once

#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace kiln::runtime {

// Where a user error happened, as far as the code that noticed it knows; each part is empty when
// unknown. Code that knows more adds it as the error passes (Error::AddLocation, then `throw;`),
// so no caller parses a location back out of a message.
struct ErrorLocation {
  std::string file;      // the file being read: a model, a library, IR text
  std::string node;      // the place within it: "node 'conv1' (Conv)", "initializer 'w'", "line 3, column 5"
  std::string argument;  // the argument, input or attribute: "input 1", "attribute 'axes'"
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, ErrorLocation location = {})
      : std::runtime_error(message), message_(message), location_(std::move(location)) {
    Compose();
  }
  // "file: node: argument: message", leaving out the unknown parts.
  const char* what() const noexcept override { return text_.c_str(); }
  // The message without the location.
  const std::string& message() const { return message_; }
  const ErrorLocation& location() const { return location_; }
  // Fills the parts of the location this error does not know yet (what the code nearest the
  // problem said stays).
  void AddLocation(const ErrorLocation& outer) {
    if (location_.file.empty()) location_.file = outer.file;
    if (location_.node.empty()) location_.node = outer.node;
    if (location_.argument.empty()) location_.argument = outer.argument;
    Compose();
  }

 private:
  void Compose() {
    text_.clear();
    for (const std::string* part : {&location_.file, &location_.node, &location_.argument}) {
      if (!part->empty()) text_ += *part + ": ";
    }
    text_ += message_;
  }

  std::string message_;
  ErrorLocation location_;
  std::string text_;
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

// Runs `work()`. An exception that is not one of kiln's errors (a C++ library's, thrown because of
// a bug in kiln) becomes an InternalError that says where it happened (`where()`); kiln's errors
// and running out of memory pass as they are.
template <typename Where, typename Work>
decltype(auto) ReportingBugsAt(const Where& where, Work&& work) {
  try {
    return work();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    throw InternalError(StrCat(where(), ": ", e.what()));
  }
}

}  // namespace kiln::runtime
