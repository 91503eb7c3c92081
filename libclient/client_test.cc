// Unit tests of libclient that need no daemon (the daemon tests and
// tests/integration cover the round trips).
#include "libclient/client.h"

#include <grp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace jitd::client {
namespace {

TEST(ClientTest, ElementSizes) {
  EXPECT_EQ(ElementByteSize(wire::ElementType_F32), 4u);
  EXPECT_EQ(ElementByteSize(wire::ElementType_C128), 16u);
  EXPECT_EQ(ElementByteSize(wire::ElementType_S4), 1u);
  EXPECT_EQ(ElementByteSize(wire::ElementType_BF16), 2u);
  EXPECT_EQ(ElementByteSize(wire::ElementType_INVALID), 0u);
  EXPECT_EQ(ElementByteSize(static_cast<wire::ElementType>(200)), 0u);
}

TEST(ClientTest, ByteSize) {
  auto b = ByteSize({wire::ElementType_F64, {2, 3}});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, 48u);
  EXPECT_FALSE(ByteSize({wire::ElementType_F32, {-1}}).ok());
  EXPECT_FALSE(ByteSize({wire::ElementType_F32, {int64_t{1} << 40, int64_t{1} << 40}}).ok());
  EXPECT_FALSE(ByteSize({wire::ElementType_INVALID, {1}}).ok());
}

TEST(ClientTest, ShapeAndFingerprintText) {
  EXPECT_EQ((TensorShape{wire::ElementType_F32, {2, 4}}).ToString(), "f32[2,4]");
  Fingerprint f{};
  f[0] = 0xAB;
  f[15] = 0x01;
  EXPECT_EQ(FingerprintHex(f), "ab000000000000000000000000000001");
}

TEST(ClientTest, ConnectWithoutDaemonIsUnavailable) {
  auto c = Client::Connect("/tmp/jitd-client-test-nothing-here/jitd.sock");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(c.status().message().find("jitd serve"), std::string::npos);
  EXPECT_EQ(Client::Connect("").status().code(), StatusCode::kInvalidArgument);
}

// A "daemon" run by another user (uid 65534) listening where a client
// looks: a forked child that drops to nobody, binds `socket_path`, accepts
// one connection, reads it until the client closes (or 3 s pass) and exits
// with the number of bytes it received (capped at 200); 250 = it could not
// set up. The parent gets the child's pid once the socket listens.
pid_t StartImpostor(const std::string& dir, const std::string& socket_path) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(ready[0]);
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) {
      std::_Exit(250);
    }
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size());
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(fd, 4) != 0) {
      std::_Exit(250);
    }
    (void)!::write(ready[1], "r", 1);
    const int conn = ::accept(fd, nullptr, nullptr);
    if (conn < 0) std::_Exit(250);
    size_t received = 0;
    for (;;) {
      pollfd p{conn, POLLIN, 0};
      if (::poll(&p, 1, 3000) <= 0) break;
      char buf[256];
      const ssize_t n = ::read(conn, buf, sizeof(buf));
      if (n <= 0) break;
      received += static_cast<size_t>(n);
    }
    std::_Exit(static_cast<int>(std::min<size_t>(received, 200)));
  }
  ::close(ready[1]);
  char c;
  const bool ok = ::read(ready[0], &c, 1) == 1;
  ::close(ready[0]);
  (void)dir;
  return ok ? child : -1;
}

int WaitExit(pid_t child) {
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Issue 13, item 7: another user's process at the socket gets nothing; the
// client says who it is and how to trust it if that is meant.
TEST(ClientPeerTest, ADaemonOfAnotherUserIsRefusedBeforeAnythingIsSent) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the impostor as another user";
  const std::string dir = "/tmp/jitd_client_peer_test_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  ASSERT_EQ(::mkdir(dir.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);  // the impostor (nobody) binds in it
  const std::string socket_path = dir + "/jitd.sock";
  ::unsetenv("JITD_TRUST_DAEMON_UID");

  pid_t impostor = StartImpostor(dir, socket_path);
  ASSERT_GT(impostor, 0);
  auto refused = Client::Connect(socket_path);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied)
      << refused.status().ToString();
  const std::string& m = refused.status().message();
  EXPECT_NE(m.find("runs as uid 65534"), std::string::npos) << m;
  EXPECT_NE(m.find("pid " + std::to_string(impostor)), std::string::npos) << m;
  EXPECT_NE(m.find("JITD_TRUST_DAEMON_UID=65534"), std::string::npos) << m;
  EXPECT_EQ(WaitExit(impostor), 0) << "the impostor received bytes";

  // Told to trust that uid (the option, then the environment), the client
  // goes on: the impostor sends no handshake, so it ends UNAVAILABLE.
  for (int how = 0; how < 2; ++how) {
    std::filesystem::remove(socket_path);
    impostor = StartImpostor(dir, socket_path);
    ASSERT_GT(impostor, 0);
    ClientOptions options;
    options.connect_timeout = std::chrono::milliseconds(300);
    if (how == 0) {
      options.trusted_daemon_uids = {65534};
    } else {
      ::setenv("JITD_TRUST_DAEMON_UID", "12,65534", 1);
    }
    auto trusted = Client::Connect(socket_path, options);
    ::unsetenv("JITD_TRUST_DAEMON_UID");
    ASSERT_FALSE(trusted.ok());
    EXPECT_EQ(trusted.status().code(), StatusCode::kUnavailable) << trusted.status().ToString();
    EXPECT_NE(trusted.status().message().find("no handshake"), std::string::npos)
        << trusted.status().message();
    EXPECT_EQ(WaitExit(impostor), 0);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace jitd::client
