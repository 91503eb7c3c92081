#include "libclient/launcher.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/unique_fd.h"

namespace jitd::client {
namespace {

// A fresh directory under the test's temp dir, removed at the end.
class LauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/jitd_launcher_test_XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    dir_ = templ;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(LauncherTest, AutostartDisabledReadsTheEnvironment) {
  const char* saved = std::getenv("JITD_NO_AUTOSTART");
  const std::string old = saved != nullptr ? saved : "";
  ::unsetenv("JITD_NO_AUTOSTART");
  EXPECT_FALSE(AutostartDisabled());
  ::setenv("JITD_NO_AUTOSTART", "", 1);
  EXPECT_FALSE(AutostartDisabled());
  ::setenv("JITD_NO_AUTOSTART", "0", 1);
  EXPECT_FALSE(AutostartDisabled());
  ::setenv("JITD_NO_AUTOSTART", "1", 1);
  EXPECT_TRUE(AutostartDisabled());
  ::setenv("JITD_NO_AUTOSTART", "yes", 1);
  EXPECT_TRUE(AutostartDisabled());
  if (saved != nullptr) ::setenv("JITD_NO_AUTOSTART", old.c_str(), 1);
  else ::unsetenv("JITD_NO_AUTOSTART");
}

TEST_F(LauncherTest, NoAutostartMakesConnectOrStartOnlyConnect) {
  ::setenv("JITD_NO_AUTOSTART", "1", 1);
  LaunchOptions launch;
  launch.jitd_binary = "/bin/false";  // never run
  StatusOr<std::unique_ptr<Client>> client =
      ConnectOrStart(dir_ + "/jitd.sock", ClientOptions{}, launch);
  ::unsetenv("JITD_NO_AUTOSTART");
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(client.status().message().find("JITD_NO_AUTOSTART is set"), std::string::npos)
      << client.status().message();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/jitd.log"));
}

TEST_F(LauncherTest, AnnouncementIsOneLineWithPidSocketAndLog) {
  const std::string line = DaemonAnnouncement(42, "/run/x/jitd.sock", "/run/x/jitd.log");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.rfind("jitd: started a daemon (pid 42) at /run/x/jitd.sock; log /run/x/jitd.log", 0),
            0u)
      << line;
  EXPECT_NE(line.find("jitd stop"), std::string::npos);
}

TEST_F(LauncherTest, PidFileSitsBesideTheSocket) {
  EXPECT_EQ(DaemonPidFilePath("/run/user/1/jitd/jitd.sock"), "/run/user/1/jitd/jitd.pid");
}

TEST_F(LauncherTest, FindDaemonPidIgnoresProcessesThatAreNoDaemon) {
  // No socket, no pid file.
  EXPECT_EQ(FindDaemonPid(dir_ + "/jitd.sock").status().code(), StatusCode::kNotFound);
  // A pid file naming this test (alive, but no `jitd serve`), or pid 1.
  for (pid_t pid : {::getpid(), pid_t{1}, getppid()}) {
    std::ofstream(DaemonPidFilePath(dir_ + "/jitd.sock")) << pid << "\n";
    EXPECT_EQ(FindDaemonPid(dir_ + "/jitd.sock").status().code(), StatusCode::kNotFound) << pid;
    EXPECT_FALSE(IsJitdDaemonProcess(pid)) << pid;
  }
}

TEST_F(LauncherTest, FindDaemonPidNamesASocketServedByAnotherProgram) {
  // This test listens on the socket: it answers, but is no jitd serve (as a
  // service manager holding a socket-activated unit's socket).
  const std::string socket_path = dir_ + "/jitd.sock";
  UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listener.get(), 4), 0);
  StatusOr<pid_t> found = FindDaemonPid(socket_path);
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(found.status().message().find("pid " + std::to_string(::getpid())), std::string::npos)
      << found.status().message();
}

}  // namespace
}  // namespace jitd::client
