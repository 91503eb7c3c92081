// Passing a file descriptor (the segment memfd) plus a small byte payload
// over a connected Unix socket with SCM_RIGHTS, and reading the peer's
// credentials (SO_PEERCRED).
//
// Framing: one message = a 4-byte little-endian payload length, then the
// payload; the descriptor, if any, rides on the first byte. On a stream
// socket this survives short writes and reads and EINTR; on a SOCK_SEQPACKET
// socket a message is one record. The receiver rejects (and closes) anything
// unexpected: more than one descriptor, ancillary data of another kind,
// truncated control data, a descriptor arriving mid-message, a payload
// longer than it allows. Received descriptors are close-on-exec
// (MSG_CMSG_CLOEXEC).
//
// These are free functions on borrowed socket descriptors: thread-compatible
// (one sender and one receiver per socket at a time). Blocking; put the
// socket in non-blocking mode and poll it yourself if you need a timeout
// (EAGAIN comes back as UNAVAILABLE).
#ifndef JITD_IPC_FD_PASSING_H_
#define JITD_IPC_FD_PASSING_H_

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "base/unique_fd.h"

namespace jitd::ipc {

// The largest payload SendWithFd/ReceiveWithFd handle (a control message,
// not a data path: bulk data goes through the shared segment).
inline constexpr uint32_t kMaxFdMessagePayload = 64 * 1024;

// Sends `payload` and, when `fd` >= 0, a duplicate of `fd` (the caller keeps
// its own). UNAVAILABLE if the peer has gone.
Status SendWithFd(int socket, int fd, std::span<const uint8_t> payload);

// One message received by ReceiveWithFd.
struct FdMessage {
  UniqueFd fd;                   // invalid when the sender attached none
  std::vector<uint8_t> payload;  // owned copy
};

// Receives one message of at most `max_payload` bytes. UNAVAILABLE when the
// peer closed the socket (before or in the middle of a message),
// INVALID_ARGUMENT for anything malformed (any descriptor received with it
// is closed).
StatusOr<FdMessage> ReceiveWithFd(int socket, uint32_t max_payload = kMaxFdMessagePayload);

// Who is on the other end of a connected Unix socket, as the kernel saw it
// at connect() time.
struct UnixCredentials {
  pid_t pid;
  uid_t uid;
  gid_t gid;
};
StatusOr<UnixCredentials> PeerCredentials(int socket);

}  // namespace jitd::ipc

#endif  // JITD_IPC_FD_PASSING_H_
