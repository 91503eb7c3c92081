// `jitd stats`: asks a running daemon for its statistics and prints them, as
// a readable summary, (--json) the daemon's JSON as it is, or (--prometheus)
// Prometheus' text format (tools/prometheus_text.h). It never starts a
// daemon: when none answers at the socket it says so and exits 2.
//
// Exit status: 0 printed; 2 usage error or no daemon; 3 the daemon's reply
// could not be read.
#ifndef JITD_TOOLS_STATS_COMMAND_H_
#define JITD_TOOLS_STATS_COMMAND_H_

#include <string>

#include <CLI/CLI.hpp>

namespace jitd::tools {

// The options of `jitd stats`, bound by AddStatsCommand. Plain data.
struct StatsArgs {
  std::string socket_path;  // empty = daemon::DefaultSocketPath()
  bool json = false;        // print the daemon's JSON unchanged
  bool keys = false;        // list the memory cache's entries too
  bool prometheus = false;  // print Prometheus' text exposition format
};

// Adds the subcommand to `app`, binding its options to `args`.
CLI::App* AddStatsCommand(CLI::App& app, StatsArgs& args);
// Runs it; returns the process exit status (see the top of this file).
int RunStats(const StatsArgs& args);

}  // namespace jitd::tools

#endif  // JITD_TOOLS_STATS_COMMAND_H_
