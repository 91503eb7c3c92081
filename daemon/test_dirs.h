// Scratch directories for the daemon tests (tests only).
#ifndef JITD_DAEMON_TEST_DIRS_H_
#define JITD_DAEMON_TEST_DIRS_H_

#include <unistd.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace jitd::daemon::testing {

// `<temp dir>/jitd_<name>_<pid>`, emptied (removed if it was there, not
// created): a disk cache directory of a test of its own.
inline std::string FreshTempDir(std::string_view name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("jitd_" + std::string(name) + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

}  // namespace jitd::daemon::testing

#endif  // JITD_DAEMON_TEST_DIRS_H_
