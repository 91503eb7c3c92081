// FeedQueues: one client's infeed and outfeed queues — a FIFO of tensors
// per (device, replica) and direction — and FeedRegistry, which hands each
// client its own.
//
// Whose queues: a client is a process. Every session of one process (the
// peer's uid and pid, from SO_PEERCRED) shares one FeedQueues, so a library
// that feeds on a second connection while its first one executes (the
// Python package does) still meets its own executions; a session whose pid
// is unknown (0: a peer in another pid namespace, or a test without a peer)
// is a client of its own. No other client — another process, another user —
// can push to or pop from them: feeds never cross clients (issue 13, item
// 6; docs/SECURITY.md). The queues (and every value in them) are freed
// when the client's last session closes.
//
// Infeed: a client's TransferToInfeed pushes a value; an executing
// `stablehlo.infeed` of that client pops one value per tensor result,
// waiting (bounded by its execution deadline) until enough are queued.
// Outfeed: an executing `stablehlo.outfeed` pushes one value per tensor
// operand; the client's TransferFromOutfeed pops one, waiting up to its
// timeout.
//
// Pops take values only when the front of the queue has exactly the types
// asked for; a mismatch is INVALID_ARGUMENT and consumes nothing. A client's
// queues hold at most `max_queue_bytes` in all (daemon memory a client can
// fill: `jitd serve --max-feed-bytes`): a client's push over it is
// RESOURCE_EXHAUSTED at once; an executing outfeed waits for room (a read)
// until its deadline.
//
// Thread safety: every method may be called from any thread. Waits wake at
// least every `poll` to check the caller's cancel flag (a closing session),
// so no wait outlives a session's cancel by more than that. Lifetime: a
// FeedQueues is shared by its client's sessions (FeedRegistry::Acquire);
// the FeedRegistry is owned by the Instance and outlives every session.
#ifndef JITD_DAEMON_FEED_QUEUES_H_
#define JITD_DAEMON_FEED_QUEUES_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "jit/ir/literal.h"
#include "jit/ir/type.h"

namespace jitd::daemon {

enum class FeedDirection { kInfeed, kOutfeed };

class FeedQueues {
 public:
  using Clock = std::chrono::steady_clock;

  explicit FeedQueues(uint64_t max_queue_bytes = uint64_t{1} << 30,
                      std::chrono::milliseconds poll = std::chrono::milliseconds(50))
      : max_queue_bytes_(max_queue_bytes), poll_(poll) {}

  FeedQueues(const FeedQueues&) = delete;
  FeedQueues& operator=(const FeedQueues&) = delete;

  // Appends `values` (in order, all or none) to the queue of (`device`,
  // `replica`, `direction`). Without a deadline full queues answer
  // RESOURCE_EXHAUSTED at once; with one it waits for room until then
  // (DEADLINE_EXCEEDED) or until *cancel turns true (UNAVAILABLE).
  Status Push(FeedDirection direction, const std::string& device, uint32_t replica,
              std::vector<ir::Literal> values,
              std::optional<Clock::time_point> deadline = std::nullopt,
              const std::atomic<bool>* cancel = nullptr);

  // Takes types.size() values from the front of the queue, waiting until
  // that many are queued, `deadline` passes (DEADLINE_EXCEEDED, nothing
  // taken) or *cancel turns true (UNAVAILABLE). No deadline = wait forever
  // (only for tests; the daemon always passes one).
  StatusOr<std::vector<ir::Literal>> Pop(FeedDirection direction, const std::string& device,
                                         uint32_t replica, const std::vector<ir::Type>& types,
                                         std::optional<Clock::time_point> deadline,
                                         const std::atomic<bool>* cancel = nullptr);

  // Replicas (process indices) the client's feeds of `device` may name:
  // [0, replicas(device)). 1 until a compile of a replicated program for
  // that device raises it (AllowReplicas keeps the largest count asked).
  void AllowReplicas(const std::string& device, uint32_t count);
  uint32_t replicas(const std::string& device) const;

  // Values queued now (for stats and tests).
  size_t size(FeedDirection direction, const std::string& device, uint32_t replica) const;
  // Bytes queued now in all of this client's queues.
  uint64_t bytes() const;

 private:
  struct Queue {
    std::deque<ir::Literal> values;
  };
  using Key = std::pair<std::pair<int, std::string>, uint32_t>;
  static Key MakeKey(FeedDirection direction, const std::string& device, uint32_t replica) {
    return {{static_cast<int>(direction), device}, replica};
  }

  const uint64_t max_queue_bytes_;
  const std::chrono::milliseconds poll_;
  mutable std::mutex mu_;
  std::condition_variable changed_;  // notified on every push and pop
  std::map<Key, Queue> queues_;
  std::map<std::string, uint32_t> replicas_;  // by device; absent = 1
  uint64_t bytes_ = 0;  // in all queues_
};

// Who a client is, for its feeds: a process (uid and pid), a remote
// client's process (its identity's uid and the number it picked), or one
// session when neither is known. Plain value.
struct FeedOwner {
  int64_t uid = -1;
  int64_t pid = 0;       // > 0: the client's process
  uint64_t session = 0;  // the session, when pid <= 0 and remote_process == 0
  uint64_t remote_process = 0;  // a remote client process's number (RemoteHello)

  // The owner of a session's feeds.
  static FeedOwner Of(uint64_t session_id, int64_t pid, int64_t uid) {
    return pid > 0 ? FeedOwner{uid, pid, 0} : FeedOwner{uid, 0, session_id};
  }
  auto operator<=>(const FeedOwner&) const = default;
};

// Each client's FeedQueues. Thread-safe; owned by the Instance, which must
// outlive every FeedQueues it handed out.
class FeedRegistry {
 public:
  explicit FeedRegistry(uint64_t max_bytes_per_client = uint64_t{256} << 20,
                        std::chrono::milliseconds poll = std::chrono::milliseconds(50))
      : max_bytes_per_client_(max_bytes_per_client), poll_(poll) {}
  FeedRegistry(const FeedRegistry&) = delete;
  FeedRegistry& operator=(const FeedRegistry&) = delete;

  // The queues of `owner`: the ones its other sessions hold, or new empty
  // ones. They (and the values in them) go when the last holder lets go.
  std::shared_ptr<FeedQueues> Acquire(const FeedOwner& owner);
  // Clients that hold queues now (for stats and tests).
  size_t clients() const;
  uint64_t max_bytes_per_client() const { return max_bytes_per_client_; }

 private:
  const uint64_t max_bytes_per_client_;
  const std::chrono::milliseconds poll_;
  mutable std::mutex mu_;
  std::map<FeedOwner, std::weak_ptr<FeedQueues>> owners_;
};

// "infeed" / "outfeed".
const char* FeedName(FeedDirection direction);

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_FEED_QUEUES_H_
