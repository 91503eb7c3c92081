// Client: the C++ client of the jitd daemon (libclient).
//
// A Client connects to the daemon's Unix socket, receives its shared segment
// (a memfd) and attaches to it, and says Hello. Every call is then one
// request/reply round trip through the segment's rings, matched by id.
// Buffers live in the segment's heap and the client allocates them:
// AllocateBuffer returns a handle and a span into shared memory that the
// caller fills (arguments) or reads (results) in place, with no copy.
//
// This library links only jitd_ipc and jitd_base — no compiler, no IR.
//
// Errors: UNAVAILABLE (with the socket path and what happened) when there is
// no daemon or the daemon has gone away; PERMISSION_DENIED from Connect when
// the daemon refuses this user, or when it runs as a user this client does
// not trust (ClientOptions::trusted_daemon_uids); DEADLINE_EXCEEDED when a reply does
// not come within ClientOptions::timeout; otherwise the daemon's status
// (NOT_FOUND for an unknown handle, INVALID_ARGUMENT for a bad request...).
//
// Thread safety: every method may be called from any thread; calls are
// serialized (one request in flight per client). Lifetime: the spans in
// Buffer point into the segment mapping and are valid until DestroyBuffer or
// the Client's destruction. Destroying the Client closes the connection; the
// daemon then frees everything this client held.
#ifndef JITD_LIBCLIENT_CLIENT_H_
#define JITD_LIBCLIENT_CLIENT_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "base/unique_fd.h"
#include "ipc/protocol.h"
#include "ipc/segment.h"

namespace jitd::client {

// A tensor's element type and dimensions, as on the wire. Plain value.
struct TensorShape {
  wire::ElementType element_type = wire::ElementType_INVALID;
  std::vector<int64_t> dims;

