// Instance: what every client of one daemon shares — the devices, the
// compiled-executable cache (in memory, with single flight, and optionally
// on disk) and the daemon-wide counters.
//
// Compiling: the cache key (jit/cache/fingerprint.h) is made of the program
// text's hash, the canonical argument shapes the client declared (empty when
// none), the canonical compile options, the device, the compiler build id
// and (for host-compiled code) the CPU features. A memory miss runs one
// compute per key at once however many sessions ask (MemoryCache single
// flight). The compute first looks in the disk cache: for the interpreter
// device the payload on disk is the program text itself (the interpreter's
// "compiled" form is the verified module, which serializes as its text), so a
// restarted daemon recompiles from disk without the client resending.
//
// Thread safety: every method may be called from any thread (session threads
// call it concurrently). Lifetime: must outlive every Session and Server
// using it; the programs it hands out are shared and stay valid while held.
#ifndef JITD_DAEMON_INSTANCE_H_
#define JITD_DAEMON_INSTANCE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/status.h"
#include "daemon/feed_queues.h"
#include "devices/device.h"
#include "jit/cache/disk_cache.h"
#include "jit/cache/fingerprint.h"
#include "jit/cache/memory_cache.h"
#include "daemon/fair_gate.h"
#include "daemon/stats.h"
#include "jit/ir/type.h"

namespace jitd::daemon {

// The daemon's version, reported in HelloReply.
inline constexpr char kDaemonVersion[] = "0.1.0";

// Options of an Instance. Plain value.
struct InstanceOptions {
  // Byte budget of the in-memory executable cache.
  uint64_t memory_cache_bytes = uint64_t{1} << 30;
  // The disk cache directory; empty = no disk cache.
  std::string disk_cache_dir;
  uint64_t disk_cache_max_bytes = uint64_t{1} << 30;
  // Whether disk cache writes are fsynced (tests turn it off for speed).
  bool disk_cache_fsync = true;
  // Part of every cache key: changes whenever the compiler's output would.
  std::string compiler_build_id = std::string("jitd-") + kDaemonVersion;
  // Device used when a request names none.
  std::string default_device = "interpreter";
  // Executes that may run at once across all clients (FairGate); more wait
  // their turn, round-robin by client. 0 = the number of CPUs.
  int execute_slots = 0;
};

// A compiled program as the cache holds it. Immutable once built; shared by
// every session that holds a handle to it.
struct CompiledProgram {
  cache::Fingerprint fingerprint;
  std::string device;
  std::string program_text;  // the disk cache stores it (plus the device's blob, if any)
  std::shared_ptr<const devices::Executable> executable;
  std::vector<ir::Type> argument_types;
  std::vector<ir::Type> result_types;
  // Compiled with CompileSpec::profile: every execute reports its profile.
  bool profile = false;
};

// Compile options as the daemon canonicalizes them. Plain value.
struct CompileSpec {
  std::string device;            // empty = InstanceOptions::default_device
  std::string argument_shapes;   // canonical text, "" when the client gave none
  bool profile = false;
  // Collect the compile's dumps (CompileOutcome::dumps). A program in the
  // cache has none to give, so such a compile always compiles (its result
  // is not cached again); not part of the cache key.
  bool dumps = false;
  // The program is a FlatBuffers module (ipc/module.fbs), not StableHLO
  // text; part of the cache key.
  bool flatbuffer_module = false;
};

// The outcome of Instance::Compile / CompileByFingerprint. Plain value.
struct CompileOutcome {
  std::shared_ptr<const CompiledProgram> program;
  // True unless this call compiled from the client's text (a memory hit, a
  // load from disk, or a join of another session's compile).
  bool cache_hit = false;
  // "memory", "disk", "joined" or "compiled".
  std::string source;
  uint64_t compile_micros = 0;
  // On a compile from text: what differs from the nearest disk entry
  // (empty when there is no disk cache or nothing near).
  std::string explain;
  // With CompileSpec::dumps: the compile's dumps (devices/compile.h).
  std::vector<devices::CompileDump> dumps;
};

// Daemon-wide counters, a snapshot. Plain value.
struct InstanceStats {
  uint64_t compiles = 0;        // device compiles from client-sent text
  uint64_t disk_loads = 0;      // device compiles from disk-cached text
  uint64_t compile_errors = 0;
  uint64_t sessions_opened = 0;
  uint64_t sessions_closed = 0;
  uint64_t requests = 0;
  uint64_t bad_requests = 0;    // answered INVALID_ARGUMENT before dispatch
  uint64_t executes = 0;
  uint64_t execute_errors = 0;
};

// A compile that Instance::RunCompileWithLimit stopped waiting for: it runs
// on in the background (its result lands in the cache). Thread-safe.
class PendingCompile {
 public:
  bool done() const { return done_.load(std::memory_order_acquire); }

 private:
  friend class Instance;
  std::atomic<bool> done_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<StatusOr<CompileOutcome>> result_;
};

class Instance {
 public:
  // Opens the disk cache when options.disk_cache_dir is set (an error if it
  // cannot be created) and checks that the default device exists.
  static StatusOr<std::unique_ptr<Instance>> Create(InstanceOptions options);

  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  // Compiles `program_text` (StableHLO text) or finds it in a cache.
  StatusOr<CompileOutcome> Compile(std::string_view program_text, const CompileSpec& spec);
  // Finds a program by the fingerprint an earlier Compile returned, in
  // memory or on disk; NOT_FOUND when neither has it.
  StatusOr<CompileOutcome> CompileByFingerprint(const cache::Fingerprint& fingerprint);

