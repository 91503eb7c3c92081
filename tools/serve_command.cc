#include "tools/serve_command.h"

#include <unistd.h>

#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "daemon/instance.h"
#include "daemon/server.h"
#include "devices/device.h"
#include "devices/platforms.h"
#include "jit/cache/disk_cache.h"
#include "libclient/launcher.h"
#include "tools/cli_util.h"

namespace jitd::tools {

uint64_t EffectiveSegmentBytes(const ServeArgs& args) {
  if (args.segment_bytes != 0) return args.segment_bytes;
  constexpr uint64_t kLargest = uint64_t{1} << 40;  // ipc::Segment::kMaxSize
  if (args.max_buffer_bytes == 0) return kUnlimitedSegmentBytes;
  if (args.max_buffer_bytes > kLargest - kSegmentOverheadBytes) return kLargest;
  return args.max_buffer_bytes + kSegmentOverheadBytes;
}

// A byte-size flag: 1 to 2^62 (4 EiB, far beyond any machine). CLI11 clamps
// a number too big for 64 bits to the largest one; the bound makes that a
// refusal by name instead of a silent "no limit".
namespace {
CLI::Range PositiveBytes() { return CLI::Range(uint64_t{1}, uint64_t{1} << 62); }
}  // namespace

CLI::App* AddServeCommand(CLI::App& app, ServeArgs& args) {
  CLI::App* cmd = app.add_subcommand("serve", "Run the jitd daemon in the foreground");
  cmd->footer(
      "Listens on a Unix socket (default: $JITD_SOCKET, else\n"
      "$XDG_RUNTIME_DIR/jitd/jitd.sock, else /tmp/jitd-$UID/jitd.sock) for clients\n"
      "of the same user (and of the users and groups given by --allow-uid and\n"
      "--allow-gid; others are refused with PERMISSION_DENIED and logged).\n"
      "Compiled programs are cached in memory and, unless --no-disk-cache, on\n"
      "disk (default: $XDG_CACHE_HOME/jitd or ~/.cache/jitd).\n"
      "Every limit also reads an environment variable (JITD_MAX_EXECUTABLES, ...,\n"
      "shown with each option); a flag wins over the variable. 0 = no limit.\n"
      "Logs go to standard error. SIGTERM or SIGINT stops it cleanly.\n"
      "Exit status: 0 after a clean stop, 2 when it cannot start.");
  cmd->add_option("--socket", args.socket_path, "Unix socket path")->type_name("PATH");
  cmd->add_option("--cache-dir", args.cache_dir, "Disk cache directory")->type_name("DIR");
  cmd->add_flag("--no-disk-cache", args.no_disk_cache, "Keep compiled programs in memory only");
  cmd->add_option("--segment-bytes", args.segment_bytes,
                  "Shared memory per client (rings + buffer heap); 0: the buffer quota "
                  "(--max-buffer-bytes) + 64 MiB. Sparse: pages are committed when used")
      ->type_name("N")
      ->envname("JITD_SEGMENT_BYTES")
      ->capture_default_str();
  cmd->add_option("--allow-uid", args.allow_uids,
                  "Also serve this user (repeatable; env: comma-separated)")
      ->type_name("UID")
      ->delimiter(',')
      ->envname("JITD_ALLOW_UID");
  cmd->add_option("--allow-gid", args.allow_gids,
                  "Also serve members of this group (repeatable; env: comma-separated)")
      ->type_name("GID")
      ->delimiter(',')
      ->envname("JITD_ALLOW_GID");
  cmd->add_option("--max-executables", args.max_executables,
                  "Per client: live executable handles")
      ->type_name("N")
      ->envname("JITD_MAX_EXECUTABLES")
      ->capture_default_str();
  cmd->add_option("--max-buffers", args.max_buffers, "Per client: live buffer handles")
      ->type_name("N")
      ->envname("JITD_MAX_BUFFERS")
      ->capture_default_str();
  cmd->add_option("--max-buffer-bytes", args.max_buffer_bytes,
                  "Per client: bytes of live buffers")
      ->type_name("N")
      ->envname("JITD_MAX_BUFFER_BYTES")
      ->capture_default_str();
  cmd->add_option("--max-device-bytes", args.max_device_bytes,
                  "Per client: bytes of GPU memory (cuda device) held at once; 0 = no limit")
      ->type_name("N")
      ->envname("JITD_MAX_DEVICE_BYTES")
      ->capture_default_str();
  cmd->add_option("--max-compile-time-ms", args.max_compile_time_ms,
                  "Per client: longest wait for one compile (DEADLINE_EXCEEDED past it)")
      ->type_name("MS")
      ->envname("JITD_MAX_COMPILE_TIME_MS")
      ->capture_default_str();
  cmd->add_option("--max-execute-time-ms", args.max_execute_time_ms,
                  "Per client: longest execution (DEADLINE_EXCEEDED past it)")
      ->type_name("MS")
      ->envname("JITD_MAX_EXECUTE_TIME_MS")
      ->capture_default_str();
  cmd->add_option("--memory-cache-bytes", args.memory_cache_bytes,
                  "Budget of the in-memory executable cache (LRU)")
      ->type_name("N")
      ->check(PositiveBytes())
      ->envname("JITD_MEMORY_CACHE_BYTES")
      ->capture_default_str();
  cmd->add_option("--execute-slots", args.execute_slots,
                  "Executes running at once across clients (0: one per CPU); more wait "
                  "their turn, round-robin by client process")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber)
      ->envname("JITD_EXECUTE_SLOTS")
      ->capture_default_str();
  cmd->add_option("--max-sessions", args.max_sessions,
                  "Client sessions open at once (connections); the next is refused "
                  "RESOURCE_EXHAUSTED")
      ->type_name("N")
      ->envname("JITD_MAX_SESSIONS")
      ->capture_default_str();
  cmd->add_option("--max-sessions-per-uid", args.max_sessions_per_uid,
                  "Client sessions open at once per user")
      ->type_name("N")
      ->envname("JITD_MAX_SESSIONS_PER_UID")
      ->capture_default_str();
  cmd->add_option("--workers", args.workers,
                  "Threads serving the sessions' requests in turn (0: one per CPU, at least "
                  "2); spares are added while requests block")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber)
      ->envname("JITD_WORKERS")
      ->capture_default_str();
  cmd->add_option("--max-feed-bytes", args.max_feed_bytes,
                  "Per client: bytes of infeed/outfeed values queued in the daemon")
      ->type_name("N")
      ->check(PositiveBytes())
      ->envname("JITD_MAX_FEED_BYTES")
      ->capture_default_str();
  cmd->add_flag("--share-cache-across-uids", args.share_cache_across_uids,
                "Share compiled programs between users: one user's compile of a text "
                "another sent is then a cache hit (and tells them so). Off: each user "
                "compiles and caches its own. Either way a compile by fingerprint finds "
                "only programs whose text that user sent")
      ->envname("JITD_SHARE_CACHE_ACROSS_UIDS");
  cmd->add_option("--turn-requests", args.turn_requests,
                  "When more sessions of short requests are busy than half the CPUs: the "
                  "most requests of one session a turn serves back to back while the "
                  "others' clients wait asleep (a turn serves as many as take 1 ms at the "
                  "recent pace, and lasts 2 ms at most; twice that with four or more busy "
                  "sessions per two CPUs); 1 = one request per turn (less waiting, fewer "
                  "calls/s)")
      ->type_name("N")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000}))
      ->envname("JITD_TURN_REQUESTS")
      ->capture_default_str();
  cmd->add_option("--disk-cache-bytes", args.disk_cache_bytes,
                  "Size bound of the disk cache (LRU eviction)")
      ->type_name("N")
      ->check(PositiveBytes())
      ->envname("JITD_DISK_CACHE_BYTES")
      ->capture_default_str();
  std::vector<std::string> default_devices = devices::DeviceNames();
  default_devices.insert(default_devices.begin(), "auto");
  cmd->add_option("--default-device", args.default_device,
                  "Device for compiles that name none (auto: cuda when this machine has a "
                  "GPU, else cpu, and cpu once the GPU is lost to the daemon; cpu: the JIT; "
                  "interpreter: the reference evaluator)")
      ->check(CLI::IsMember(default_devices))
      ->envname("JITD_DEFAULT_DEVICE")
      ->capture_default_str();
  cmd->add_flag("--cuda-exact-f32", args.cuda_exact_f32,
                "cuda: f32 dot_generals exact (no TF32 tensor cores) whatever their precision_config, "
                "so results can match cpu")
      ->envname("JITD_CUDA_EXACT_F32");
  cmd->add_flag("--cuda-no-libraries", args.cuda_no_libraries,
                "cuda: no cuBLASLt / cuFFT calls; jitd's own kernels for every op")
      ->envname("JITD_CUDA_NO_LIBRARIES");
  cmd->add_option("--listen", args.listen,
                  "Also serve remote clients on this TCP address (repeatable; TLS 1.3; needs "
                  "--tls-cert, --tls-key and --tls-client-ca and/or --token-file; docs/REMOTE.md)")
      ->type_name("tcp://ADDR:PORT");
  cmd->add_option("--tls-cert", args.tls_cert, "Remote: the daemon's PEM certificate chain")
      ->type_name("FILE");
  cmd->add_option("--tls-key", args.tls_key, "Remote: the daemon's PEM private key")
      ->type_name("FILE");
  cmd->add_option("--tls-client-ca", args.tls_client_ca,
                  "Remote: require client certificates signed by these PEM CAs (identity: "
                  "the certificate's CN)")
      ->type_name("FILE");
  cmd->add_option("--token-file", args.token_file,
                  "Remote: require a bearer token; lines \"NAME TOKEN\", mode 600 (identity: "
                  "token:NAME)")
      ->type_name("FILE");
  cmd->add_flag("--insecure-loopback", args.insecure_loopback,
                "Remote: plaintext TCP, loopback addresses only, with --token-file (tests, "
                "benchmarks)");
  cmd->add_option("--remote-handshake-timeout-ms", args.remote_handshake_timeout_ms,
                  "Remote: a connection must finish TLS and its hello within this")
      ->type_name("MS")
      ->capture_default_str();
  cmd->add_option("--log-level", args.log_level, "error, info or debug")
      ->check(CLI::IsMember({"error", "info", "debug"}))
      ->capture_default_str();
  return cmd;
}