  bool operator==(const TensorShape&) const = default;
  // "f32[2,3]".
  std::string ToString() const;
};

// Bytes one element of `type` occupies in a buffer (sub-byte types take one
// byte each, as in the daemon); 0 for INVALID or an unknown value.
uint64_t ElementByteSize(wire::ElementType type);
// Bytes a buffer of `shape` holds; INVALID_ARGUMENT for an unknown element
// type, a negative dimension or an overflowing size.
StatusOr<uint64_t> ByteSize(const TensorShape& shape);

// A compile cache key as the daemon reports it: 16 bytes.
using Fingerprint = std::array<uint8_t, 16>;
// 32 lowercase hex characters.
std::string FingerprintHex(const Fingerprint& fingerprint);

// Options of Connect. Plain value.
struct ClientOptions {
  std::string client_name = "libclient";
  // Longest wait for one reply (compiles of big programs take a while).
  std::chrono::milliseconds timeout{120'000};
  // Longest wait for the daemon's handshake after connect().
  std::chrono::milliseconds connect_timeout{5'000};
  // The longest a call spins for its reply before sleeping on the futex. A
  // reply that comes within the spin costs no wake-up of this thread: 50 µs
  // covers a daemon woken from sleep (~10-15 µs here) plus a small execute.
  // Adaptive: after a reply that took t <= reply_spin the next spin is
  // 1.5 t (at least 5 µs); after a slower one (long executes, a loaded
  // machine: spinning buys nothing) it halves. (A remote, tcp://, client
  // does not spin: on loopback here its spin slowed a tiny TLS execute
  // from ~38 to ~55 µs p50, taking the CPU the daemon needed.)
  std::chrono::nanoseconds reply_spin = std::chrono::microseconds(50);
  // Who may be the daemon. Before sending anything, Connect reads the peer
  // credentials of the connected socket (SO_PEERCRED): the daemon must run
  // as this process's effective uid, as root, or as one of these uids (or of
  // the comma-separated uids in $JITD_TRUST_DAEMON_UID); otherwise
  // PERMISSION_DENIED naming the daemon's uid and pid (an impostor may be
  // listening where this client looks, see docs/SECURITY.md).
  std::vector<uint32_t> trusted_daemon_uids;

  // Remote daemons: Connect("tcp://HOST:PORT") (docs/REMOTE.md, USING.md;
  // libclient/remote_link.h). TLS 1.3: the daemon's certificate must chain
  // to tls_ca_file (empty: $JITD_TLS_CA, else the system's CAs) and name the
  // host; tls_cert_file + tls_key_file present a client certificate (mutual
  // TLS; empty: $JITD_TLS_CERT / $JITD_TLS_KEY); token_file holds a bearer
  // token, "TOKEN" or a "NAME TOKEN" line (empty: $JITD_TOKEN_FILE).
  // insecure_loopback: plaintext TCP, loopback addresses only, for a daemon
  // run with --insecure-loopback (tests; $JITD_INSECURE_LOOPBACK=1).
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string token_file;
  bool insecure_loopback = false;
};

// Options of one Execute. Plain value.
struct ExecuteOptions {
  // 0 = the daemon's default (cut to the client's quota either way).
  std::chrono::microseconds deadline{0};
  // Seed of the data that fills dense_resource placeholders; none = such a
  // program fails asking for one.
  std::optional<uint64_t> resource_seed;
  // How that data is distributed (eval::RandomFill): uniform in [-1, 1), or
  // like trained weights (kernels scaled by fan-in, vectors in [0.5, 1.5)).
  enum class ResourceFill : uint8_t { kUniform = 0, kWeights = 1 };
  ResourceFill resource_fill = ResourceFill::kUniform;
  // Replicated execution (issue 17): the executable's process count
  // (Executable::num_processes()). With more than one, the arguments and
  // results (or result shapes) of an execute hold every process's in turn:
  // process 0's, then process 1's, ... (ExecutePerReplica arranges them).
  // 0 = one process.
  uint32_t processes = 0;
};

// Options of Compile. Plain value.
struct CompileOptions {
  std::string device;                       // empty = the daemon's default
  // Every execute of the program reports where its time went
  // (Timing::profile). Part of the cache key.
  bool profile = false;
  // Ask the daemon for the compile's dumps (devices/compile.h: the program
  // before and after each pass, "optimized.mlir", the device's LLVM IR and
  // assembly); Executable::dumps lists them and ReadDump fetches each. Such
  // a compile always compiles (a cached program has no dumps to give).
  bool dumps = false;
  // When non-empty: dumps as above, all read at once and written by this
  // library as files into this directory (created if missing); the daemon
  // itself never writes files for clients.
  std::string dump_dir;
  std::vector<TensorShape> argument_shapes;  // optional; checked by the daemon
  // The program's bytes are a FlatBuffers module (ipc/module.fbs, what the
  // builder makes) instead of StableHLO text.
  bool flatbuffer_module = false;
  // Replicated execution (issue 17): the program runs as num_replicas x
  // num_partitions processes; 0 = what the module's mhlo.num_replicas /
  // mhlo.num_partitions say (else 1). A count contradicting the module's
  // attribute is INVALID_ARGUMENT. Part of the cache key.
  uint32_t num_replicas = 0;
  uint32_t num_partitions = 0;
  // Optional: the device id of process r * num_partitions + p (distinct,
  // non-negative); empty = process i is device i.
  std::vector<int64_t> device_assignment;
};

// A compiled program in this client's session. Plain value.
struct Executable {
  uint64_t handle = 0;  // valid in this client's session only
  Fingerprint fingerprint{};
  bool cache_hit = false;
  uint64_t compile_micros = 0;
  std::vector<TensorShape> arguments;
  std::vector<TensorShape> results;
  std::string explain;  // on a miss: what differs from the nearest cached entry
  // With CompileOptions::dumps: the compile's dumps (name, bytes), unread.
  std::vector<std::pair<std::string, uint64_t>> dumps;
  // The process grid the daemon runs it as (1 x 1 unless replicated).
  uint32_t num_replicas = 1;
  uint32_t num_partitions = 1;
  uint32_t num_processes() const { return num_replicas * num_partitions; }
  // Tuples and tokens (issue 16, item 6): `arguments` / `results` hold the
  // tensor leaves, depth first; these give the trees, one item per
  // top-level value: 't' a tensor (the next leaf), 'k' a token (no buffer,
  // no bytes), '(' items ')' a tuple. Empty when every value is a tensor
  // (then each leaf is one value, as before).
  std::string argument_structure;
  std::string result_structure;
};

// A buffer in the shared heap. `data` is shared memory: the daemon reads it
// during Execute (arguments) and writes it (results).
struct Buffer {
  uint64_t handle = 0;  // valid in this client's session only
  TensorShape shape;
  std::span<uint8_t> data;
};

// Execution times measured by the daemon. Plain value.
struct Timing {
  uint64_t queue_micros = 0;    // request popped -> execution start (argument copy-in)
  uint64_t execute_micros = 0;  // the device's run
  uint64_t total_micros = 0;    // request popped -> reply built
  // Programs compiled with CompileOptions::profile: rows (an op, or a kernel
  // / library call) slowest first, and how many rows the daemon left out to
  // keep its reply small.
  struct ProfileRow {
    std::string name;
    uint64_t count = 0;
    uint64_t nanos = 0;
  };
  std::vector<ProfileRow> profile;
  uint64_t profile_omitted = 0;
};

class RemoteLink;  // remote_link.h

class Client {
 public:
  // Connects to the daemon at `socket_path` (see DefaultSocketPath in
  // daemon/server.h for the usual place), attaches to the segment it sends
  // and exchanges Hello. UNAVAILABLE when no daemon answers.
  //
  // "tcp://HOST:PORT" connects to a remote daemon instead (TLS options in
  // ClientOptions; remote_link.h): the same API, with Buffer::data a private
  // mirror that Execute sends (arguments) and refreshes (results), and
  // feeds, compiles and dumps moving their bytes over the connection.
  static StatusOr<std::unique_ptr<Client>> Connect(const std::string& socket_path,
                                                   ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Allocates a buffer of `shape` in the shared heap and registers it.
  StatusOr<Buffer> AllocateBuffer(const TensorShape& shape);
  // Unregisters and frees a buffer.
  Status DestroyBuffer(uint64_t buffer);
  // A device-resident buffer of `shape` on `device` ("cuda"), allocated by
  // the daemon there (counted on jitd serve --max-device-bytes) and filled
  // from `initial` (a shared-memory buffer of the same shape) when given.
  // Executes take its handle as an argument or result and keep its bytes
  // on the device. DestroyBuffer releases it. Protocol 8.
  StatusOr<uint64_t> CreateDeviceBuffer(const std::string& device, const TensorShape& shape,
                                        const Buffer* initial = nullptr);
  // Copies between device-resident buffer `device_buffer` and `host` (a
  // shared-memory buffer of its size): to_device = host's bytes into it,
  // else its bytes into host. Returns once the copy is done.
  Status CopyBuffer(uint64_t device_buffer, const Buffer& host, bool to_device);

  // Sends `program_text` (StableHLO) and gets an executable handle: compiled
  // now, or found in the daemon's cache.
  StatusOr<Executable> Compile(std::string_view program_text, const CompileOptions& options = {});
  // Finds a program the daemon has cached without sending it; NOT_FOUND on
  // a miss (send the text then).
  StatusOr<Executable> CompileByFingerprint(const Fingerprint& fingerprint);
  // Runs `executable` on argument buffers, writing into result buffers (one
  // per result, of the result's shape). `deadline` 0 = the daemon's default.
  StatusOr<Timing> Execute(uint64_t executable, std::span<const uint64_t> arguments,
                           std::span<const uint64_t> results,
                           std::chrono::microseconds deadline = std::chrono::microseconds(0));
  StatusOr<Timing> Execute(uint64_t executable, std::span<const uint64_t> arguments,
                           std::span<const uint64_t> results, const ExecuteOptions& options);
  // Runs `executable` with result buffers this library allocates: one heap
  // block per entry of `result_shapes` (the executable's result shapes),
  // registered by the daemon as new buffers in the same round trip. On
  // success `*out_results` holds them (the caller destroys them with
  // DestroyBuffer); on failure nothing is left allocated (except after
  // DEADLINE_EXCEEDED, when the daemon may still write the blocks: they stay
  // allocated until the client closes).
  StatusOr<Timing> ExecuteAllocatingResults(uint64_t executable,
                                            std::span<const uint64_t> arguments,
                                            std::span<const TensorShape> result_shapes,
                                            const ExecuteOptions& options,
                                            std::vector<Buffer>* out_results);
  // Runs a replicated executable (issue 17): arguments[i] and results[i]
  // are process i's buffers (process r * num_partitions + p; as many as
  // `executable` has processes), all run at once in one request. The
  // executable's Executable::num_processes() must be passed as `processes`.
  StatusOr<Timing> ExecutePerReplica(uint64_t executable, uint32_t processes,
                                     std::span<const std::vector<uint64_t>> arguments,
                                     std::span<const std::vector<uint64_t>> results,
                                     ExecuteOptions options = {});
  // Drops an executable handle (and its unread dumps).
  Status Release(uint64_t executable);
  // Dump `index` of `executable` (compiled with CompileOptions::dumps). Each
  // dump can be read once: the daemon drops its copy.
  StatusOr<std::string> ReadDump(uint64_t executable, uint32_t index, uint64_t bytes);

  // Infeed / outfeed (daemon/feed_queues.h). `device` empty = the daemon's
  // default device. `replica`: the process index whose queue it is (0 for
  // one-process programs; below the process count of this client's programs
  // on the device, INVALID_ARGUMENT naming the range otherwise). TransferToInfeed queues a copy of
  // `bytes` (exactly ByteSize(shape) of them) for `stablehlo.infeed` ops of
  // this process's executions on that device to read (feed queues belong to
  // the client process: its connections share them, no other process sees
  // them).
  Status TransferToInfeed(const std::string& device, const TensorShape& shape,
                          std::span<const uint8_t> bytes, uint32_t replica = 0);
  // The same from a buffer of this client (no copy on this side).
  Status TransferBufferToInfeed(const std::string& device, const Buffer& buffer,
                                uint32_t replica = 0);
  // Takes the next value a `stablehlo.outfeed` wrote on `device`, waiting up
  // to `timeout` (0 = the daemon's default execute deadline); it must have
  // `shape` (INVALID_ARGUMENT otherwise, and the value stays queued). Its
  // bytes go to `out` (exactly ByteSize(shape) of them).
  Status TransferFromOutfeed(const std::string& device, const TensorShape& shape,
                             std::span<uint8_t> out, std::chrono::milliseconds timeout,
                             uint32_t replica = 0);
  // The same into a buffer of this client.
  Status TransferFromOutfeedToBuffer(const std::string& device, const Buffer& buffer,
                                     std::chrono::milliseconds timeout, uint32_t replica = 0);
  // The daemon's statistics as JSON; `keys` lists cache entries too.
  StatusOr<std::string> Stats(bool keys = false);

  // Pushes `bytes` onto the request ring as they are (tests send malformed
  // messages) and returns the status of the reply that follows.
  Status SendRawForTesting(std::span<const uint8_t> bytes);

  uint64_t session_id() const { return session_id_; }
  const std::string& daemon_version() const { return daemon_version_; }
  uint32_t daemon_protocol_version() const { return daemon_protocol_version_; }
  // The daemon's devices and its default one, from its HelloReply (empty
  // when the daemon is older than that field).
  const std::vector<std::string>& daemon_devices() const { return daemon_devices_; }
  const std::string& daemon_default_device() const { return daemon_default_device_; }
  uint64_t segment_bytes() const { return segment_->size(); }
  // A remote client (tcp://): true, and the identity the daemon gave it
  // ("token:NAME", a certificate's CN); "" for a local one.
  bool remote() const { return remote_ != nullptr; }
  const std::string& remote_identity() const;

 private:
  // A verified reply; it points into reply_.bytes and is valid until the
  // next call (all under mu_).
  struct Reply {
    const wire::ReplyMessage* message = nullptr;
  };

  Client(std::string socket_path, ClientOptions options, UniqueFd socket,
         std::unique_ptr<ipc::Segment> segment, uint64_t session_id);
  // Pushes the finished request and waits for the reply with `id`. Requires
  // mu_. Returns the reply's status as the error when it is not OK.
  // `extra_wait` lengthens ClientOptions::timeout for this call (requests
  // that wait in the daemon on purpose).
  StatusOr<Reply> CallLocked(std::span<const uint8_t> request, uint64_t id,
                             std::chrono::milliseconds extra_wait = std::chrono::milliseconds(0));
  // Sends a feed transfer naming `block` of the heap.
  Status FeedLocked(bool infeed, const std::string& device, const TensorShape& shape,
                    ipc::RingHeapRef block, std::chrono::milliseconds timeout,
                    uint32_t replica);
  StatusOr<Executable> CompileLocked(std::span<const uint8_t> request, uint64_t id);
  StatusOr<Executable> CompileText(std::string_view program_text, const CompileOptions& options);
  // Reads every dump of `executable` into files in `dir`.
  Status WriteDumps(Executable& executable, const std::string& dir);
  StatusOr<Timing> ExecuteLocked(uint64_t executable, std::span<const uint64_t> arguments,
                                 std::span<const uint64_t> results,
                                 std::span<const ipc::RingHeapRef> result_blocks,
                                 const ExecuteOptions& options,
                                 std::vector<uint64_t>* out_handles);
  // Connect's Hello exchange, local or remote.
  Status SayHello();
  // Connect for "tcp://" addresses; CallLocked through the remote link
  // (both in remote_link.cc).
  static StatusOr<std::unique_ptr<Client>> ConnectRemote(const std::string& address,
                                                         ClientOptions options);
  StatusOr<Reply> CallRemoteLocked(std::span<const uint8_t> request, uint64_t id,
                                   std::chrono::milliseconds extra_wait);
  Status Gone(const std::string& what) const;
  bool DaemonGone() const;

  const std::string socket_path_;
  const ClientOptions options_;
  UniqueFd socket_;
  std::unique_ptr<ipc::Segment> segment_;
  const uint64_t session_id_;
  std::string daemon_version_;
  uint32_t daemon_protocol_version_ = 0;
  std::vector<std::string> daemon_devices_;
  std::string daemon_default_device_;

  std::mutex mu_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, ipc::RingHeapRef> buffer_blocks_;  // handle -> heap block
  // Reused by every call (no allocation on the hot path once warm).
  flatbuffers::FlatBufferBuilder fbb_{512};
  ipc::RingMessage reply_;
  // The adaptive reply spin (see ClientOptions::reply_spin).
  std::chrono::nanoseconds spin_{0};
  // Set for a remote client (segment_ is then its private mirror).
  std::unique_ptr<RemoteLink> remote_;
};

}  // namespace jitd::client

#endif  // JITD_LIBCLIENT_CLIENT_H_
