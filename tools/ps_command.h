// `jitd ps`: the client processes of a running daemon, one line each: pid,
// uid, command line (from /proc), the name it gave in Hello, its sessions
// (connections), live executables and buffers, buffer bytes, requests and
// executes — from the daemon's statistics JSON (`jitd stats --json`), the
// sessions of one process added up. `jitd ps` itself is left out. It never
// starts a daemon.
//
// Exit status: 0 printed; 2 usage error or no daemon; 3 the daemon's reply
// could not be read.
#ifndef JITD_TOOLS_PS_COMMAND_H_
#define JITD_TOOLS_PS_COMMAND_H_

#include <string>

#include <CLI/CLI.hpp>

namespace jitd::tools {

// The options of `jitd ps`, bound by AddPsCommand. Plain data.
struct PsArgs {
  std::string socket_path;  // empty = daemon::DefaultSocketPath()
};

// Adds the subcommand to `app`, binding its options to `args`.
CLI::App* AddPsCommand(CLI::App& app, PsArgs& args);
// Runs it; returns the process exit status (see the top of this file).
int RunPs(const PsArgs& args);

}  // namespace jitd::tools

#endif  // JITD_TOOLS_PS_COMMAND_H_
