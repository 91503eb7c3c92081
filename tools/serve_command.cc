#include "tools/serve_command.h"

#include <csignal>
#include <cstdio>

#include "daemon/instance.h"
#include "daemon/server.h"
#include "jit/cache/disk_cache.h"
#include "tools/cli_util.h"

namespace jitd::tools {

CLI::App* AddServeCommand(CLI::App& app, ServeArgs& args) {
  CLI::App* cmd = app.add_subcommand("serve", "Run the jitd daemon in the foreground");
  cmd->footer(
      "Listens on a Unix socket (default: $JITD_SOCKET, else\n"
      "$XDG_RUNTIME_DIR/jitd/jitd.sock, else /tmp/jitd-$UID/jitd.sock) for clients\n"
      "of the same user. Compiled programs are cached in memory and, unless\n"
      "--no-disk-cache, on disk (default: $XDG_CACHE_HOME/jitd or ~/.cache/jitd).\n"
      "Logs go to standard error. SIGTERM or SIGINT stops it cleanly.\n"
      "Exit status: 0 after a clean stop, 2 when it cannot start.");
  cmd->add_option("--socket", args.socket_path, "Unix socket path")->type_name("PATH");
  cmd->add_option("--cache-dir", args.cache_dir, "Disk cache directory")->type_name("DIR");
  cmd->add_flag("--no-disk-cache", args.no_disk_cache, "Keep compiled programs in memory only");
  cmd->add_option("--segment-bytes", args.segment_bytes,
                  "Shared memory per client (rings + buffer heap)")
      ->type_name("N")
      ->capture_default_str();
  cmd->add_option("--log-level", args.log_level, "error, info or debug")
      ->check(CLI::IsMember({"error", "info", "debug"}))
      ->capture_default_str();
  return cmd;
}

int RunServe(const ServeArgs& args) {
  std::signal(SIGPIPE, SIG_IGN);
  daemon::InstanceOptions instance_options;
  if (!args.no_disk_cache) {
    if (!args.cache_dir.empty()) {
      instance_options.disk_cache_dir = args.cache_dir;
    } else {
      StatusOr<std::string> dir = cache::DefaultDiskCacheDir();
      if (!dir.ok()) {
        std::fprintf(stderr, "jitd serve: %s (use --cache-dir or --no-disk-cache)\n",
                     dir.status().message().c_str());
        return kExitUsageOrIo;
      }
      instance_options.disk_cache_dir = *dir;
    }
  }
  StatusOr<std::unique_ptr<daemon::Instance>> instance =
      daemon::Instance::Create(std::move(instance_options));
  if (!instance.ok()) {
    std::fprintf(stderr, "jitd serve: %s\n", instance.status().ToString().c_str());
    return kExitUsageOrIo;
  }
  daemon::ServerOptions server_options;
  server_options.socket_path = args.socket_path;
  server_options.session.segment_bytes = args.segment_bytes;
  server_options.log_level = args.log_level == "error" ? 0 : args.log_level == "debug" ? 2 : 1;
  StatusOr<std::unique_ptr<daemon::Server>> server =
      daemon::Server::Create(instance->get(), std::move(server_options));
  if (!server.ok()) {
    std::fprintf(stderr, "jitd serve: %s\n", server.status().ToString().c_str());
    return kExitUsageOrIo;
  }
  Status run = (*server)->Run();
  if (!run.ok()) {
    std::fprintf(stderr, "jitd serve: %s\n", run.ToString().c_str());
    return kExitInternal;
  }
  return kExitOk;
}

}  // namespace jitd::tools
