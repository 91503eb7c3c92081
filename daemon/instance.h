// Instance: what every client of one daemon shares — the devices, the
// compiled-executable cache (in memory, with single flight, and optionally
// on disk) and the daemon-wide counters.
//
// Compiling: the cache key (jit/cache/fingerprint.h) is made of the
// program's canonical hash and entry signature (daemon/program_key.h: one key
// however the program is spelled, text or FlatBuffers), the canonical
// argument shapes the client declared (empty when
// none), the canonical compile options, the device, the compiler build id
// and (for host-compiled code) the CPU features. A memory miss runs one
// compute per key at once however many sessions ask (MemoryCache single
// flight). The compute first looks in the disk cache: for the interpreter
// device the payload on disk is the program text itself (the interpreter's
// "compiled" form is the verified module, which serializes as its text), so a
// restarted daemon recompiles from disk without the client resending.
// Finding the canonical hash takes a parse; an AliasMap remembers it for the
// raw bytes, so a program sent again verbatim hits memory after a hash of
// its bytes and two lookups.
//
// Thread safety: every method may be called from any thread (session threads
// call it concurrently). Lifetime: must outlive every Session and Server
// using it; the programs it hands out are shared and stay valid while held.
#ifndef JITD_DAEMON_INSTANCE_H_
#define JITD_DAEMON_INSTANCE_H_

#include <sys/types.h>

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
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/status.h"
#include "daemon/feed_queues.h"
#include "devices/device.h"
#include "jit/cache/alias_map.h"
#include "jit/cache/disk_cache.h"
#include "jit/cache/fingerprint.h"
#include "jit/cache/memory_cache.h"
#include "daemon/fair_gate.h"
#include "daemon/process_grid.h"
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
  // default_device was chosen by `auto` (jitd serve --default-device=auto):
  // once it can run nothing more in this process (a GPU the driver lost,
  // devices::DeviceLost), requests naming no device get the next available
  // device of the default order instead (DefaultDevice).
  bool default_device_is_auto = false;
  // Executes that may run at once across all clients (FairGate); more wait
  // their turn, round-robin by client. 0 = the number of CPUs.
  int execute_slots = 0;
  // Whether compiled programs are shared across uids (jitd serve
  // --share-cache-across-uids). Off: every cache key carries the client's
  // uid, so each uid compiles and caches its own copy, a hit never tells one
  // uid that another sent the same text, and a fingerprint finds only its
  // own uid's programs. On: one entry per program whoever sends it (a hit
  // says someone sent it), but a fingerprint-only compile still finds only
  // programs whose text this uid sent (CompiledProgram::suppliers). See
  // docs/SECURITY.md.
  bool share_cache_across_uids = false;
  // Bytes of infeed/outfeed values one client may have queued in the daemon
  // (jitd serve --max-feed-bytes; feed_queues.h).
  uint64_t max_feed_bytes_per_client = uint64_t{256} << 20;
  // Byte budget of the raw-bytes -> canonical-program alias map.
  uint64_t alias_map_bytes = uint64_t{8} << 20;
  // Where compiles, misses (with their reason), disk loads, failed compiles
  // and evictions are reported, one line each at level 2 (debug; jitd serve
  // --log-level debug). Empty: not reported. Called from any thread.
  std::function<void(int level, const std::string& line)> log;
};

// The uids that sent a cached program's text: a fingerprint-only compile
// finds the program only for them (and for the daemon's own uid and root).
// Thread-safe; grows only (an entry lives as long as its cache entry).
class UidSet {
 public:
  void Add(int64_t uid) {
    std::lock_guard<std::mutex> lock(mu_);
    for (int64_t u : uids_) {
      if (u == uid) return;
    }
    uids_.push_back(uid);
  }
  bool Has(int64_t uid) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (int64_t u : uids_) {
      if (u == uid) return true;
    }
    return false;
  }

 private:
  mutable std::mutex mu_;
  std::vector<int64_t> uids_;
};

