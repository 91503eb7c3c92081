// Runs the C API test (c_api_test.c) against a real daemon.
//
//   jitd_c_api_test_driver JITD_BINARY C_API_TEST_BINARY
//
// Starts `JITD_BINARY serve` on a socket in a fresh temp directory, waits (up
// to 10 s) until it accepts connections, runs `C_API_TEST_BINARY SOCKET` with
// a 60 s deadline, then always stops the daemon (SIGTERM, SIGKILL after 10 s)
// and removes the directory. Exits with the test's exit code (1 when
// something around it failed). No wait here is unbounded.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "base/process.h"

namespace {

using jitd::SpawnProcess;
using jitd::UnixSocketAccepts;
using jitd::WaitForExit;

using namespace std::chrono_literals;

int Run(const std::string& jitd, const std::string& test, const std::string& dir) {
  const std::string socket_path = dir + "/run/jitd.sock";
  const std::string autostart_socket = dir + "/auto/jitd.sock";
  pid_t daemon = SpawnProcess({jitd, "serve", "--socket", socket_path, "--log-level", "error",
                               "--cache-dir", dir + "/cache", "--segment-bytes", "8388608"});
  if (daemon < 0) {
    std::perror("fork");
    return 1;
  }
  int code = 1;
  bool up = false;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!up && std::chrono::steady_clock::now() < deadline) {
    int status;
    if (::waitpid(daemon, &status, WNOHANG) != 0) {
      std::fprintf(stderr, "driver: jitd serve exited at start\n");
      return 1;
    }
    up = UnixSocketAccepts(socket_path);
    if (!up) std::this_thread::sleep_for(20ms);
  }
  if (!up) {
    std::fprintf(stderr, "driver: jitd serve did not come up on %s\n", socket_path.c_str());
  } else {
    // The daemon the test starts by itself: its binary found beside
    // libjitd.so (../bin/jitd), its disk cache in the temp directory.
    ::setenv("XDG_CACHE_HOME", (dir + "/xdg_cache").c_str(), 1);
    ::unsetenv("JITD_BINARY");
    pid_t child = SpawnProcess({test, socket_path, autostart_socket});
    const int status = child < 0 ? -1 : WaitForExit(child, 60s);
    if (status >= 0 && WIFEXITED(status)) {
      code = WEXITSTATUS(status);
    } else {
      std::fprintf(stderr, "driver: %s crashed or timed out (wait status %d)\n", test.c_str(),
                   status);
    }
  }
  // The daemon the test started (detached: not our child) goes by its pid.
  {
    FILE* f = std::fopen((dir + "/auto/jitd.pid").c_str(), "r");
    int pid = 0;
    if (f != nullptr && std::fscanf(f, "%d", &pid) == 1 && pid > 0) {
      ::kill(pid, SIGTERM);
      for (int i = 0; i < 200 && jitd::ProcessAlive(pid); ++i) std::this_thread::sleep_for(10ms);
      if (jitd::ProcessAlive(pid)) {
        std::fprintf(stderr, "driver: the started daemon ignored SIGTERM\n");
        ::kill(pid, SIGKILL);
        if (code == 0) code = 1;
      }
    } else if (code == 0) {
      std::fprintf(stderr, "driver: the test started no daemon (no %s/auto/jitd.pid)\n",
                   dir.c_str());
      code = 1;
    }
    if (f != nullptr) std::fclose(f);
  }
  ::kill(daemon, SIGTERM);
  const int daemon_status = WaitForExit(daemon, 10s);
  if (daemon_status < 0 || !WIFEXITED(daemon_status) || WEXITSTATUS(daemon_status) != 0) {
    std::fprintf(stderr, "driver: jitd serve did not exit cleanly on SIGTERM (status %d)\n",
                 daemon_status);
    if (code == 0) code = 1;
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s JITD_BINARY C_API_TEST_BINARY\n", argv[0]);
    return 2;
  }
  const std::string dir = "/tmp/jitd_c_api_" + std::to_string(::getpid());
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  std::filesystem::create_directories(dir, ignored);
  const int code = Run(argv[1], argv[2], dir);
  std::filesystem::remove_all(dir, ignored);
  return code;
}
