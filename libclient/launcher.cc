#include "libclient/launcher.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/process.h"
#include "base/unique_fd.h"
#include "ipc/fd_passing.h"
#include "libclient/remote_link.h"

namespace jitd::client {
namespace {

using Clock = std::chrono::steady_clock;

Status Unavailable(std::string message) {
  return Status(StatusCode::kUnavailable, std::move(message));
}

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Reads exactly `size` bytes unless EOF comes first; returns the count read.
size_t ReadFull(int fd, void* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, static_cast<char*>(data) + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

}  // namespace

bool AutostartDisabled() {
  const char* value = std::getenv("JITD_NO_AUTOSTART");
  return value != nullptr && *value != '\0' && std::strcmp(value, "0") != 0;
}

std::string DaemonAnnouncement(pid_t pid, const std::string& socket_path,
                               const std::string& log_path) {
  return "jitd: started a daemon (pid " + std::to_string(pid) + ") at " + socket_path +
         "; log " + log_path + "; stop it with `jitd stop` (JITD_NO_AUTOSTART=1: never start one)";
}

StatusOr<std::string> FindJitdBinary() {
  std::string tried;
  if (const char* env = std::getenv("JITD_BINARY"); env != nullptr && *env != '\0') {
    if (IsExecutableFile(env)) return std::string(env);
    return Status(StatusCode::kFailedPrecondition,
                  std::string("$JITD_BINARY is ") + env + ", which is not an executable file");
  }
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&FindJitdBinary), &info) != 0 &&
      info.dli_fname != nullptr && info.dli_fname[0] != '\0') {
    std::error_code ec;
    std::filesystem::path object = std::filesystem::canonical(info.dli_fname, ec);
    if (!ec) {
      const std::string candidate =
          (object.parent_path().parent_path() / "bin" / "jitd").lexically_normal().string();
      if (IsExecutableFile(candidate)) return candidate;
      tried += candidate + ", ";
    }
  }
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::string_view rest(path);
    while (true) {
      const size_t colon = rest.find(':');
      std::string dir(rest.substr(0, colon));
      if (dir.empty()) dir = ".";
      const std::string candidate = dir + "/jitd";
      if (IsExecutableFile(candidate)) return candidate;
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  return Status(StatusCode::kFailedPrecondition,
                "cannot find the jitd binary to start a daemon (tried $JITD_BINARY, " + tried +
                    "and jitd on $PATH); set JITD_BINARY or start `jitd serve` yourself");
}

std::string DaemonPidFilePath(const std::string& socket_path) {
  return (std::filesystem::path(socket_path).parent_path() / "jitd.pid").string();
}

bool IsJitdDaemonProcess(pid_t pid) {
  if (pid <= 1 || pid == ::getpid() || !ProcessAlive(pid)) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::vector<std::string> argv;
  for (std::string arg; std::getline(in, arg, '\0');) argv.push_back(arg);
  if (argv.empty() ||
      std::filesystem::path(argv[0]).filename().string().rfind("jitd", 0) != 0) {
    return false;
  }
  return std::find(argv.begin() + 1, argv.end(), "serve") != argv.end();
}

StatusOr<pid_t> FindDaemonPid(const std::string& socket_path) {
  sockaddr_un addr{};
  pid_t listener = 0;  // the socket's peer when it answers but is no jitd serve
  if (!socket_path.empty() && socket_path.size() < sizeof(addr.sun_path)) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
    if (fd.valid() && ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      StatusOr<ipc::UnixCredentials> peer = ipc::PeerCredentials(fd.get());
      if (peer.ok() && IsJitdDaemonProcess(peer->pid)) return peer->pid;
      if (peer.ok()) listener = peer->pid;
    }
  }
  pid_t written = 0;
  if (std::ifstream(DaemonPidFilePath(socket_path)) >> written && IsJitdDaemonProcess(written)) {
    return written;
  }
  if (listener > 0) {
    return Status(StatusCode::kFailedPrecondition,
                  "the socket " + socket_path + " answers, but its listener (pid " +
                      std::to_string(listener) +
                      ") is no `jitd serve` and no jitd.pid beside it names one (a "
                      "socket-activated service? stop it with its service manager)");
  }
  return Status(StatusCode::kNotFound, "no jitd daemon at " + socket_path);
}

std::string LogTail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) {
    out += "\n  " + all[i];
  }
  return out;
}

