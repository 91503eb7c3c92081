// Where errno enters jitd's ipc layer it becomes a Status, here and only here.
#ifndef JITD_IPC_INTERNAL_ERRNO_STATUS_H_
#define JITD_IPC_INTERNAL_ERRNO_STATUS_H_

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include "base/status.h"

namespace jitd::ipc::internal {

// "<what>: <strerror> (errno N)" with a code that says what kind of failure
// it was: out of memory/descriptors -> RESOURCE_EXHAUSTED, a peer that went
// away -> UNAVAILABLE, a bad argument -> INVALID_ARGUMENT, else INTERNAL.
inline Status ErrnoToStatus(std::string_view what, int err) {
  std::string message = std::string(what) + ": " + std::strerror(err) +
                        " (errno " + std::to_string(err) + ")";
  switch (err) {
    case ENOMEM:
    case EMFILE:
    case ENFILE:
    case ENOSPC:
    case EFBIG:
      return Status(StatusCode::kResourceExhausted, std::move(message));
    case EPIPE:
    case ECONNRESET:
    case ENOTCONN:
    case ECONNREFUSED:
      return Status(StatusCode::kUnavailable, std::move(message));
    case EINVAL:
    case EBADF:
    case ENOTSOCK:
      return Status(StatusCode::kInvalidArgument, std::move(message));
    default:
      return Status(StatusCode::kInternal, std::move(message));
  }
}

}  // namespace jitd::ipc::internal

// Evaluates `call` (a libc call returning -1 and setting errno on failure)
// and returns an ErrnoToStatus error from the enclosing function on failure.
#define JITD_RETURN_IF_ERRNO(call, what)                              \
  do {                                                                \
    if ((call) < 0) return ::jitd::ipc::internal::ErrnoToStatus(what, errno); \
  } while (0)

#endif  // JITD_IPC_INTERNAL_ERRNO_STATUS_H_
