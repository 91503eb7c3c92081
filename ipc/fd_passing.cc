#include "ipc/fd_passing.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "ipc/internal/errno_status.h"

namespace jitd::ipc {
namespace {

constexpr size_t kHeaderBytes = 4;
// Room for a few descriptors, so that a sender that attaches too many is
// caught (and its descriptors closed) rather than silently truncated.
constexpr size_t kMaxFdsInControl = 8;

Status SocketError(const char* what, int err) {
  if (err == EAGAIN || err == EWOULDBLOCK) {
    return Status(StatusCode::kUnavailable, std::string(what) + ": would block");
  }
  return internal::ErrnoToStatus(what, err);
}

Status PeerClosed() {
  return Status(StatusCode::kUnavailable, "peer closed the socket");
}

// Collects every descriptor in `msg`'s control data into `fds` (so they are
// closed if we reject the message) and checks there is nothing else.
Status CollectFds(msghdr& msg, std::vector<UniqueFd>* fds) {
  Status status;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        fds->emplace_back(fd);
      }
    } else if (status.ok()) {
      status = InvalidArgument("unexpected ancillary data (level " +
                               std::to_string(c->cmsg_level) + ", type " +
                               std::to_string(c->cmsg_type) + ")");
    }
  }
  if (status.ok() && (msg.msg_flags & MSG_CTRUNC) != 0) {
    status = InvalidArgument("ancillary data was truncated (too many descriptors)");
  }
  return status;
}

// One recvmsg into [data, data + size), retrying EINTR; descriptors and
// control checks as in CollectFds. Returns the bytes read (0 = peer closed).
StatusOr<size_t> ReceiveSome(int socket, uint8_t* data, size_t size, int* msg_flags,
                             std::vector<UniqueFd>* fds) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsInControl)];
  iovec iov{data, size};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return SocketError("recvmsg", errno);
  *msg_flags = msg.msg_flags;
  JITD_RETURN_IF_ERROR(CollectFds(msg, fds));
  return static_cast<size_t>(n);
}

uint32_t LoadLittleEndian32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

Status TakeOneFd(std::vector<UniqueFd>& fds, FdMessage* message) {
  if (fds.size() > 1) {
    return InvalidArgument("message carried " + std::to_string(fds.size()) +
                           " descriptors; at most one is allowed");
  }
  if (fds.size() == 1) message->fd = std::move(fds[0]);
  return Status::Ok();
}

}  // namespace

Status SendWithFd(int socket, int fd, std::span<const uint8_t> payload) {
  if (payload.size() > kMaxFdMessagePayload) {
    return InvalidArgument("control message payload of " + std::to_string(payload.size()) +
                           " bytes exceeds the limit of " + std::to_string(kMaxFdMessagePayload));
  }
  const uint32_t length = static_cast<uint32_t>(payload.size());
  uint8_t header[kHeaderBytes] = {static_cast<uint8_t>(length), static_cast<uint8_t>(length >> 8),
                                  static_cast<uint8_t>(length >> 16),
                                  static_cast<uint8_t>(length >> 24)};
  iovec iov[2] = {{header, kHeaderBytes},
                  {const_cast<uint8_t*>(payload.data()), payload.size()}};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = payload.empty() ? 1 : 2;
  if (fd >= 0) {
    std::memset(control, 0, sizeof(control));
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  size_t left = kHeaderBytes + payload.size();
  while (left > 0) {
    const ssize_t n = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return SocketError("sendmsg", errno);
    }
    // The descriptor went with the first bytes; never send it twice.
    msg.msg_control = nullptr;
    msg.msg_controllen = 0;
    left -= static_cast<size_t>(n);
    // Advance the iovecs past what was sent (a short write on a stream).
    size_t sent = static_cast<size_t>(n);
    while (sent > 0 && msg.msg_iovlen > 0) {
      const size_t step = std::min(sent, msg.msg_iov[0].iov_len);
      msg.msg_iov[0].iov_base = static_cast<uint8_t*>(msg.msg_iov[0].iov_base) + step;
      msg.msg_iov[0].iov_len -= step;
      sent -= step;
      if (msg.msg_iov[0].iov_len == 0) {
        ++msg.msg_iov;
        --msg.msg_iovlen;
      }
    }
  }
  return Status::Ok();
}

StatusOr<FdMessage> ReceiveWithFd(int socket, uint32_t max_payload) {
  int type = 0;
  socklen_t type_size = sizeof(type);
  if (::getsockopt(socket, SOL_SOCKET, SO_TYPE, &type, &type_size) < 0) {
    return SocketError("getsockopt(SO_TYPE)", errno);
  }
  max_payload = std::min(max_payload, kMaxFdMessagePayload);
  FdMessage message;
  std::vector<UniqueFd> fds;
  int flags = 0;

  if (type != SOCK_STREAM) {
    // A record-oriented socket: the whole message arrives in one recvmsg.
    std::vector<uint8_t> buffer(kHeaderBytes + size_t{max_payload});
    JITD_ASSIGN_OR_RETURN(size_t n, ReceiveSome(socket, buffer.data(), buffer.size(), &flags, &fds));
    if (n == 0 && fds.empty()) return PeerClosed();
    if ((flags & MSG_TRUNC) != 0) {
      return InvalidArgument("control message longer than the " + std::to_string(max_payload) +
                             "-byte payload limit");
    }
    if (n < kHeaderBytes || LoadLittleEndian32(buffer.data()) != n - kHeaderBytes) {
      return InvalidArgument("control message length prefix does not match the record");
    }
    JITD_RETURN_IF_ERROR(TakeOneFd(fds, &message));
    message.payload.assign(buffer.begin() + kHeaderBytes, buffer.begin() + n);
    return message;
  }

  // A stream: read the length prefix, then the payload, accepting a
  // descriptor only with the first bytes.
  uint8_t header[kHeaderBytes];
  size_t got = 0;
  bool first = true;
  auto read_fully = [&](uint8_t* data, size_t size) -> Status {
    size_t done = 0;
    while (done < size) {
      std::vector<UniqueFd> late_fds;
      JITD_ASSIGN_OR_RETURN(size_t n, ReceiveSome(socket, data + done, size - done, &flags,
                                                  first ? &fds : &late_fds));
      if (!late_fds.empty()) {
        return InvalidArgument("a descriptor arrived in the middle of a control message");
      }
      if (n == 0) {
        return first ? PeerClosed()
                     : Status(StatusCode::kUnavailable,
                              "peer closed the socket in the middle of a control message");
      }
      first = false;
      done += n;
    }
    return Status::Ok();
  };
  JITD_RETURN_IF_ERROR(read_fully(header, kHeaderBytes));
  got = LoadLittleEndian32(header);
  if (got > max_payload) {
    return InvalidArgument("control message of " + std::to_string(got) +
                           " bytes exceeds the limit of " + std::to_string(max_payload));
  }
  JITD_RETURN_IF_ERROR(TakeOneFd(fds, &message));
  message.payload.resize(got);
  JITD_RETURN_IF_ERROR(read_fully(message.payload.data(), got));
  return message;
}

StatusOr<UnixCredentials> PeerCredentials(int socket) {
  ucred cred{};
  socklen_t size = sizeof(cred);
  if (::getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &cred, &size) < 0) {
    return SocketError("getsockopt(SO_PEERCRED)", errno);
  }
  if (size != sizeof(cred)) return Internal("SO_PEERCRED returned a short answer");
  return UnixCredentials{cred.pid, cred.uid, cred.gid};
}

}  // namespace jitd::ipc