StatusOr<pid_t> StartDaemon(const std::string& binary, const std::string& socket_path,
                            const std::vector<std::string>& serve_args) {
  const std::filesystem::path dir = std::filesystem::path(socket_path).parent_path();
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return Unavailable("cannot create the socket directory " + dir.string() + ": " +
                         ec.message());
    }
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::replace, ec);
  }
  const std::string log_path = (dir / "jitd.log").string();
  UniqueFd log_fd(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!log_fd.valid()) {
    return Unavailable("cannot open the daemon log " + log_path + ": " + std::strerror(errno));
  }
  // Everything the children need is prepared here: after fork() only
  // async-signal-safe calls.
  std::vector<std::string> argv_strings = {binary, "serve", "--socket", socket_path};
  argv_strings.insert(argv_strings.end(), serve_args.begin(), serve_args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return Unavailable(std::string("pipe2(): ") + std::strerror(errno));
  }
  UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t child = ::fork();
  if (child < 0) {
    if (null_fd >= 0) ::close(null_fd);
    return Unavailable(std::string("fork(): ") + std::strerror(errno));
  }
  if (child == 0) {
    // The intermediate child: a new session, then the daemon as its child,
    // whose pid goes through the pipe; exiting at once hands the daemon to
    // init (or the nearest subreaper).
    ::setsid();
    const pid_t daemon = ::fork();
    if (daemon != 0) {
      const int32_t value = daemon;  // -1 when the fork failed
      (void)!::write(write_end.get(), &value, sizeof(value));
      ::_exit(0);
    }
    // The daemon-to-be: plain signal state, stdio redirected, no other fd
    // but the pipe (close-on-exec: closed by a successful exec).
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD, SIGQUIT}) ::sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (null_fd >= 0) {
      ::dup2(null_fd, STDIN_FILENO);
      ::dup2(null_fd, STDOUT_FILENO);
    }
    ::dup2(log_fd.get(), STDERR_FILENO);
    const unsigned keep = static_cast<unsigned>(write_end.get());
    if (keep > 3) ::close_range(3, keep - 1, 0);
    ::close_range(keep + 1, ~0U, 0);
    ::execv(argv[0], argv.data());
    const int32_t error = errno;
    (void)!::write(write_end.get(), &error, sizeof(error));
    ::_exit(127);
  }
  if (null_fd >= 0) ::close(null_fd);
  write_end.Reset();
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  int32_t daemon = -1;
  if (ReadFull(read_end.get(), &daemon, sizeof(daemon)) != sizeof(daemon) || daemon <= 0) {
    return Unavailable("cannot start " + binary + ": fork() failed");
  }
  int32_t exec_error = 0;
  if (ReadFull(read_end.get(), &exec_error, sizeof(exec_error)) == sizeof(exec_error)) {
    return Unavailable("cannot start " + binary + ": exec failed: " + std::strerror(exec_error));
  }
  return static_cast<pid_t>(daemon);
}

StatusOr<std::unique_ptr<Client>> ConnectOrStart(const std::string& socket_path,
                                                 const ClientOptions& options,
                                                 const LaunchOptions& launch) {
  StatusOr<std::unique_ptr<Client>> client = Client::Connect(socket_path, options);
  // A remote daemon (tcp://) is never ours to start.
  if (client.ok() || client.status().code() != StatusCode::kUnavailable || !launch.start ||
      IsRemoteAddress(socket_path)) {
    return client;
  }
  if (AutostartDisabled()) {
    return Unavailable(client.status().message() +
                       " (JITD_NO_AUTOSTART is set: no daemon was started)");
  }
  std::string binary = launch.jitd_binary;
  if (binary.empty()) {
    StatusOr<std::string> found = FindJitdBinary();
    if (!found.ok()) {
      return Unavailable(client.status().message() + "; and no daemon could be started: " +
                         found.status().message());
    }
    binary = *std::move(found);
  }
  JITD_ASSIGN_OR_RETURN(pid_t pid, StartDaemon(binary, socket_path, launch.serve_args));
  const std::filesystem::path dir = std::filesystem::path(socket_path).parent_path();
  const std::string log_path = (dir / "jitd.log").string();
  const Clock::time_point deadline = Clock::now() + launch.wait;
  std::chrono::milliseconds backoff(2);
  bool exited = false;
  for (;;) {
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
    client = Client::Connect(socket_path, options);
    if (client.ok()) {
      // Ours is the daemon that answers unless it exited (another won). It
      // writes jitd.pid itself.
      if (launch.announce && ProcessAlive(pid)) {
        std::fprintf(stderr, "%s\n", DaemonAnnouncement(pid, socket_path, log_path).c_str());
      }
      return client;
    }
    if (client.status().code() != StatusCode::kUnavailable) return client;
    if (exited || Clock::now() >= deadline) break;
    // It exited: maybe another process's daemon owns the socket; one more
    // try (after the backoff) tells.
    if (!ProcessAlive(pid)) exited = true;
  }
  const std::string why =
      exited ? "it exited at start" : "it did not answer within " +
                                          std::to_string(launch.wait.count()) + " ms";
  return Unavailable("no jitd daemon at " + socket_path + ", and the one started for it (" +
                     binary + ") failed: " + why + "; its log " + log_path +
                     " ends with:" + LogTail(log_path));
}

}  // namespace jitd::client