// A compiled program as the cache holds it. Immutable once built (but for
// `suppliers`, which is thread-safe); shared by every session that holds a
// handle to it.
struct CompiledProgram {
  cache::Fingerprint fingerprint;
  // The key it is cached under (fingerprint == Fingerprint::Of(key_parts)).
  cache::CacheKeyParts key_parts;
  std::string device;
  // Microseconds the device took to build it (compile or load).
  uint64_t build_micros = 0;
  std::string program_text;  // the disk cache stores it (plus the device's blob, if any)
  std::shared_ptr<const devices::Executable> executable;
  // The executable's signature: tensors only. A program whose entry takes
  // or returns tuples or tokens is compiled with its signature flattened
  // into their tensor leaves (jit/passes/flatten_signature.h), and its
  // trees are described by the structures below (daemon/value_tree.h).
  std::vector<ir::Type> argument_types;
  std::vector<ir::Type> result_types;
  // The trees' structure strings ("t(tk)"), "" for a signature of tensors
  // only (as CompileReply.argument_structure / result_structure).
  std::string argument_structure;
  std::string result_structure;
  // Compiled with CompileSpec::profile: every execute reports its profile.
  bool profile = false;
  // The program's module name (`module @jit_fn`), "" when it has none.
  std::string module_name;
  // Who sent this program's text (Instance::Compile adds the caller's uid).
  mutable UidSet suppliers;
  // The processes an execute runs (daemon/process_grid.h; 1x1 for most
  // programs), as the key's options part names them.
  eval::ProcessGrid grid;
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
  // text. Not part of the cache key: both forms key on the same canonical
  // form (daemon/program_key.h).
  bool flatbuffer_module = false;
  // The client's uid (the session's peer); -1 = the daemon's own (callers
  // inside the daemon process). Unless the cache is shared across uids it
  // is part of the cache key.
  int64_t uid = -1;
  // Replicas, partitions and device assignment the client asked for
  // (process_grid.h: merged with the module's attributes; the resolved grid
  // is part of the cache key unless it is 1x1).
  GridRequest grid;
};

// Who asks for Instance::StatsJson. Plain value.
struct StatsViewer {
  // The asking client's uid; -1 (callers inside the daemon), the daemon's
  // own uid and root see everything. Any other uid sees only its own uid's
  // sessions and `own_keys`.
  int64_t uid = -1;
  // The fingerprints of the executables the asking session holds.
  std::vector<cache::Fingerprint> own_keys;
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
  // On a compile from text: what differs from the nearest cached entry of
  // the same program (same entry name and signature; in memory or on disk,
  // of the same owner), e.g. "differs in program_hash (same entry '@main(...)
  // -> ...', other ops, constants or attributes: ...)"; empty when no entry
  // of this program is cached.
  std::string explain;
  // With CompileSpec::dumps: the compile's dumps (devices/compile.h).
  std::vector<devices::CompileDump> dumps;
};

// Daemon-wide counters, a snapshot. Plain value.
struct InstanceStats {
  uint64_t compiles = 0;        // device compiles from client-sent text
  uint64_t disk_loads = 0;      // device compiles from disk-cached text
  uint64_t compile_errors = 0;
  // Compiles for a device this daemon lacks (platform probes): NOT_FOUND,
  // not counted in compile_errors.
  uint64_t unknown_device_compiles = 0;
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
  // memory or on disk; NOT_FOUND when neither has it, and also (with the
  // same message) when `uid` never sent its text: a fingerprint-only compile
  // finds only programs of the caller's uid (memory: CompiledProgram::
  // suppliers; disk: the uid in the entry's key, entries without one being
  // the daemon's). `uid` -1, the daemon's own uid and root find any.
  StatusOr<CompileOutcome> CompileByFingerprint(const cache::Fingerprint& fingerprint,
                                                int64_t uid = -1);

  // The memory-cache hit of Compile / CompileByFingerprint, or nullopt
  // (then call those): a hash and one lookup, no compile and no thread hop.
  // A miss is not counted here (the full call counts it).
  std::optional<CompileOutcome> CompileFromMemory(std::string_view program_text,
                                                  const CompileSpec& spec);
  std::optional<CompileOutcome> CompileByFingerprintFromMemory(
      const cache::Fingerprint& fingerprint, int64_t uid = -1);

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

  // The state as JSON, as `viewer` may see it: for the daemon's own uid and
  // root (and in-process callers) the whole state — counters, cache
  // statistics, every client and, with `list_keys`, the memory cache's
  // entries (at most 256: fingerprint, program, device, argument_shapes,
  // hits, compile_micros, bytes, last_use_unix_ms), "view":"all"; for any other uid only its own
  // uid's sessions and, with `list_keys`, viewer.own_keys, "view":"uid"
  // (one uid learns nothing of another's clients or programs).
  std::string StatsJson(bool list_keys, const StatsViewer& viewer = {}) const;
  // Adds "name": json() to the full view of StatsJson ("view":"all"; e.g.
  // the remote listener's counters, daemon/server.cc); an empty `json`
  // removes it. Thread-safe; `json` must stay callable until removed.
  void SetStatsSection(const std::string& name, std::function<std::string()> json);
  InstanceStats stats() const;

  // Counters the sessions bump.
  void CountSessionOpened() { ++sessions_opened_; }
  void CountSessionClosed() { ++sessions_closed_; }
  void CountRequest() { ++requests_; }
  void CountBadRequest() { ++bad_requests_; }
  void CountExecute(bool ok) { ++(ok ? executes_ : execute_errors_); }

