// `jitd serve`: runs the daemon in the foreground until SIGTERM or SIGINT.
#ifndef JITD_TOOLS_SERVE_COMMAND_H_
#define JITD_TOOLS_SERVE_COMMAND_H_

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace jitd::tools {

// The subcommand's options. Plain value.
struct ServeArgs {
  std::string socket_path;  // empty = daemon::DefaultSocketPath()
  // cuda: f32 matmuls exact (no TF32) whatever precision_config says;
  // library calls off (jitd's own kernels for every op).
  bool cuda_exact_f32 = false;
  bool cuda_no_libraries = false;
  std::string cache_dir;    // empty = cache::DefaultDiskCacheDir()
  bool no_disk_cache = false;
  // Shared memory per client; 0 = auto: max_buffer_bytes plus
  // kSegmentOverheadBytes, so a client can use its whole buffer quota. The
  // memfd is sparse: pages are committed when touched, so an idle client
  // costs its mapping's address space, not memory.
  uint64_t segment_bytes = 0;
  std::string log_level = "info";  // error | info | debug
  // For compiles that name no device; "auto": the first of cuda, cpu that
  // this machine can run (devices/platforms.h).
  std::string default_device = "auto";
  // Who may connect besides the daemon's own user.
  std::vector<uint32_t> allow_uids;
  std::vector<uint32_t> allow_gids;
  // Per-client quotas (daemon::SessionOptions; 0 = no limit).
  uint64_t max_executables = 1024;
  uint64_t max_buffers = 4096;
  uint64_t max_buffer_bytes = uint64_t{1} << 30;
  // GPU memory one client may hold (devices/cuda/cuda_allocator.h); 0 = no limit.
  uint64_t max_device_bytes = 0;
  uint64_t max_compile_time_ms = 300'000;
  uint64_t max_execute_time_ms = 60'000;
  // Cache bounds (daemon::InstanceOptions).
  uint64_t memory_cache_bytes = uint64_t{1} << 30;
  uint64_t disk_cache_bytes = uint64_t{1} << 30;
  // Executes at once across clients (0 = CPUs), fair round-robin beyond.
  int execute_slots = 0;
  // Sessions at once, in all and per uid (daemon::ServerOptions; 0 = no
  // limit), and the worker threads serving them (0 = CPUs, at least 2).
  uint64_t max_sessions = 1024;
  uint64_t max_sessions_per_uid = 256;
  int workers = 0;
  // Requests per turn when busy clients outnumber the CPUs (daemon::DispatcherOptions).
  uint64_t turn_requests = 4096;
  // Compiled programs shared across uids (daemon::InstanceOptions::
  // share_cache_across_uids); off: each uid has its own cache entries.
  bool share_cache_across_uids = false;
  // Bytes of infeed/outfeed values one client may have queued.
  uint64_t max_feed_bytes = uint64_t{256} << 20;
  // Remote clients (daemon::RemoteOptions; docs/REMOTE.md): TCP listen
  // addresses, TLS files, client authentication, plaintext for tests.
  std::vector<std::string> listen;
  std::string tls_cert, tls_key, tls_client_ca, token_file;
  bool insecure_loopback = false;
  uint64_t remote_handshake_timeout_ms = 5'000;
};

// What an auto-sized segment holds besides buffers: the rings, the heap
// allocator's bookkeeping, program text and large requests in flight.
inline constexpr uint64_t kSegmentOverheadBytes = uint64_t{64} << 20;
// The segment of an auto-sized (--segment-bytes=0) client when
// max_buffer_bytes is 0 (no limit): virtual only, see segment_bytes.
inline constexpr uint64_t kUnlimitedSegmentBytes = uint64_t{16} << 30;
// The segment size `args` give a client (resolves segment_bytes = 0).
uint64_t EffectiveSegmentBytes(const ServeArgs& args);

// Adds the subcommand to `app`, binding its options to `args`.
CLI::App* AddServeCommand(CLI::App& app, ServeArgs& args);
// Runs the daemon; returns the process exit status (0 after a clean
// shutdown, 2 for usage errors or when it cannot start).
int RunServe(const ServeArgs& args);

}  // namespace jitd::tools

#endif  // JITD_TOOLS_SERVE_COMMAND_H_
