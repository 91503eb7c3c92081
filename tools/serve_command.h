// `jitd serve`: runs the daemon in the foreground until SIGTERM or SIGINT.
#ifndef JITD_TOOLS_SERVE_COMMAND_H_
#define JITD_TOOLS_SERVE_COMMAND_H_

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace jitd::tools {

// The subcommand's options. Plain value.
struct ServeArgs {
  std::string socket_path;  // empty = daemon::DefaultSocketPath()
  std::string cache_dir;    // empty = cache::DefaultDiskCacheDir()
  bool no_disk_cache = false;
  uint64_t segment_bytes = uint64_t{64} << 20;
  std::string log_level = "info";  // error | info | debug
};

// Adds the subcommand to `app`, binding its options to `args`.
CLI::App* AddServeCommand(CLI::App& app, ServeArgs& args);
// Runs the daemon; returns the process exit status (0 after a clean
// shutdown, 2 for usage errors or when it cannot start).
int RunServe(const ServeArgs& args);

}  // namespace jitd::tools

#endif  // JITD_TOOLS_SERVE_COMMAND_H_
