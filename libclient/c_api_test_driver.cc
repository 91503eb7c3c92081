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
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

pid_t SpawnProcess(std::vector<std::string> args) {
  pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    std::perror("execv");
    ::_exit(127);
  }
  return pid;
}

// The wait status of `pid`, or -1 after SIGKILLing it when it outlives
// `timeout`.
int WaitFor(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return -1;
    std::this_thread::sleep_for(5ms);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return -1;
}

bool Accepts(const std::string& socket_path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof(addr.sun_path) - 1);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

int Run(const std::string& jitd, const std::string& test, const std::string& dir) {
  const std::string socket_path = dir + "/run/jitd.sock";
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
    up = Accepts(socket_path);
    if (!up) std::this_thread::sleep_for(20ms);
  }
  if (!up) {
    std::fprintf(stderr, "driver: jitd serve did not come up on %s\n", socket_path.c_str());
  } else {
    pid_t child = SpawnProcess({test, socket_path});
    const int status = child < 0 ? -1 : WaitFor(child, 60s);
    if (status >= 0 && WIFEXITED(status)) {
      code = WEXITSTATUS(status);
    } else {
      std::fprintf(stderr, "driver: %s crashed or timed out (wait status %d)\n", test.c_str(),
                   status);
    }
  }
  ::kill(daemon, SIGTERM);
  const int daemon_status = WaitFor(daemon, 10s);
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
