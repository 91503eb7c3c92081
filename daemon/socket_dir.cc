#include "daemon/socket_dir.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

namespace jitd::daemon {
namespace {

Status Precondition(std::string message) {
  return Status(StatusCode::kFailedPrecondition, std::move(message));
}

// "uid 1000 (alice)", or "uid 1000" when the name is unknown.
std::string Owner(uid_t uid) {
  std::string out = "uid " + std::to_string(uid);
  passwd entry{};
  passwd* found = nullptr;
  std::vector<char> buffer(4096);
  if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr &&
      found->pw_name != nullptr) {
    out += std::string(" (") + found->pw_name + ")";
  }
  return out;
}

// "0755" (permission and sticky/setuid bits only).
std::string Mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

constexpr char kWhereElse[] =
    "or choose another place for the socket with --socket, $JITD_SOCKET or $XDG_RUNTIME_DIR";

// Creates `dir` and its missing parents with mode 0700.
Status MakeDirs(const std::string& dir) {
  if (dir.empty()) return Status::Ok();
  struct stat st {};
  if (::lstat(dir.c_str(), &st) == 0) return Status::Ok();  // checked by the caller
  const std::string parent = std::filesystem::path(dir).parent_path().string();
  if (parent != dir) JITD_RETURN_IF_ERROR(MakeDirs(parent));
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Precondition("cannot create the socket directory " + dir + ": " +
                        std::strerror(errno));
  }
  return Status::Ok();
}

// The socket directory itself: a real directory of `uid` that nobody else
// can write.
Status CheckDir(const std::string& dir, uid_t uid) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    return Precondition("cannot inspect the socket directory " + dir + ": " +
                        std::strerror(errno));
  }
  if (S_ISLNK(st.st_mode)) {
    return Precondition("the socket directory " + dir + " is a symbolic link (owned by " +
                        Owner(st.st_uid) +
                        "); the daemon listens only in a real directory it owns: remove the "
                        "link, " + kWhereElse);
  }
  if (!S_ISDIR(st.st_mode)) {
    return Precondition("the socket directory " + dir + " exists and is not a directory; " +
                        "remove it, " + kWhereElse);
  }
  if (st.st_uid != uid) {
    return Precondition("the socket directory " + dir + " is owned by " + Owner(st.st_uid) +
                        " (mode " + Mode(st.st_mode) + "), not by this daemon's " + Owner(uid) +
                        ": another user may have created it to receive this user's clients. "
                        "Remove it (as its owner or root) so that the daemon creates its own, " +
                        kWhereElse);
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Precondition("the socket directory " + dir + " (owned by " + Owner(st.st_uid) +
                        ", mode " + Mode(st.st_mode) +
                        ") is writable by group or others, who could replace the socket: "
                        "`chmod go-w " + dir + "` (0700 is the default), " + kWhereElse);
  }
  return Status::Ok();
}

// Every ancestor of `dir` (symbolic links resolved): owned by `uid` or root,
// and not writable by group or others unless sticky.
Status CheckAncestors(const std::string& dir, uid_t uid) {
  char resolved[PATH_MAX];
  if (::realpath(dir.c_str(), resolved) == nullptr) {
    return Precondition("cannot resolve the socket directory " + dir + ": " +
                        std::strerror(errno));
  }
  std::filesystem::path path(resolved);
  for (std::filesystem::path p = path.parent_path();; p = p.parent_path()) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) {
      return Precondition("cannot inspect " + p.string() + " (an ancestor of the socket "
                          "directory " + dir + "): " + std::strerror(errno));
    }
    if (st.st_uid != uid && st.st_uid != 0) {
      return Precondition(p.string() + ", an ancestor of the socket directory " + dir +
                          ", is owned by " + Owner(st.st_uid) + " (mode " + Mode(st.st_mode) +
                          "), neither this daemon's " + Owner(uid) +
                          " nor root: its owner could replace the directory and the socket; " +
                          kWhereElse);
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
      return Precondition(p.string() + ", an ancestor of the socket directory " + dir +
                          " (owned by " + Owner(st.st_uid) + ", mode " + Mode(st.st_mode) +
                          "), is writable by group or others without the sticky bit, so they "
                          "could rename the directory and put their own in its place: "
                          "`chmod go-w` or `chmod +t` it, " + kWhereElse);
    }
    if (p == p.root_path() || p.parent_path() == p) break;
  }
  return Status::Ok();
}

}  // namespace

std::string DefaultSocketPath() {
  if (const char* env = std::getenv("JITD_SOCKET"); env != nullptr && *env != '\0') return env;
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && xdg[0] == '/') {
    return std::string(xdg) + "/jitd/jitd.sock";
  }
  return "/tmp/jitd-" + std::to_string(::getuid()) + "/jitd.sock";
}

Status PrepareSocketDir(const std::string& dir_in, uid_t uid) {
  const std::string dir = dir_in.empty() ? "." : dir_in;
  JITD_RETURN_IF_ERROR(MakeDirs(dir));
  JITD_RETURN_IF_ERROR(CheckDir(dir, uid));
  return CheckAncestors(dir, uid);
}

}  // namespace jitd::daemon
