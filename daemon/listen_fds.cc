#include "daemon/listen_fds.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace jitd::daemon {
namespace {

// A decimal environment value, or -1 when unset or not a number.
long long EnvNumber(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return -1;
  long long n = -1;
  std::string_view text(value);
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size()) return -1;
  return n;
}

}  // namespace

StatusOr<UniqueFd> TakeListenFd() {
  const long long pid = EnvNumber("LISTEN_PID");
  const long long count = EnvNumber("LISTEN_FDS");
  if (pid != static_cast<long long>(::getpid())) return UniqueFd();
  ::unsetenv("LISTEN_PID");
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_FDNAMES");
  if (count != 1) {
    return InvalidArgument("socket activation passed LISTEN_FDS=" + std::to_string(count) +
                           " descriptors; jitd serves exactly one socket (ListenStream= once)");
  }
  const int fd = kListenFdsStart;
  int type = 0, listening = 0;
  socklen_t len = sizeof(type);
  sockaddr_storage addr{};
  socklen_t addr_len = sizeof(addr);
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &addr_len) != 0) {
    return InvalidArgument("socket activation: descriptor 3 is not a socket: " +
                           std::string(std::strerror(errno)));
  }
  len = sizeof(listening);
  if (addr.ss_family != AF_UNIX || type != SOCK_STREAM ||
      ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) {
    return InvalidArgument(
        "socket activation: descriptor 3 must be a listening Unix stream socket "
        "(ListenStream=/path in the .socket unit)");
  }
  ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) | FD_CLOEXEC);
  return UniqueFd(fd);
}

std::string BoundSocketPath(int fd) {
  sockaddr_un addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "";
  if (addr.sun_family != AF_UNIX || len <= offsetof(sockaddr_un, sun_path) ||
      addr.sun_path[0] == '\0') {
    return "";
  }
  return std::string(addr.sun_path, strnlen(addr.sun_path, len - offsetof(sockaddr_un, sun_path)));
}

}  // namespace jitd::daemon
