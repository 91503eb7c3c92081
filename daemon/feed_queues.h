// FeedQueues: the daemon's infeed and outfeed queues, one FIFO of tensors per
// (device, replica) and direction, shared by every session of an Instance.
//
// Infeed: a client's TransferToInfeed pushes a value; an executing
// `stablehlo.infeed` pops one value per tensor result, waiting (bounded by
// its execution deadline) until enough are queued. Outfeed: an executing
// `stablehlo.outfeed` pushes one value per tensor operand; a client's
// TransferFromOutfeed pops one, waiting up to its timeout. Because the queues
// belong to the instance, one process can feed while another executes.
//
// Pops take values only when the front of the queue has exactly the types
// asked for; a mismatch is INVALID_ARGUMENT and consumes nothing. Each
// queue holds at most `max_queue_bytes`: a client's push over it is
// RESOURCE_EXHAUSTED at once; an executing outfeed waits for room (a read)
// until its deadline.
//
// Thread safety: every method may be called from any thread. Waits wake at
// least every `poll` to check the caller's cancel flag (a closing session),
// so no wait outlives a Session::Stop by more than that. Lifetime: owned by
// the Instance.
#ifndef JITD_DAEMON_FEED_QUEUES_H_
#define JITD_DAEMON_FEED_QUEUES_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
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
  // `replica`, `direction`). Without a deadline a full queue answers
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

  // Values queued now (for stats and tests).
  size_t size(FeedDirection direction, const std::string& device, uint32_t replica) const;

 private:
  struct Queue {
    std::deque<ir::Literal> values;
    uint64_t bytes = 0;
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
};

// "infeed" / "outfeed".
const char* FeedName(FeedDirection direction);

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_FEED_QUEUES_H_
