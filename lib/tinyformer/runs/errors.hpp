#pragma once
// The library's error boundary: what any exception becomes before a user sees it, the same for every front end.
// The CLI prints "tinyformer: error: <message>", Python raises the class of its kind, and every function of runs/
// throws runs::Error. A message is one line of at most 1 KB that names its culprit (a file, key, flag or argument),
// with control bytes shown as \xNN and no internals: libstdc++'s "filesystem error:", nlohmann's "[json.exception..]",
// a "Class::method: " prefix of a low layer, a third-party source location ("trainer_interface.cc(428)") or a bare
// std::bad_alloc.
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

namespace tf::runs {

// What went wrong, for a front end's choice of class (Python) or exit code.
enum class ErrorKind {
  value,         // a bad value: a config key, an argument, a flag, a file's content (Python: ValueError)
  type,          // an argument of the wrong type (TypeError)
  not_found,     // a file or directory that is not there (FileNotFoundError)
  is_directory,  // a directory where a file was expected (IsADirectoryError)
  permission,    // no permission (PermissionError)
  file,          // any other problem with a file: a FIFO, a device, a link, a full disk (OSError)
  index,         // an index out of range (IndexError)
  memory,        // more memory than the machine has (MemoryError)
  other,         // anything else: a state that does not allow the call, a run dir in use (RuntimeError)
};

// What every function of runs/ throws: a message a user can act on, and its kind.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// The longest message, in bytes (with the CLI's "tinyformer: error: " the line stays within 1 KB).
constexpr std::size_t kMaxMessage = 990;

// `e` as a user sees it: its kind and its one-line message.
std::pair<ErrorKind, std::string> user_error(const std::exception& e);
// Only the message of user_error.
std::string user_message(const std::exception& e);
// An exception that is not a std::exception (rethrown by a front end): a sentence.
std::string unknown_error_message();
// Throws `e` as runs::Error with user_error's kind and message; an error every process of a data-parallel run has
// (dist::CollectiveError) stays one, with the message cleaned, so that rank 0 alone tells it.
[[noreturn]] void rethrow_for_user(const std::exception& e);

// Runs `body`, turning whatever it throws into runs::Error (user_error), except an exception of a caller's own
// callback, which passes unchanged (see CallbackGuard).
template <class Body>
auto at_boundary(Body&& body) -> decltype(body());

// A caller's callback (a per-step function, a per-token function) wrapped so that what it throws is recognised at
// the boundary and rethrown as it was: a Python exception stays that exception.
class CallbackGuard {
 public:
  // Calls f(args...); an exception is kept and rethrown.
  template <class F, class... Args>
  void call(F& f, Args&&... args) {
    try {
      f(std::forward<Args>(args)...);
    } catch (...) {
      error_ = std::current_exception();
      throw;
    }
  }
  // Rethrows the callback's exception, when one was thrown.
  void rethrow_if_failed() const {
    if (error_) std::rethrow_exception(error_);
  }
  bool failed() const { return static_cast<bool>(error_); }

 private:
  std::exception_ptr error_;
};

template <class Body>
auto at_boundary(Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    rethrow_for_user(e);
  }
}

// at_boundary with a callback: the callback's own exception passes as it was.
template <class Body>
auto at_boundary(const CallbackGuard& guard, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error&) {
    guard.rethrow_if_failed();
    throw;
  } catch (const std::exception& e) {
    guard.rethrow_if_failed();
    rethrow_for_user(e);
  } catch (...) {
    guard.rethrow_if_failed();
    throw;
  }
}

}  // namespace tf::runs