  const InstanceOptions& options() const { return options_; }
  // The device of requests that name none: options().default_device, or
  // with default_device_is_auto, the next available one once it is lost
  // (said once on stderr).
  std::string DefaultDevice() const;
  // Each client's infeed/outfeed queues (feed_queues.h).
  FeedRegistry& feeds() { return feeds_; }
  // Whether `uid` is trusted with everything: -1 (in-process), root, or the
  // daemon's own uid (they can read the daemon's memory anyway).
  // The device `name` (made on first use), for sessions' device-resident
  // buffers. NOT_FOUND when this daemon lacks it.
  StatusOr<const devices::Device*> DeviceNamed(const std::string& name) { return GetDevice(name); }
  bool TrustedUid(int64_t uid) const {
    return uid < 0 || uid == 0 || uid == static_cast<int64_t>(daemon_uid_);
  }

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
  // `parsed` (may be null or hold null): the module of `text`, already
  // parsed (it is moved from when a compile needs it).
  // `blob_refused` (may be null) receives why a non-empty `blob` could not
  // be used and the program was compiled instead (empty otherwise).
  struct BuildOptions {
    bool flatbuffer_module = false;
    bool profile = false;
    std::vector<devices::CompileDump>* dumps = nullptr;
    std::unique_ptr<ir::Module>* parsed = nullptr;
    std::string* blob_refused = nullptr;
  };
  StatusOr<std::shared_ptr<const CompiledProgram>> Build(const cache::CacheKeyParts& parts,
                                                         const cache::Fingerprint& fingerprint,
                                                         const std::string& device,
                                                         std::string text, std::string_view blob,
                                                         std::string* serialized,
                                                         const BuildOptions& build_options);
  // The key of a program whose program part (ProgramKey::Part) is
  // `program_part`.
  // Not const: it asks the device (GetDevice) for its compile target.
  cache::CacheKeyParts KeyParts(std::string program_part, const CompileSpec& spec);
  // The alias-map key of `bytes` sent with `spec` (the bytes' hash, format
  // and, in an unshared cache, uid).
  std::string AliasKey(std::string_view bytes, const CompileSpec& spec) const;
  // What `want` differs in from the nearest cached entry of the same program
  // and owner (memory, then disk); "" when none is cached.
  std::string ExplainMiss(const cache::CacheKeyParts& want);
  static void AppendKeyJson(std::ostringstream& out, const cache::MemoryCacheEntryInfo& entry);
  static void AppendClientsJson(std::ostringstream& out,
                                const std::vector<std::shared_ptr<ClientCounters>>& clients);
  // The memory-cache hit for `fingerprint` (timed from `start`), or nullopt;
  // also nullopt when `must_have_sent` and `uid` may not see the program
  // (CompileByFingerprint's rule). A hit records `uid` as a supplier unless
  // `must_have_sent`.
  std::optional<CompileOutcome> ProbeMemory(const cache::Fingerprint& fingerprint,
                                            std::chrono::steady_clock::time_point start,
                                            int64_t uid, bool must_have_sent);
  // The uid a CompileSpec::uid stands for (-1 = the daemon's).
  int64_t ResolveUid(int64_t uid) const {
    return uid < 0 ? static_cast<int64_t>(daemon_uid_) : uid;
  }

  InstanceOptions options_;
  const uid_t daemon_uid_;  // geteuid() at creation
  FeedRegistry feeds_;
  std::mutex devices_mu_;
  std::map<std::string, std::unique_ptr<devices::Device>, std::less<>> devices_;
  // DefaultDevice's replacement for a lost default (a loss is for good):
  // resolved once, at the first request after it.
  mutable std::once_flag default_replaced_once_;
  mutable std::string default_replacement_;
  cache::MemoryCache<CompiledProgram> memory_cache_;
  cache::AliasMap aliases_;  // AliasKey -> ProgramKey::Part
  std::unique_ptr<cache::DiskCache> disk_cache_;  // null = none
  FairGate execute_gate_;
  LatencyHistogram compile_latency_;   // device compiles (from text or disk)
  LatencyHistogram execute_latency_;   // Execute requests, daemon side
  mutable std::mutex clients_mu_;
  mutable std::mutex sections_mu_;
  std::map<std::string, std::function<std::string()>> stats_sections_;  // sections_mu_
  std::map<uint64_t, std::shared_ptr<ClientCounters>> clients_;
  // Compile threads (started on first use) and their queue.
  std::mutex compile_mu_;
  std::condition_variable compile_cv_;
  std::deque<std::function<void()>> compile_queue_;
  std::vector<std::thread> compile_threads_;
  bool compile_stop_ = false;
  std::atomic<uint64_t> compiles_{0}, disk_loads_{0}, compile_errors_{0},
      unknown_device_compiles_{0}, sessions_opened_{0},
      sessions_closed_{0}, requests_{0}, bad_requests_{0}, executes_{0}, execute_errors_{0};
};

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_INSTANCE_H_
