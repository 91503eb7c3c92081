// TakeListenFd's protocol checks, and `jitd serve` started the way systemd
// starts it for jitd.socket: a listening socket on descriptor 3 with
// LISTEN_PID/LISTEN_FDS, which a client then reaches.
#include "daemon/listen_fds.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "libclient/client.h"

#ifndef JITD_BINARY
#error "JITD_BINARY must name the jitd executable"
#endif

namespace jitd::daemon {
namespace {

// A fresh private directory for one test's socket.
std::string TempDir() {
  std::string pattern = "/tmp/jitd-listen-fds-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) return "";
  return pattern;
}

// A Unix stream socket bound at `path`, listening when `listen` is set.
int BoundSocket(const std::string& path, bool listen) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return -1;
  if (listen && ::listen(fd, 16) != 0) return -1;
  return fd;
}

// Runs `body` in a child whose descriptor 3 is `fd` and whose LISTEN_*
// variables name it, as systemd would set them; the child's exit code.
template <typename Body>
int InChildWithFd3(int fd, const char* count, Body body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (fd != 3 && ::dup2(fd, 3) < 0) ::_exit(90);
    ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
    ::setenv("LISTEN_FDS", count, 1);
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

TEST(ListenFds, NoneWithoutOrForAnotherProcess) {
  ::unsetenv("LISTEN_PID");
  ::unsetenv("LISTEN_FDS");
  StatusOr<UniqueFd> none = TakeListenFd();
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->valid());
  ::setenv("LISTEN_PID", std::to_string(::getpid() + 1).c_str(), 1);
  ::setenv("LISTEN_FDS", "1", 1);
  none = TakeListenFd();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->valid());
  ::unsetenv("LISTEN_PID");
  ::unsetenv("LISTEN_FDS");
}

TEST(ListenFds, TakesTheListeningSocketAndClearsTheEnvironment) {
  const std::string dir = TempDir();
  const std::string path = dir + "/s.sock";
  int fd = BoundSocket(path, /*listen=*/true);
  ASSERT_GE(fd, 0);
  int code = InChildWithFd3(fd, "1", [&] {
    StatusOr<UniqueFd> taken = TakeListenFd();
    if (!taken.ok() || taken->get() != kListenFdsStart) return 1;
    if (BoundSocketPath(taken->get()) != path) return 2;
    if (std::getenv("LISTEN_PID") != nullptr || std::getenv("LISTEN_FDS") != nullptr) return 3;
    return 0;
  });
  EXPECT_EQ(code, 0);
  ::close(fd);
  std::filesystem::remove_all(dir);
}

TEST(ListenFds, RefusesSeveralOrANonListeningSocket) {
  const std::string dir = TempDir();
  int idle = BoundSocket(dir + "/idle.sock", /*listen=*/false);
  ASSERT_GE(idle, 0);
  EXPECT_EQ(InChildWithFd3(idle, "1",
                           [] {
                             StatusOr<UniqueFd> taken = TakeListenFd();
                             return !taken.ok() && taken.status().code() ==
                                                       StatusCode::kInvalidArgument
                                        ? 0
                                        : 1;
                           }),
            0);
  EXPECT_EQ(InChildWithFd3(idle, "2", [] { return TakeListenFd().ok() ? 1 : 0; }), 0);
  ::close(idle);
  std::filesystem::remove_all(dir);
}

// The daemon adopts the socket: a client connects and compiles through it,
// and on SIGTERM the daemon leaves the socket file (systemd's) in place.
TEST(ListenFds, DaemonServesAnInheritedSocket) {
  const std::string dir = TempDir();
  const std::string path = dir + "/jitd.sock";
  int fd = BoundSocket(path, /*listen=*/true);
  ASSERT_GE(fd, 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::dup2(fd, 3) < 0) ::_exit(90);
    ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
    ::setenv("LISTEN_FDS", "1", 1);
    ::execl(JITD_BINARY, JITD_BINARY, "serve", "--no-disk-cache", "--log-level", "error",
            static_cast<char*>(nullptr));
    ::_exit(91);
  }
  ASSERT_GT(pid, 0);
  ::close(fd);  // the daemon holds the only copy now
  // The backlog queues the connection even before the daemon accepts.
  StatusOr<std::unique_ptr<client::Client>> client = client::Client::Connect(path);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto exe = (*client)->Compile(
      "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
      "  %0 = stablehlo.add %a, %a : tensor<2xf32>\n"
      "  return %0 : tensor<2xf32>\n}\n");
  EXPECT_TRUE(exe.ok()) << exe.status().ToString();
  client->reset();
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(std::filesystem::exists(path)) << "the daemon removed the activator's socket";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace jitd::daemon
