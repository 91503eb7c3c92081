// Runs the remote C API test (c_api_remote_test.c) against real daemons.
//
//   jitd_c_api_remote_test_driver JITD_BINARY C_API_REMOTE_TEST_BINARY
//
// In a fresh temp directory: writes a token file (mode 600, "alice" and a
// random token) and the client's token files; starts `JITD_BINARY serve
// --listen tcp://127.0.0.1:0 --insecure-loopback --token-file ...` and reads
// the port it bound from its log; holds a loopback port bound but not
// listening (the test's "nothing there"); when the `openssl` command works,
// makes a CA, a server certificate for 127.0.0.1, a client certificate
// "alice", and a rogue CA and client, and starts a second daemon with
// --tls-cert/--tls-key/--tls-client-ca. Then runs the test with the
// addresses and files (90 s deadline), always stops the daemons (SIGTERM,
// SIGKILL after 10 s; each must exit 0), prints their logs when anything
// failed, and removes the directory. Exits with the test's exit code (1 when
// something around it failed). No wait here is unbounded.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/process.h"

namespace {

using jitd::SpawnProcess;
using jitd::UnixSocketAccepts;
using jitd::WaitForExit;
using namespace std::chrono_literals;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `command` through /bin/sh in `dir`, its output appended to `log`; true
// when it exits 0 within 30 s.
bool Shell(const std::string& dir, const std::string& command, const std::string& log) {
  pid_t pid = SpawnProcess({"/bin/sh", "-c", "cd '" + dir + "' && " + command}, log);
  if (pid < 0) return false;
  const int status = WaitForExit(pid, 30s);
  return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// 32 random bytes as 64 hex digits.
std::optional<std::string> RandomToken() {
  std::ifstream random("/dev/urandom", std::ios::binary);
  unsigned char bytes[32];
  if (!random.read(reinterpret_cast<char*>(bytes), sizeof(bytes))) return std::nullopt;
  std::string hex;
  for (unsigned char b : bytes) {
    static const char kDigits[] = "0123456789abcdef";
    hex += kDigits[b >> 4];
    hex += kDigits[b & 15];
  }
  return hex;
}

bool WriteFile(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  return ::close(fd) == 0 && ok;
}

// A loopback TCP port bound by this process but not listening: a connect to
// it is refused, and nobody else can take the port while `fd` is open.
int BindDeadPort(uint16_t* out_port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return -1;
  }
  *out_port = ntohs(addr.sin_port);
  return fd;
}

// A `jitd serve` with a Unix socket and a TCP listener on a port the kernel
// picks (tcp://127.0.0.1:0), which the daemon names in its log.
class Daemon {
 public:
  Daemon(const std::string& jitd, const std::string& dir, const std::string& name,
         const std::vector<std::string>& remote_flags)
      : name_(name), socket_(dir + "/" + name + ".sock"), log_(dir + "/" + name + ".log") {
    std::vector<std::string> args = {jitd,           "serve",
                                     "--socket",     socket_,
                                     "--log-level",  "info",
                                     "--cache-dir",  dir + "/" + name + "-cache",
                                     "--default-device", "interpreter",
                                     "--segment-bytes", "33554432",
                                     "--listen",     "tcp://127.0.0.1:0"};
    args.insert(args.end(), remote_flags.begin(), remote_flags.end());
    pid_ = SpawnProcess(args, log_);
  }
  ~Daemon() { (void)Stop(); }

  // Waits (up to 20 s) for the log line naming the port and for the Unix
  // socket to accept; false (with why on stderr) when the daemon exited or
  // did not come up.
  bool WaitUntilUp() {
    const std::string marker = "serving remote clients on tcp://127.0.0.1:";
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (pid_ < 0 || ::waitpid(pid_, &status, WNOHANG) != 0) {
        std::fprintf(stderr, "driver: jitd serve (%s) exited at start\n", name_.c_str());
        pid_ = -1;
        return false;
      }
      if (port_ == 0) {
        const std::string log = ReadFile(log_);
        const size_t at = log.find(marker);
        if (at != std::string::npos) port_ = std::atoi(log.c_str() + at + marker.size());
      }
      if (port_ > 0 && UnixSocketAccepts(socket_)) return true;
      std::this_thread::sleep_for(20ms);
    }
    std::fprintf(stderr, "driver: jitd serve (%s) did not come up in 20 s\n", name_.c_str());
    return false;
  }

