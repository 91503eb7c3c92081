// Session: the daemon's side of one client connection — the client's shared
// segment and its handle tables. The Dispatcher (dispatcher.h) serves it:
// ServeOne on a worker thread while requests wait, ArmSleep when none does.
//
// ServeOne pops one request, copies it out of shared memory (Ring::TryPop
// already copies inline payloads; heap-referenced ones are copied with
// CopyFromHeap), verifies it (ipc::VerifyRequest) and answers with exactly
// one ReplyMessage on the reply ring, inline (the daemon never allocates in
// the client's heap; the reply ring's slots are sized for the largest
// reply). A message that fails verification is answered INVALID_ARGUMENT
// with id 0, and the session carries on.
//
// Handles (executables and buffers) are numbers private to this session:
// another session's handle is NOT_FOUND here. Buffers are client-allocated
// heap ranges the session has checked once against the heap and the shape's
// byte size; their bytes are read (arguments) and written (results) only
// through Segment::HeapBytes.
//
// Thread safety: ServeOne, ArmSleep, HasRequest and Handle are called by
// one thread at a time (the dispatcher's worker whose turn it is, or a test
// driving it); Cancel may be called from any thread at any time. Lifetime:
// destroying the session frees everything the client held (handles,
// segment mapping); no request may be in progress then.
#ifndef JITD_DAEMON_SESSION_H_
#define JITD_DAEMON_SESSION_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "daemon/instance.h"
#include "daemon/stats.h"
#include "devices/platforms.h"
#include "ipc/protocol.h"
#include "ipc/segment.h"

