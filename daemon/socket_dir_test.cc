// The socket directory checks (issue 13, item 7): a directory another user
// created or can write is refused, by PrepareSocketDir and by Server::Create.
#include "daemon/socket_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "daemon/server.h"

namespace jitd::daemon {
namespace {

constexpr uid_t kNobody = 65534;

class SocketDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = "/tmp/jitd_socket_dir_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(base_);
    ASSERT_EQ(::mkdir(base_.c_str(), 0700), 0);
  }
  void TearDown() override { std::filesystem::remove_all(base_); }

  // A directory `name` under the base with `mode` (chmod, so umask does not
  // interfere).
  std::string MakeDir(const std::string& name, mode_t mode) {
    const std::string dir = base_ + "/" + name;
    EXPECT_EQ(::mkdir(dir.c_str(), 0700), 0) << dir;
    EXPECT_EQ(::chmod(dir.c_str(), mode), 0) << dir;
    return dir;
  }

  // Server::Create on `socket_path`; its status.
  static Status CreateServer(const std::string& socket_path) {
    auto instance = Instance::Create({});
    if (!instance.ok()) return instance.status();
    ServerOptions options;
    options.socket_path = socket_path;
    options.handle_signals = false;
    options.log_level = 0;
    options.session.segment_bytes = 8 << 20;
    return Server::Create(instance->get(), options).status();
  }

  std::string base_;
};

TEST(DefaultSocketPathTest, EnvironmentThenRuntimeDirThenTmp) {
  const char* saved_socket = std::getenv("JITD_SOCKET");
  const char* saved_xdg = std::getenv("XDG_RUNTIME_DIR");
  const std::string keep_socket = saved_socket ? saved_socket : "";
  const std::string keep_xdg = saved_xdg ? saved_xdg : "";
  ::setenv("JITD_SOCKET", "/x/y.sock", 1);
  ::setenv("XDG_RUNTIME_DIR", "/run/user/7", 1);
  EXPECT_EQ(DefaultSocketPath(), "/x/y.sock");
  ::unsetenv("JITD_SOCKET");
  EXPECT_EQ(DefaultSocketPath(), "/run/user/7/jitd/jitd.sock");
  ::setenv("XDG_RUNTIME_DIR", "relative", 1);
  EXPECT_EQ(DefaultSocketPath(), "/tmp/jitd-" + std::to_string(::getuid()) + "/jitd.sock");
  ::unsetenv("XDG_RUNTIME_DIR");
  EXPECT_EQ(DefaultSocketPath(), "/tmp/jitd-" + std::to_string(::getuid()) + "/jitd.sock");
  if (saved_socket) ::setenv("JITD_SOCKET", keep_socket.c_str(), 1);
  if (saved_xdg) ::setenv("XDG_RUNTIME_DIR", keep_xdg.c_str(), 1);
}

TEST_F(SocketDirTest, CreatesMissingDirectoriesPrivate) {
  const std::string dir = base_ + "/a/b";
  ASSERT_TRUE(PrepareSocketDir(dir, ::geteuid()).ok());
  for (const std::string& d : {base_ + "/a", dir}) {
    struct stat st {};
    ASSERT_EQ(::stat(d.c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0700u) << d;
    EXPECT_EQ(st.st_uid, ::geteuid());
  }
  // Once made, it stays acceptable; so does a directory others may read.
  EXPECT_TRUE(PrepareSocketDir(dir, ::geteuid()).ok());
  EXPECT_TRUE(PrepareSocketDir(MakeDir("readable", 0755), ::geteuid()).ok());
}

TEST_F(SocketDirTest, WritableByOthersIsRefused) {
  for (mode_t mode : {0777, 0770, 0722, 01777}) {
    const std::string dir = MakeDir("w" + std::to_string(mode), mode);
    Status s = PrepareSocketDir(dir, ::geteuid());
    ASSERT_FALSE(s.ok()) << std::oct << mode;
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(s.message().find(dir), std::string::npos) << s.message();
    char octal[8];
    std::snprintf(octal, sizeof(octal), "%04o", static_cast<unsigned>(mode));
    EXPECT_NE(s.message().find(std::string("mode ") + octal), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("chmod go-w"), std::string::npos) << s.message();
  }
}

// Without root: a daemon of another uid finds this process's directory
// foreign (the same check as a directory another user made).
TEST_F(SocketDirTest, DirectoryOfAnotherUidIsRefused) {
  const std::string dir = MakeDir("theirs", 0700);
  const uid_t daemon_uid = ::geteuid() + 1;
  Status s = PrepareSocketDir(dir, daemon_uid);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("owned by uid " + std::to_string(::geteuid())), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("not by this daemon's uid " + std::to_string(daemon_uid)),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("Remove it"), std::string::npos) << s.message();
}

