// A `jitd serve` child process for the integration tests, and forked client
// processes. Every wait here has a deadline.
#ifndef JITD_TESTS_INTEGRATION_DAEMON_PROCESS_H_
#define JITD_TESTS_INTEGRATION_DAEMON_PROCESS_H_

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/process.h"
#include "libclient/client.h"

namespace jitd::testing {

// Forks a client process running `body`; its return value is the exit code.
// The child dies with the test (PR_SET_PDEATHSIG), whatever it waits for.
inline pid_t Spawn(const std::function<int()>& body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    int code = 100;
    try {
      code = body();
    } catch (...) {
    }
    ::_exit(code);
  }
  return pid;
}

inline int ExitCode(int status) {
  return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Number `key` in a stats JSON (its first occurrence), or -1.
inline long StatNumber(const std::string& json, const std::string& key) {
  const std::string needle = "\"" + key + "\":";
  const size_t at = json.find(needle);
  return at == std::string::npos ? -1 : std::stol(json.substr(at + needle.size()));
}

// A field of /proc/PID/status in kB or as a count ("VmRSS", "Threads"), or -1.
inline long ProcStatus(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

// `jitd serve` on a socket in a fresh temporary directory; stopped (SIGTERM,
// then SIGKILL past a deadline) when destroyed.
class DaemonProcess {
 public:
  explicit DaemonProcess(std::string binary) : binary_(std::move(binary)) {
    static int counter = 0;
    dir_ = "/tmp/jitd_it_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    socket_ = dir_ + "/run/jitd.sock";
    cache_dir_ = dir_ + "/cache";
  }
  ~DaemonProcess() {
    Stop();
    std::filesystem::remove_all(dir_);
  }
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  // Starts it with `extra` flags after the socket and logging ones and
  // waits (up to 10 s) until it accepts clients; false if it did not.
  bool Start(const std::vector<std::string>& extra, bool disk_cache = true) {
    if (pid_ >= 0) return false;
    pid_ = ::fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      std::vector<std::string> args = {binary_, "serve", "--socket", socket_, "--log-level",
                                       "error"};
      if (disk_cache) {
        args.insert(args.end(), {"--cache-dir", cache_dir_});
      } else {
        args.push_back("--no-disk-cache");
      }
      args.insert(args.end(), extra.begin(), extra.end());
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(binary_.c_str(), argv.data());
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (client::Client::Connect(socket_).ok()) return true;
      int status;
      if (::waitpid(pid_, &status, WNOHANG) != 0) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // SIGTERM, and the daemon's wait status (-1 when it had to be killed).
  int Stop() {
    if (pid_ < 0) return -1;
    ::kill(pid_, SIGTERM);
    const int status = WaitForExit(pid_, std::chrono::seconds(10));
    pid_ = -1;
    return status;
  }
  void Kill() {
    if (pid_ < 0) return;
    ::kill(pid_, SIGKILL);
    WaitForExit(pid_, std::chrono::seconds(10));
    pid_ = -1;
  }

  pid_t pid() const { return pid_; }
  const std::string& dir() const { return dir_; }
  const std::string& socket() const { return socket_; }
  const std::string& cache_dir() const { return cache_dir_; }

 private:
  std::string binary_;
  std::string dir_, socket_, cache_dir_;
  pid_t pid_ = -1;
};

}  // namespace jitd::testing

#endif  // JITD_TESTS_INTEGRATION_DAEMON_PROCESS_H_
