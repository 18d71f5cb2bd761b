// Status and Expected<T>: how expected failures travel up the call stack.
// A bad config, a bad checkpoint or a bad kernel is not a crash: it is a Status the caller
// inspects. Programming errors use LEAP_CHECK (check.h) instead. Each layer may add context with
// with_context(), so a failure deep in a loader reads like a stack trace at the top.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace leap {

enum class StatusCode {
  kOk = 0,
  kInvalidInput,  // the user's file, option or data is wrong: exit code 2
  kNotFound,      // a named file, task or key does not exist: exit code 2
  kIoError,       // the OS failed us (disk full, permission): exit code 1
  kUnsupported,   // valid input we do not implement: exit code 2
  kInternal,      // our bug or the infrastructure's: exit code 1
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes the message: "loading config.json: tensor x missing".
  Status with_context(const std::string& context) const {
    if (is_ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

  // Exit code a command returns for this status: 2 for bad user input, 1 otherwise.
  int exit_code() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_input(std::string msg) { return {StatusCode::kInvalidInput, std::move(msg)}; }
inline Status not_found(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
inline Status io_error(std::string msg) { return {StatusCode::kIoError, std::move(msg)}; }
inline Status unsupported(std::string msg) { return {StatusCode::kUnsupported, std::move(msg)}; }
inline Status internal_error(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

// A value or the Status saying why there is none.
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Expected(Status status) : v_(std::move(status)) {
    assert(!std::get<Status>(v_).is_ok() && "Expected built from an OK status");
  }

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  Status status() const { return has_value() ? Status::ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace leap

// Returns the status from the enclosing function if it is not OK.
#define LEAP_RETURN_IF_ERROR(expr)              \
  do {                                          \
    ::leap::Status leap_status_ = (expr);       \
    if (!leap_status_.is_ok()) return leap_status_; \
  } while (0)

#define LEAP_CONCAT_INNER(a, b) a##b
#define LEAP_CONCAT(a, b) LEAP_CONCAT_INNER(a, b)
// `LEAP_ASSIGN_OR_RETURN(auto x, make_x());` unwraps an Expected or returns its status.
// __COUNTER__ is expanded once, in the first macro's arguments, so the temporary has one name
// even when the invocation spans several lines (where __LINE__ would not be stable).
#define LEAP_ASSIGN_OR_RETURN(decl, expr) LEAP_ASSIGN_OR_RETURN_N(__COUNTER__, decl, expr)
#define LEAP_ASSIGN_OR_RETURN_N(n, decl, expr) \
  LEAP_ASSIGN_OR_RETURN_IMPL(LEAP_CONCAT(leap_expected_, n), decl, expr)
#define LEAP_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                                \
  if (!tmp.has_value()) return tmp.status();        \
  decl = std::move(tmp).value()