namespace jitd::daemon {

// Options of every session. Plain value.
struct SessionOptions {
  // The client's segment (rings + heap), rounded up to whole pages.
  uint64_t segment_bytes = uint64_t{64} << 20;
  // Register the segment's heap with the GPU when the daemon has one
  // (cuMemHostRegister: pins, so commits, every page of it, under the
  // daemon's cap on pinned memory; see devices/platforms.h).
  bool register_segment_with_gpu = true;
  // Execution deadline when a request gives none.
  std::chrono::milliseconds default_execute_deadline{60'000};

  // Quotas, per client. A request that would go over one is answered
  // RESOURCE_EXHAUSTED (or DEADLINE_EXCEEDED for time) with a message that
  // names the limit; the session's state is unchanged. 0 = no limit.
  //
  // Live executable handles (Compile adds one, Release drops it).
  uint64_t max_executables = 1024;
  // Live buffer handles (CreateBuffer adds one, DestroyBuffer drops it).
  uint64_t max_buffers = 4096;
  // Sum of the byte sizes of the live buffers. Buffers are ranges of the
  // client's own heap, but nothing stops a client registering one range many
  // times, so this bounds what the daemon may read and write per client.
  uint64_t max_buffer_bytes = uint64_t{1} << 30;
  // GPU memory (cuda device) the client's executions may hold at once: the
  // limit of its devices::MemoryAccount (RESOURCE_EXHAUSTED naming
  // --max-device-bytes).
  uint64_t max_device_bytes = 0;
  // The longest one Execute may run: a request's own deadline (or
  // default_execute_deadline) is cut to this; running past it answers
  // DEADLINE_EXCEEDED. (The interpreter checks its deadline between ops.)
  std::chrono::milliseconds max_execute_time{60'000};
  // The longest this client waits for one compile (a cache miss, or a load
  // from disk): past it the answer is DEADLINE_EXCEEDED naming the limit.
  // The parser and devices take no deadline, so the compile itself runs to
  // its end on the daemon's compile threads and is cached (a retry may hit);
  // while it runs, this client's next compile is refused RESOURCE_EXHAUSTED,
  // so one client has at most one such compile going. 0 = no limit (the
  // compile runs on the session thread).
  std::chrono::milliseconds max_compile_time{300'000};
  // How long a reply may wait for room in a full reply ring before the
  // session gives up on it (the client is not reading).
  std::chrono::milliseconds reply_push_timeout{5'000};
};

// The ring geometry the daemon uses: requests up to ~4 KiB inline (larger
// ones go through the heap, allocated by the client); replies up to ~64 KiB,
// always inline.
ipc::SegmentLayout DaemonSegmentLayout();

class Session {
 public:
  // Creates the client's segment. `instance` must outlive the session.
  static StatusOr<std::unique_ptr<Session>> Create(Instance* instance, uint64_t id,
                                                   const SessionOptions& options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  uint64_t id() const { return id_; }
  // The segment's memfd (owned by the session) to pass to the client.
  int segment_fd() const { return segment_->fd(); }
  uint64_t segment_bytes() const { return segment_->size(); }

  // Serves the next request on the ring, if there is one: true when it
  // handled one (its reply is pushed), false when the ring was empty.
  bool ServeOne();
  // Whether a request waits on the ring.
  bool HasRequest() { return segment_->request_ring().HasMessage(); }
  // Marks the ring asleep (Ring::ArmSleep): true = armed, the client's next
  // push wakes the daemon through the connection socket; false = a request
  // arrived meanwhile.
  bool ArmSleep() { return segment_->request_ring().ArmSleep(); }
  // Whether the client sleeps waiting for its reply, and on which CPU (-1:
  // not asleep, or not said): Ring::ConsumerSleeping and
  // SleepingConsumerCpu on the reply ring. Hints.
  bool ClientAsleep() { return segment_->reply_ring().ConsumerSleeping(); }
  int SleepingClientCpu() { return segment_->reply_ring().SleepingConsumerCpu(); }
  // Asks the client to move off `cpu` (the worker's) when it takes its next
  // reply (libclient does, Ring::TakeMoveOffRequest).
  void AskClientToMoveOff(int cpu) { segment_->reply_ring().AskConsumerToMoveOff(cpu); }
  // The client is gone or the daemon stops: a request in progress gives up
  // at its next check (feed waits at once; executes at the device's next
  // deadline check). Thread-safe; idempotent.
  void Cancel() { stop_.store(true, std::memory_order_relaxed); }

  // Records who the client is (for stats, logs and limits); call before the
  // first request is served.
  void SetPeer(int64_t pid, int64_t uid);
  // A remote client's identity and address (daemon/remote_server.h), for
  // stats; after SetPeer, before the first request.
  void SetRemotePeer(const std::string& identity, const std::string& address);
  // A remote client's process number (RemoteHello.client_process; 0 =
  // none): its connections share feed queues and a turn at the execute
  // gate, like one local process's. After SetPeer (whose uid, the remote
  // identity's, keys them too), before the first request.
  void SetRemoteProcess(uint64_t process);
  int64_t peer_uid() const { return peer_uid_; }

  // Handles one request message (a private copy) and returns the encoded
  // ReplyMessage. Never fails: errors become the reply's status.
  std::vector<uint8_t> Handle(std::span<const uint8_t> message);

  // Live handle counts (for tests and logs); call only while the thread is
  // not running, or accept a racy answer.
  size_t num_executables() const { return executables_.size(); }
  size_t num_buffers() const { return buffers_.size(); }
  uint64_t buffer_bytes() const { return buffer_bytes_; }

 private:
  struct Buffer {
    ir::Type type;
    ipc::RingHeapRef ref;  // {0, 0} for a device-resident one
    // Set: a device-resident buffer (CreateBufferRequest.device).
    std::shared_ptr<devices::DeviceBuffer> device;
  };

  Session(Instance* instance, uint64_t id, SessionOptions options,
          std::unique_ptr<ipc::Segment> segment);
  void PushReply(std::span<const uint8_t> reply);
  // Handle's work: the reply is built in fbb_ and the span points into it
  // (valid until the next call).
  std::span<const uint8_t> HandleInto(std::span<const uint8_t> message);
  std::span<const uint8_t> Reply(uint64_t id, const Status& status,
                                 wire::ReplyBody type = wire::ReplyBody_NONE,
                                 flatbuffers::Offset<void> body = 0);
  std::span<const uint8_t> HandleCompile(uint64_t id, const wire::CompileRequest* compile);
  std::span<const uint8_t> HandleExecute(uint64_t id, const wire::ExecuteRequest* execute,
                                         std::chrono::steady_clock::time_point start);
  // An execute of a program with several processes (issue 17), or one that
  // asks for several (session_replicated.cc): per-process arguments and
  // results, devices::ExecuteReplicated, per-process feeds.
  std::span<const uint8_t> HandleExecuteReplicated(uint64_t id,
                                                   const wire::ExecuteRequest* execute,
                                                   const CompiledProgram& program,
                                                   std::chrono::steady_clock::time_point start);
  // Device-resident buffers (session_device.cc): CreateBuffer with a
  // device, CopyBuffer, and an execute naming any of them.
  std::span<const uint8_t> HandleCreateDeviceBuffer(uint64_t id, const wire::CreateBufferRequest* create,
                                                    ir::Type type);
  std::span<const uint8_t> HandleCopyBuffer(uint64_t id, const wire::CopyBufferRequest* copy);
  bool NamesDeviceBuffers(const wire::ExecuteRequest* execute) const;
  std::span<const uint8_t> HandleExecuteOnDevice(uint64_t id, const wire::ExecuteRequest* execute,
                                                 const CompiledProgram& program,
                                                 std::chrono::steady_clock::time_point start);
  // What every execute path shares (session.cc): the request's time
  // budget — its deadline (or the default), cut to max_execute_time, with
  // *quota_bound (when not null) telling whether the quota cut it; the run
  // options the request sets (how resources are filled: INVALID_ARGUMENT
  // for an unknown fill); and a failed run's status, which names
  // max_execute_time when the quota's deadline stopped it.
  std::chrono::microseconds ExecuteBudget(uint64_t deadline_micros, bool* quota_bound) const;
  static StatusOr<devices::ExecuteOptions> RunOptionsOf(const wire::ExecuteRequest& execute);
  Status RunFailure(const Status& failed, bool quota_bound) const;
  void PublishCounts();
  // OK when this client may hold `count` more buffers of `bytes` more bytes
  // in all (SessionOptions::max_buffers / max_buffer_bytes), else
  // RESOURCE_EXHAUSTED naming the limit and its flag; `what` starts the
  // message ("CreateBuffer", "Execute").
  Status RoomForBuffers(std::string_view what, uint64_t count, uint64_t bytes) const;
  // The names of the programs held (ClientCounters::SetPrograms); after
  // every change to executables_.
  void PublishPrograms();
  std::span<const uint8_t> HandleReadDump(uint64_t id, const wire::ReadDumpRequest* read);
  void DropDumps(uint64_t handle);
  // TransferToInfeed / TransferFromOutfeed (session.cc), built in fbb_.
  std::span<const uint8_t> HandleFeed(uint64_t id, const wire::RequestMessage& request);

  Instance* const instance_;
  const uint64_t id_;
  const SessionOptions options_;
  std::unique_ptr<ipc::Segment> segment_;
  // The segment's heap registered with the GPU (null: no GPU, or the
  // option is off); goes before the segment is unmapped. The whole heap at
  // attach when it fits under the cap on pinned memory; else its front,
  // from the first execute whose buffers it holds, or the first copy
  // between it and a device buffer (PinHeapFront).
  std::unique_ptr<devices::HostMemoryRegistration> host_registration_;
  uint64_t heap_front_tried_ = 0;  // the front PinHeapFront last asked for
  // Pins the heap's front [0, P) with P >= `end` (64 MiB, doubled as
  // buffers reach further; at most the heap) unless pinned already: a
  // client's buffers come from the front of its heap, so its copies to and
  // from the GPU are direct without pinning (committing) the whole segment.
  // Refused past the cap: copies stage, as before; tried again only for a
  // front beyond the refused one.
  void PinHeapFront(uint64_t end);
  std::atomic<bool> stop_{false};
  int64_t peer_uid_ = -1;
  ipc::RingMessage message_;  // ServeOne's scratch

  // Touched only by the thread running Handle.
  uint64_t next_handle_ = 1;
  std::unordered_map<uint64_t, std::shared_ptr<const CompiledProgram>> executables_;
  std::unordered_map<uint64_t, Buffer> buffers_;
  uint64_t buffer_bytes_ = 0;  // sum of buffers_' lengths
  std::shared_ptr<PendingCompile> abandoned_compile_;  // one past max_compile_time
  // Unread dumps of compiles with CompileOptions.dumps, by executable handle
  // (a read empties its slot), and their total size.
  struct UnreadDump {
    devices::CompileDump dump;
    bool read = false;
  };
  std::unordered_map<uint64_t, std::vector<UnreadDump>> dumps_;
  uint64_t dump_bytes_ = 0;
  std::vector<devices::ProfileEntry> profile_;  // scratch for profiled executes
  flatbuffers::FlatBufferBuilder fbb_{1024};
  std::vector<uint8_t> aligned_;  // scratch for misaligned messages
  std::vector<eval::RuntimeValue> args_;  // scratch for Execute's arguments
  // Private copies of arguments and results for executables that run on
  // raw buffers, reused across executes (grown, never shrunk: at most what
  // this client's buffers hold, max_buffer_bytes).
  struct ScratchBuffer {
    struct Free {
      void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t(64)); }
    };
    std::unique_ptr<uint8_t[], Free> data;
    size_t capacity = 0;
    // At least `bytes` (64-byte aligned; contents unspecified).
    uint8_t* Reserve(size_t bytes) {
      if (bytes > capacity || !data) {
        data.reset(static_cast<uint8_t*>(::operator new[](std::max<size_t>(bytes, 64),
                                                          std::align_val_t(64))));
        capacity = std::max<size_t>(bytes, 64);
      }
      return data.get();
    }
  };
  std::vector<ScratchBuffer> scratch_;
  std::vector<void*> scratch_ptrs_;
  const std::shared_ptr<ClientCounters> counters_;
  // This client's key at the execute gate: its pid once known, else a key
  // of its own (session ids with the top bit set never collide with pids).
  uint64_t fair_key_ = id_ | (uint64_t{1} << 63);
  // This client's infeed/outfeed queues (feed_queues.h): the session's own
  // until SetPeer names its process, then that process's.
  std::shared_ptr<FeedQueues> feeds_;
  // This client's device memory (the cuda device), limited by
  // SessionOptions::max_device_bytes.
  const std::shared_ptr<devices::MemoryAccount> device_memory_;
};

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_SESSION_H_
