// Socket activation: the listening socket a service manager (systemd's
// jitd.socket, or anything speaking its LISTEN_FDS protocol) passed to this
// process, so that `jitd serve` serves it instead of binding its own.
//
// The protocol (sd_listen_fds(3), without libsystemd): when LISTEN_PID names
// this process and LISTEN_FDS is 1, descriptor 3 is a listening socket. jitd
// serves exactly one socket, so LISTEN_FDS other than 1 is an error. The
// variables are removed once read (children never see them) and the
// descriptor is marked close-on-exec.
//
// Thread safety: call once, at start-up, before other threads read the
// environment. Lifetime: the returned descriptor is the caller's.
#ifndef JITD_DAEMON_LISTEN_FDS_H_
#define JITD_DAEMON_LISTEN_FDS_H_

#include <string>

#include "base/status.h"
#include "base/unique_fd.h"

namespace jitd::daemon {

// The first passed descriptor (SD_LISTEN_FDS_START).
inline constexpr int kListenFdsStart = 3;

// The inherited listening Unix stream socket, or an invalid UniqueFd when
// none was passed (LISTEN_PID unset or another process's). INVALID_ARGUMENT
// when one was passed but is unusable: LISTEN_FDS not 1, or descriptor 3 is
// not a listening AF_UNIX stream socket.
StatusOr<UniqueFd> TakeListenFd();

// The filesystem path a bound Unix socket listens on ("" for an abstract or
// unnamed one).
std::string BoundSocketPath(int fd);

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_LISTEN_FDS_H_
