// Status and StatusOr: the error type of jitd's C++ core.
//
// Every fallible function returns a [[nodiscard]] Status (or StatusOr<T>)
// instead of throwing. A Status carries a code (mirroring the C API's
// jitd_status codes) and a human-readable message. Statuses are cheap to move;
// OK statuses allocate nothing. Thread-compatible value types.
#ifndef JITD_BASE_STATUS_H_
#define JITD_BASE_STATUS_H_

#include <cassert>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace jitd {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,
  kNotFound = 2,
  kAlreadyExists = 3,
  kResourceExhausted = 4,
  kFailedPrecondition = 5,
  kUnimplemented = 6,
  kUnavailable = 7,
  kDeadlineExceeded = 8,
  kInternal = 9,
  kPermissionDenied = 10,  // the caller is not allowed (peer credentials)
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message".
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}
inline Status NotFound(std::string message) {
  return Status(StatusCode::kNotFound, std::move(message));
}
inline Status ResourceExhausted(std::string message) {
  return Status(StatusCode::kResourceExhausted, std::move(message));
}
inline Status Unimplemented(std::string message) {
  return Status(StatusCode::kUnimplemented, std::move(message));
}
inline Status Internal(std::string message) {
  return Status(StatusCode::kInternal, std::move(message));
}

// Holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit
    assert(!status_.ok() && "StatusOr built from an OK status without value");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace jitd

#define JITD_CONCAT_INNER_(a, b) a##b
#define JITD_CONCAT_(a, b) JITD_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` yields a non-OK Status.
#define JITD_RETURN_IF_ERROR(expr)            \
  do {                                        \
    ::jitd::Status jitd_status_ = (expr);     \
    if (!jitd_status_.ok()) return jitd_status_; \
  } while (0)

// `JITD_ASSIGN_OR_RETURN(auto x, F());` binds x to F()'s value or returns.
#define JITD_ASSIGN_OR_RETURN(lhs, expr) \
  JITD_ASSIGN_OR_RETURN_IMPL_(JITD_CONCAT_(jitd_statusor_, __LINE__), lhs, expr)
#define JITD_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return std::move(tmp).status();    \
  lhs = std::move(tmp).value()

#endif  // JITD_BASE_STATUS_H_
