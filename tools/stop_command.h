// `jitd stop`: stops the daemon at a socket. It finds the daemon's pid
// through the socket (the peer's credentials) or jitd.pid beside it
// (client::FindDaemonPid), sends SIGTERM, waits for the process to exit and
// removes the pid file if the daemon left one. Stopping where no daemon runs
// is not an error (it says so and removes a stale pid file).
//
// Exit status: 0 stopped or none running; 1 the daemon did not exit within
// --timeout; 2 usage error, the signal could not be sent, or the socket is
// served by a program that is no `jitd serve` (a socket-activated unit: stop
// that with its service manager).
#ifndef JITD_TOOLS_STOP_COMMAND_H_
#define JITD_TOOLS_STOP_COMMAND_H_

#include <string>

#include <CLI/CLI.hpp>

namespace jitd::tools {

// The options of `jitd stop`, bound by AddStopCommand. Plain data.
struct StopArgs {
  std::string socket_path;  // empty = daemon::DefaultSocketPath()
  double timeout_s = 10;    // longest wait for the daemon to exit
};

// Adds the subcommand to `app`, binding its options to `args`.
CLI::App* AddStopCommand(CLI::App& app, StopArgs& args);
// Runs it; returns the process exit status (see the top of this file).
int RunStop(const StopArgs& args);

}  // namespace jitd::tools

#endif  // JITD_TOOLS_STOP_COMMAND_H_
