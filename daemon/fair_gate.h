// FairGate: the daemon's execute scheduler — at most `slots` executes run at
// once (plus one "express" execute, below), and when more want to run they
// are admitted round-robin across clients, so one busy client (or one
// process with many connections) cannot starve another.
//
// A client is a key chosen by the caller (the daemon uses the peer's pid,
// so all connections of one process share one turn). Each client with
// waiters has a FIFO of them; the clients with waiters form a ring, and a
// freed slot goes to the first waiter of the first client in the ring that
// holds no slot now (else of the client at the head), which then moves to
// the back: while others wait, no client holds more than one slot.
//
// Express lanes: two executes beyond `slots` may run at once, for clients
// that run nothing else: the short lane for a client whose executes have
// been short (a moving average of its runs below `express_below`, 10 ms by
// default), and the trial lane for a client with no history yet (its first
// execute). So a short execute waits at most for one other short execute,
// and a new client's first one at most for another new client's first one
// (at worst the execute time limit), however many long ones hold the slots;
// a client that turns out long uses a lane once, its average then keeps it
// out, and the lanes oversubscribe the CPUs by two executes at most.
// Without them a waiting execute would start at the latest when the first
// running one ends — bounded by the execute time limit, since devices check
// their deadline inside loops and kernels (devices/device.h) — times the
// number of clients ahead of it in the ring divided by the slots.
//
// Uncontended (a free slot, nobody waiting) Acquire and Release are one
// uncontended mutex lock each; a waiter sleeps on its own condition
// variable and is handed its slot directly (no thundering herd).
//
// Thread safety: all methods may be called from any thread. Lifetime: no
// thread may be inside Acquire when the gate is destroyed.
#ifndef JITD_DAEMON_FAIR_GATE_H_
#define JITD_DAEMON_FAIR_GATE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>

namespace jitd::daemon {

class FairGate {
 public:
  // Which kind of turn Acquire granted.
  enum class Lane { kSlot, kShort, kTrial };

  // `slots` executes at once (values below 1 mean 1), plus the express
  // lanes for clients whose executes average below `express_below` and for
  // clients with no history (0 = no express lanes).
  explicit FairGate(int slots,
                    std::chrono::nanoseconds express_below = std::chrono::milliseconds(10))
      : slots_(slots < 1 ? 1 : slots), express_below_(express_below.count()) {}
  FairGate(const FairGate&) = delete;
  FairGate& operator=(const FairGate&) = delete;

  // Blocks until `client` may run one execute; pair with Release.
  Lane Acquire(uint64_t client);
  // Ends one execute of `client` (the key and lane it acquired with) that
  // ran for `ran`: hands its turn to the next waiter (see the file comment).
  void Release(uint64_t client, Lane lane, std::chrono::nanoseconds ran);

  int slots() const { return slots_; }
  // Executes granted after waiting, and on the express lanes (for stats
  // and tests).
  uint64_t waited() const {
    std::lock_guard<std::mutex> lock(mu_);
    return waited_;
  }
  uint64_t express() const {
    std::lock_guard<std::mutex> lock(mu_);
    return express_;
  }
  // Executes waiting for their turn now (for tests).
  size_t waiting() const {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (uint64_t key : ring_) n += clients_.at(key).waiters.size();
    return n;
  }

  // RAII: Acquire in the constructor, Release in the destructor with the
  // time in between.
  class Turn {
   public:
    Turn(FairGate& gate, uint64_t client)
        : gate_(gate), client_(client), lane_(gate.Acquire(client)),
          start_(std::chrono::steady_clock::now()) {}
    ~Turn() { gate_.Release(client_, lane_, std::chrono::steady_clock::now() - start_); }
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;
    Lane lane() const { return lane_; }

   private:
    FairGate& gate_;
    const uint64_t client_;
    const Lane lane_;
    const std::chrono::steady_clock::time_point start_;
  };

 private:
  struct Waiter {
    std::condition_variable cv;
    bool granted = false;
    Lane lane = Lane::kSlot;
  };
  struct Client {
    std::deque<Waiter*> waiters;
    int running = 0;
    int64_t average_ns = -1;  // moving average of its runs; -1 = none yet
  };

  // The express lane `c` may take now, or kSlot for none.
  Lane ExpressFor(const Client& c) const {
    if (express_below_ <= 0 || c.running != 0) return Lane::kSlot;
    if (c.average_ns < 0) return trial_busy_ ? Lane::kSlot : Lane::kTrial;
    return c.average_ns < express_below_ && !short_busy_ ? Lane::kShort : Lane::kSlot;
  }
  bool& Busy(Lane lane) { return lane == Lane::kShort ? short_busy_ : trial_busy_; }
  // Hands `lane` to the first waiter of `it`'s client (lock held).
  void Grant(std::deque<uint64_t>::iterator it, Lane lane);

  const int slots_;
  const int64_t express_below_;
  mutable std::mutex mu_;
  int active_ = 0;
  bool short_busy_ = false;
  bool trial_busy_ = false;
  uint64_t waited_ = 0;
  uint64_t express_ = 0;
  std::unordered_map<uint64_t, Client> clients_;  // key -> its state
  std::deque<uint64_t> ring_;  // clients with waiters, next to serve first
};

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_FAIR_GATE_H_
