#include "tools/stop_command.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "base/process.h"
#include "base/status.h"
#include "daemon/server.h"
#include "libclient/launcher.h"
#include "tools/cli_util.h"

namespace jitd::tools {

namespace {

void PrintError(const std::string& message) {
  std::fputs(("jitd stop: " + message + "\n").c_str(), stderr);
}

// Removes the pid file when it names `pid` (or, with pid 0, names no
// running daemon): never another daemon's.
void RemovePidFileOf(const std::string& path, pid_t pid) {
  pid_t written = 0;
  if (!(std::ifstream(path) >> written)) return;
  if (pid != 0 ? written == pid : !client::IsJitdDaemonProcess(written)) ::unlink(path.c_str());
}

}  // namespace

CLI::App* AddStopCommand(CLI::App& app, StopArgs& args) {
  CLI::App* cmd = app.add_subcommand("stop", "Stop a running daemon");
  cmd->footer(
      "Finds the daemon at --socket (else $JITD_SOCKET, else\n"
      "$XDG_RUNTIME_DIR/jitd/jitd.sock, else /tmp/jitd-$UID/jitd.sock) by the\n"
      "socket's peer or the jitd.pid file beside it, sends it SIGTERM (its\n"
      "clients see UNAVAILABLE and reconnect to the next daemon), waits for it\n"
      "to exit and removes the pid file. No daemon running is not an error.\n"
      "Exit status: 0 stopped or none running, 1 it did not exit within\n"
      "--timeout, 2 usage error or no permission to signal it.");
  cmd->add_option("--socket", args.socket_path, "The daemon's Unix socket")->type_name("PATH");
  cmd->add_option("--timeout", args.timeout_s, "Seconds to wait for the daemon to exit")
      ->type_name("S")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  return cmd;
}

int RunStop(const StopArgs& args) {
  const std::string socket_path =
      args.socket_path.empty() ? daemon::DefaultSocketPath() : args.socket_path;
  const std::string pid_file = client::DaemonPidFilePath(socket_path);
  StatusOr<pid_t> found = client::FindDaemonPid(socket_path);
  if (!found.ok() && found.status().code() != StatusCode::kNotFound) {
    PrintError(found.status().message());
    return kExitUsageOrIo;
  }
  if (!found.ok()) {
    RemovePidFileOf(pid_file, 0);
    std::fprintf(stderr, "jitd: no daemon running at %s\n", socket_path.c_str());
    return kExitOk;
  }
  const pid_t pid = *found;
  if (::kill(pid, SIGTERM) != 0) {
    PrintError("cannot signal the daemon (pid " + std::to_string(pid) + ") at " + socket_path +
               ": " + std::strerror(errno));
    return kExitUsageOrIo;
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(args.timeout_s);
  while (ProcessAlive(pid)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      char seconds[32];
      std::snprintf(seconds, sizeof(seconds), "%g", args.timeout_s);
      PrintError("the daemon (pid " + std::to_string(pid) + ") at " + socket_path +
                 " did not exit within " + seconds + " s of SIGTERM (a long compile or execute may be finishing); try again, or "
                 "kill -KILL " + std::to_string(pid));
      return kExitInvalidProgram;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  RemovePidFileOf(pid_file, pid);  // the daemon removes it itself on a clean exit
  std::fprintf(stderr, "jitd: stopped the daemon (pid %d) at %s\n", static_cast<int>(pid),
               socket_path.c_str());
  return kExitOk;
}

}  // namespace jitd::tools