  // SIGTERM, then SIGKILL after 10 s; true when it exited 0 (or had
  // already been stopped).
  bool Stop() {
    if (pid_ < 0) return true;
    ::kill(pid_, SIGTERM);
    const int status = WaitForExit(pid_, 10s);
    pid_ = -1;
    if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "driver: jitd serve (%s) did not exit cleanly on SIGTERM (status %d)\n",
                   name_.c_str(), status);
      return false;
    }
    return true;
  }

  void PrintLog() const {
    std::string log = ReadFile(log_);
    if (log.size() > 8000) log = "...\n" + log.substr(log.size() - 8000);
    std::fprintf(stderr, "---- %s daemon log (%s) ----\n%s---- end ----\n", name_.c_str(),
                 log_.c_str(), log.c_str());
  }

  std::string address() const { return "tcp://127.0.0.1:" + std::to_string(port_); }
  const std::string& socket() const { return socket_; }

 private:
  std::string name_;
  std::string socket_;
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// The CA, server, client and rogue certificates in `dir`, as docs/REMOTE.md
// makes them; false when the openssl command is missing or fails.
bool MakeCertificates(const std::string& dir) {
  const std::string log = dir + "/openssl.log";
  const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  if (!WriteFile(dir + "/server.ext", "subjectAltName=DNS:localhost,IP:127.0.0.1\n", 0600) ||
      !WriteFile(dir + "/client.ext", "extendedKeyUsage=clientAuth\n", 0600)) {
    return false;
  }
  auto ca = [&](const std::string& name) {
    return Shell(dir,
                 "openssl req -x509 " + key + " -keyout " + name + ".key -out " + name +
                     ".pem -days 2 -subj '/CN=" + name + " test CA'",
                 log);
  };
  auto leaf = [&](const std::string& name, const std::string& issuer, const std::string& ext) {
    return Shell(dir,
                 "openssl req " + key + " -keyout " + name + ".key -out " + name +
                     ".csr -subj '/CN=" + name + "'",
                 log) &&
           Shell(dir,
                 "openssl x509 -req -in " + name + ".csr -CA " + issuer + ".pem -CAkey " + issuer +
                     ".key -CAcreateserial -days 2 -out " + name + ".pem -extfile " + ext,
                 log);
  };
  return ca("ca") && ca("rogue") && leaf("server", "ca", "server.ext") &&
         leaf("alice", "ca", "client.ext") && leaf("mallory", "rogue", "client.ext");
}

int Run(const std::string& jitd, const std::string& test, const std::string& dir) {
  const std::optional<std::string> token = RandomToken();
  const std::optional<std::string> wrong = RandomToken();
  if (!token || !wrong || !WriteFile(dir + "/tokens", "alice " + *token + "\n", 0600) ||
      !WriteFile(dir + "/alice.token", *token + "\n", 0600) ||
      !WriteFile(dir + "/wrong.token", *wrong + "\n", 0600)) {
    std::fprintf(stderr, "driver: cannot write the token files in %s\n", dir.c_str());
    return 1;
  }
  uint16_t dead_port = 0;
  const int dead_fd = BindDeadPort(&dead_port);
  if (dead_fd < 0) {
    std::perror("driver: binding a loopback port");
    return 1;
  }
  const bool tls = MakeCertificates(dir);
  if (!tls) {
    std::fprintf(stderr,
                 "driver: the openssl command could not make test certificates (%s/openssl.log); "
                 "the TLS part does not run\n",
                 dir.c_str());
  }

  Daemon plain(jitd, dir, "plain", {"--insecure-loopback", "--token-file", dir + "/tokens"});
  std::optional<Daemon> mtls;
  if (tls) {
    mtls.emplace(jitd, dir, "mtls",
                 std::vector<std::string>{"--tls-cert", dir + "/server.pem", "--tls-key",
                                          dir + "/server.key", "--tls-client-ca",
                                          dir + "/ca.pem"});
  }
  int code = 1;
  if (plain.WaitUntilUp() && (!mtls || mtls->WaitUntilUp())) {
    std::vector<std::string> args = {test,
                                     plain.address(),
                                     plain.socket(),
                                     dir + "/alice.token",
                                     dir + "/wrong.token",
                                     "tcp://127.0.0.1:" + std::to_string(dead_port)};
    if (mtls) {
      args.push_back(mtls->address());
      for (const char* file : {"ca.pem", "alice.pem", "alice.key", "rogue.pem", "mallory.pem",
                               "mallory.key"}) {
        args.push_back(dir + "/" + file);
      }
    }
    ::setenv("JITD_NO_AUTOSTART", "1", 1);
    const pid_t child = SpawnProcess(args);
    const int status = child < 0 ? -1 : WaitForExit(child, 90s);
    if (status >= 0 && WIFEXITED(status)) {
      code = WEXITSTATUS(status);
    } else {
      std::fprintf(stderr, "driver: %s crashed or timed out (wait status %d)\n", test.c_str(),
                   status);
    }
  }
  if (!plain.Stop() && code == 0) code = 1;
  if (mtls && !mtls->Stop() && code == 0) code = 1;
  ::close(dead_fd);
  if (code != 0) {
    plain.PrintLog();
    if (mtls) mtls->PrintLog();
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s JITD_BINARY C_API_REMOTE_TEST_BINARY\n", argv[0]);
    return 2;
  }
  char pattern[] = "/tmp/jitd-c-remote-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) {
    std::perror("driver: mkdtemp");
    return 1;
  }
  const std::string dir = pattern;
  const int code = Run(argv[1], argv[2], dir);
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return code;
}