  // The memory-cache hit of Compile / CompileByFingerprint, or nullopt
  // (then call those): a hash and one lookup, no compile and no thread hop.
  // A miss is not counted here (the full call counts it).
  std::optional<CompileOutcome> CompileFromMemory(std::string_view program_text,
                                                  const CompileSpec& spec);
  std::optional<CompileOutcome> CompileByFingerprintFromMemory(
      const cache::Fingerprint& fingerprint);

  // Runs `work` (a Compile or CompileByFingerprint call) within `limit`:
  // limit 0 runs it on the calling thread; otherwise on the instance's
  // compile threads while the caller waits up to `limit`. Past it the answer
  // is DEADLINE_EXCEEDED and `*abandoned` names the compile, which finishes
  // in the background (the parser and devices take no deadline, so it cannot
  // be cut short; its result is cached, and nothing leaks: the compile
  // threads own it and are joined when the Instance goes).
  StatusOr<CompileOutcome> RunCompileWithLimit(std::function<StatusOr<CompileOutcome>()> work,
                                               std::chrono::milliseconds limit,
                                               std::shared_ptr<PendingCompile>* abandoned);

  // Per-client counters: a session registers at start and unregisters when
  // it goes; StatsJson lists the registered ones.
  std::shared_ptr<ClientCounters> RegisterClient(uint64_t session_id);
  void UnregisterClient(uint64_t session_id);
  // Daemon-side time of one successful Execute request (request taken ->
  // reply built).
  void RecordExecuteLatency(uint64_t nanos) { execute_latency_.Record(nanos); }
  // Admission of executes, fair across clients (see fair_gate.h).
  FairGate& execute_gate() { return execute_gate_; }

  // The whole state as JSON: counters, cache statistics and, with
  // `list_keys`, the memory cache's entries (at most 256).
  std::string StatsJson(bool list_keys) const;
  InstanceStats stats() const;

  // Counters the sessions bump.
  void CountSessionOpened() { ++sessions_opened_; }
  void CountSessionClosed() { ++sessions_closed_; }
  void CountRequest() { ++requests_; }
  void CountBadRequest() { ++bad_requests_; }
  void CountExecute(bool ok) { ++(ok ? executes_ : execute_errors_); }

  const InstanceOptions& options() const { return options_; }
  // The infeed/outfeed queues every session shares.
  FeedQueues& feeds() { return feeds_; }

 private:
  explicit Instance(InstanceOptions options);
 public:
  ~Instance();

 private:
  void CompileThreadLoop();
  StatusOr<const devices::Device*> GetDevice(const std::string& name);
  // Parses and compiles `text` on `device` (the single-flight compute), or
  // loads `blob` (a serialized executable from the disk cache) when it is
  // non-empty and the device accepts it. `serialized` (may be null)
  // receives Device::Serialize of a freshly compiled executable, when the
  // device has one.
  // `dumps` (may be null) receives the compile's dumps (devices/compile.h);
  // none when the executable came from `blob`.
  struct BuildOptions {
    bool flatbuffer_module = false;
    bool profile = false;
    std::vector<devices::CompileDump>* dumps = nullptr;
  };
  StatusOr<std::shared_ptr<const CompiledProgram>> Build(const cache::Fingerprint& fingerprint,
                                                         const std::string& device,
                                                         std::string text, std::string_view blob,
                                                         std::string* serialized,
                                                         const BuildOptions& build_options);
  cache::CacheKeyParts KeyParts(std::string_view text, const CompileSpec& spec) const;
  // The memory-cache hit for `fingerprint` (timed from `start`), or nullopt.
  std::optional<CompileOutcome> ProbeMemory(const cache::Fingerprint& fingerprint,
                                            std::chrono::steady_clock::time_point start);

  InstanceOptions options_;
  FeedQueues feeds_;
  std::mutex devices_mu_;
  std::map<std::string, std::unique_ptr<devices::Device>, std::less<>> devices_;
  cache::MemoryCache<CompiledProgram> memory_cache_;
  std::unique_ptr<cache::DiskCache> disk_cache_;  // null = none
  FairGate execute_gate_;
  LatencyHistogram compile_latency_;   // device compiles (from text or disk)
  LatencyHistogram execute_latency_;   // Execute requests, daemon side
  mutable std::mutex clients_mu_;
  std::map<uint64_t, std::shared_ptr<ClientCounters>> clients_;
  // Compile threads (started on first use) and their queue.
  std::mutex compile_mu_;
  std::condition_variable compile_cv_;
  std::deque<std::function<void()>> compile_queue_;
  std::vector<std::thread> compile_threads_;
  bool compile_stop_ = false;
  std::atomic<uint64_t> compiles_{0}, disk_loads_{0}, compile_errors_{0}, sessions_opened_{0},
      sessions_closed_{0}, requests_{0}, bad_requests_{0}, executes_{0}, execute_errors_{0};
};

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_INSTANCE_H_