namespace {
bool LogsInfo(const std::string& level) { return level != "error"; }

// jitd.pid beside the socket (client::DaemonPidFilePath): written once the
// daemon owns the socket (so a daemon that lost the race never overwrites
// the winner's), removed when it exits cleanly unless another daemon's pid
// is in it by then. `jitd stop` reads it (libclient/launcher.h).
void WritePidFile(const std::string& path) {
  std::ofstream(path, std::ios::trunc) << ::getpid() << "\n";
}

void RemovePidFile(const std::string& path) {
  pid_t written = 0;
  if (std::ifstream(path) >> written && written == ::getpid()) ::unlink(path.c_str());
}
}  // namespace

int RunServe(const ServeArgs& args) {
  std::signal(SIGPIPE, SIG_IGN);
  daemon::InstanceOptions instance_options;
  instance_options.memory_cache_bytes = args.memory_cache_bytes;
  instance_options.disk_cache_max_bytes = args.disk_cache_bytes;
  instance_options.execute_slots = args.execute_slots;
  // The cuda device reads these when it first compiles (cuda_device.h's
  // CudaDeviceSettings take them from the environment).
  if (args.cuda_exact_f32) ::setenv("JITD_CUDA_EXACT_F32", "1", 1);
  if (args.cuda_no_libraries) ::setenv("JITD_CUDA_NO_LIBRARIES", "1", 1);
  // Why a device is missing is said once, here; clients that asked for
  // the default are warned on their side (libclient).
  for (const devices::DeviceAvailability& d : devices::ProbeDevices()) {
    if (!d.available && LogsInfo(args.log_level)) {
      std::fprintf(stderr, "jitd: %s: unavailable (%s)\n", d.name.c_str(), d.reason.c_str());
    }
  }
  std::string fallback_note;
  StatusOr<std::string> default_device = devices::ResolveDevice(args.default_device, &fallback_note);
  if (!default_device.ok()) {
    std::fprintf(stderr, "jitd serve: --default-device %s: %s\n", args.default_device.c_str(),
                 default_device.status().message().c_str());
    return kExitUsageOrIo;
  }
  if (!fallback_note.empty() && LogsInfo(args.log_level)) {
    std::fprintf(stderr, "jitd: default device %s (the first of cuda, cpu this machine has)\n",
                 default_device->c_str());
  }
  instance_options.default_device = *default_device;
  // Chosen by auto: if the GPU is lost, requests naming no device go on.
  instance_options.default_device_is_auto = args.default_device == "auto";
  instance_options.share_cache_across_uids = args.share_cache_across_uids;
  instance_options.max_feed_bytes_per_client = args.max_feed_bytes;
  if (args.log_level == "debug") {  // compiles, misses and why, disk loads, evictions
    instance_options.log = [](int, const std::string& line) {
      std::fputs(("jitd: " + line + "\n").c_str(), stderr);
    };
  }
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
  server_options.session.segment_bytes = EffectiveSegmentBytes(args);
  server_options.session.max_executables = args.max_executables;
  server_options.session.max_buffers = args.max_buffers;
  server_options.session.max_buffer_bytes = args.max_buffer_bytes;
  server_options.session.max_device_bytes = args.max_device_bytes;
  server_options.session.max_compile_time = std::chrono::milliseconds(args.max_compile_time_ms);
  server_options.session.max_execute_time = std::chrono::milliseconds(args.max_execute_time_ms);
  server_options.peers.allow_uids.assign(args.allow_uids.begin(), args.allow_uids.end());
  server_options.max_sessions = args.max_sessions;
  server_options.max_sessions_per_uid = args.max_sessions_per_uid;
  server_options.dispatcher.workers = args.workers;
  server_options.dispatcher.turn_requests = args.turn_requests;
  server_options.peers.allow_gids.assign(args.allow_gids.begin(), args.allow_gids.end());
  server_options.log_level = args.log_level == "error" ? 0 : args.log_level == "debug" ? 2 : 1;
  if (args.listen.empty() && (!args.tls_cert.empty() || !args.tls_key.empty() ||
                              !args.tls_client_ca.empty() || !args.token_file.empty() ||
                              args.insecure_loopback)) {
    std::fprintf(stderr,
                 "jitd serve: --tls-cert, --tls-key, --tls-client-ca, --token-file and "
                 "--insecure-loopback configure remote clients: give --listen tcp://ADDR:PORT "
                 "too\n");
    return kExitUsageOrIo;
  }
  server_options.remote.listen = args.listen;
  server_options.remote.tls_cert = args.tls_cert;
  server_options.remote.tls_key = args.tls_key;
  server_options.remote.tls_client_ca = args.tls_client_ca;
  server_options.remote.token_file = args.token_file;
  server_options.remote.insecure_loopback = args.insecure_loopback;
  server_options.remote.handshake_timeout =
      std::chrono::milliseconds(args.remote_handshake_timeout_ms);
  StatusOr<std::unique_ptr<daemon::Server>> server =
      daemon::Server::Create(instance->get(), std::move(server_options));
  if (!server.ok()) {
    std::fprintf(stderr, "jitd serve: %s\n", server.status().ToString().c_str());
    return kExitUsageOrIo;
  }
  if (LogsInfo(args.log_level)) {
    std::fprintf(stderr,
                 "jitd: limits per client: %llu executables, %llu buffers, %llu buffer bytes, "
                 "%llu device bytes, compile %llu ms, execute %llu ms, segment %llu bytes; "
                 "memory cache %llu bytes, disk cache %s\n",
                 static_cast<unsigned long long>(args.max_executables),
                 static_cast<unsigned long long>(args.max_buffers),
                 static_cast<unsigned long long>(args.max_buffer_bytes),
                 static_cast<unsigned long long>(args.max_device_bytes),
                 static_cast<unsigned long long>(args.max_compile_time_ms),
                 static_cast<unsigned long long>(args.max_execute_time_ms),
                 static_cast<unsigned long long>(EffectiveSegmentBytes(args)),
                 static_cast<unsigned long long>(args.memory_cache_bytes),
                 args.no_disk_cache ? "off"
                                    : (std::to_string(args.disk_cache_bytes) + " bytes").c_str());
    std::fprintf(stderr, "jitd: feeds %llu bytes per client; compiled programs %s\n",
                 static_cast<unsigned long long>(args.max_feed_bytes),
                 args.share_cache_across_uids ? "shared across users (--share-cache-across-uids)"
                                              : "cached per user");
  }
  const std::string pid_file = client::DaemonPidFilePath((*server)->socket_path());
  WritePidFile(pid_file);
  Status run = (*server)->Run();
  RemovePidFile(pid_file);
  if (!run.ok()) {
    std::fprintf(stderr, "jitd serve: %s\n", run.ToString().c_str());
    return kExitInternal;
  }
  return kExitOk;
}

}  // namespace jitd::tools
