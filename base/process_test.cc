#include "base/process.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace jitd {
namespace {

using namespace std::chrono_literals;

// A fresh directory under /tmp, removed when the test ends.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/jitd-process-test-XXXXXX";
    if (::mkdtemp(pattern) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int ExitCode(int wait_status) { return wait_status >= 0 && WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1; }

TEST(ProcessTest, SpawnRunsTheArgumentsAndAppendsBothStreamsToTheOutputFile) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty()) << std::strerror(errno);
  const std::string log = dir.path() + "/out.log";
  {
    std::ofstream before(log);
    before << "before\n";
  }
  const pid_t pid = SpawnProcess({"/bin/sh", "-c", "echo \"out $1\"; echo err >&2; exit 3", "sh", "a b"}, log);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(ExitCode(WaitForExit(pid, 10s)), 3);
  EXPECT_EQ(ReadFile(log), "before\nout a b\nerr\n");  // appended, not truncated
}

TEST(ProcessTest, SpawnCreatesTheOutputFileOwnerOnly) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string log = dir.path() + "/new.log";
  const pid_t pid = SpawnProcess({"/bin/sh", "-c", "echo made"}, log);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(ExitCode(WaitForExit(pid, 10s)), 0);
  EXPECT_EQ(ReadFile(log), "made\n");
  const auto mode = std::filesystem::status(log).permissions() & std::filesystem::perms::all;
  EXPECT_EQ(mode & (std::filesystem::perms::group_all | std::filesystem::perms::others_all),
            std::filesystem::perms::none);
}

TEST(ProcessTest, SpawnWithoutAnOutputFileRunsTheProgram) {
  const pid_t pid = SpawnProcess({"/bin/sh", "-c", "exit 0"});
  ASSERT_GT(pid, 0);
  EXPECT_EQ(ExitCode(WaitForExit(pid, 10s)), 0);
}

TEST(ProcessTest, SpawnOfAMissingProgramExits127AndSaysWhy) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string log = dir.path() + "/missing.log";
  const pid_t pid = SpawnProcess({dir.path() + "/no-such-program", "x"}, log);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(ExitCode(WaitForExit(pid, 10s)), 127);
  EXPECT_NE(ReadFile(log).find("execv"), std::string::npos) << ReadFile(log);
}

TEST(ProcessTest, SpawnOfNoArgumentsIsRefused) {
  errno = 0;
  EXPECT_EQ(SpawnProcess({}), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST(ProcessTest, WaitForExitKillsAChildThatOutlivesTheTimeout) {
  // sleep itself, not a shell around it: a shell's child would outlive the
  // kill and hold ctest's output pipe open for the whole 30 s.
  const pid_t pid = SpawnProcess({"/bin/sleep", "30"});
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(ProcessAlive(pid));
  EXPECT_EQ(WaitForExit(pid, 50ms), -1);
  EXPECT_FALSE(ProcessAlive(pid));
}

TEST(ProcessTest, UnixSocketAcceptsOnlyWhileSomethingListens) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.path() + "/s.sock";
  EXPECT_FALSE(UnixSocketAccepts(path));  // nothing there
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << std::strerror(errno);
  EXPECT_FALSE(UnixSocketAccepts(path));  // bound, not listening
  ASSERT_EQ(::listen(fd, 4), 0);
  EXPECT_TRUE(UnixSocketAccepts(path));
  ::close(fd);
  EXPECT_FALSE(UnixSocketAccepts(path));  // the file stays, the listener is gone
}

}  // namespace
}  // namespace jitd