TEST_F(SocketDirTest, SymbolicLinkIsRefused) {
  const std::string target = MakeDir("target", 0700);
  const std::string link = base_ + "/link";
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  Status s = PrepareSocketDir(link, ::geteuid());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("symbolic link"), std::string::npos) << s.message();
  // A symbolic link among the ancestors is resolved, not refused.
  const std::string parent_link = base_ + "/parent_link";
  ASSERT_EQ(::symlink(base_.c_str(), parent_link.c_str()), 0);
  EXPECT_TRUE(PrepareSocketDir(parent_link + "/target", ::geteuid()).ok());
}

TEST_F(SocketDirTest, AFileIsRefused) {
  const std::string file = base_ + "/file";
  FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  Status s = PrepareSocketDir(file, ::geteuid());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not a directory"), std::string::npos) << s.message();
}

TEST_F(SocketDirTest, AncestorWritableByOthersNeedsTheStickyBit) {
  const std::string open_parent = MakeDir("open", 0777);
  Status s = PrepareSocketDir(open_parent + "/jitd", ::geteuid());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(open_parent + ", an ancestor"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("mode 0777"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("sticky"), std::string::npos) << s.message();
  // Like /tmp: writable by all, sticky.
  const std::string sticky = MakeDir("sticky", 01777);
  EXPECT_TRUE(PrepareSocketDir(sticky + "/jitd", ::geteuid()).ok());
}

// As root: real foreign owners (uid 65534), as another local user would leave
// them in /tmp.
TEST_F(SocketDirTest, DirectoryOwnedByAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown a directory to another user";
  const std::string dir = MakeDir("nobody", 0700);
  ASSERT_EQ(::chown(dir.c_str(), kNobody, kNobody), 0);
  Status s = PrepareSocketDir(dir, ::geteuid());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("owned by uid 65534"), std::string::npos) << s.message();
  // An ancestor owned by that user is refused too.
  const std::string below = dir + "/jitd";
  ASSERT_EQ(::mkdir(below.c_str(), 0700), 0);
  s = PrepareSocketDir(below, ::geteuid());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(dir + ", an ancestor"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("owned by uid 65534"), std::string::npos) << s.message();
}

// The attack of item 7: another user created the daemon's directory first
// (the /tmp/jitd-$UID fallback) with their own socket inside. The daemon
// refuses to start there and touches nothing.
TEST_F(SocketDirTest, ServerRefusesADirectoryAnotherUserCreated) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown a directory to another user";
  const std::string dir = MakeDir("jitd-0", 0777);
  ASSERT_EQ(::chown(dir.c_str(), kNobody, kNobody), 0);
  Status s = CreateServer(dir + "/jitd.sock");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("the socket directory " + dir + " is owned by uid 65534"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("mode 0777"), std::string::npos) << s.message();
  EXPECT_FALSE(std::filesystem::exists(dir + "/jitd.sock"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/jitd.sock.lock"));
}

TEST_F(SocketDirTest, ServerRefusesAWorldWritableDirectory) {
  const std::string dir = MakeDir("open_dir", 0777);
  Status s = CreateServer(dir + "/jitd.sock");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("writable by group or others"), std::string::npos) << s.message();
  EXPECT_FALSE(std::filesystem::exists(dir + "/jitd.sock"));
  // Made private, the same directory is fine.
  ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
  EXPECT_TRUE(CreateServer(dir + "/jitd.sock").ok());
}

}  // namespace
}  // namespace jitd::daemon
