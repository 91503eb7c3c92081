// FairGate: the daemon's execute scheduler — at most `slots` executes run at
// once, and when more want to run they are admitted round-robin across
// clients, so one busy client (or one process with many connections) cannot
// starve another.
//
// A client is a key chosen by the caller (the daemon uses the peer's pid,
// so all connections of one process share one turn). Each client with
// waiters has a FIFO of them; the clients with waiters form a ring, and a
// freed slot goes to the first waiter of the first client in the ring that
// holds no slot now (else of the client at the head), which then moves to
// the back: while others wait, no client holds more than one slot, and a
// waiting execute starts at the latest when the first running one ends —
// bounded by the execute time limit, since devices check their deadline
// inside loops and kernels (devices/device.h). Uncontended (a free slot, nobody
// waiting) Acquire and Release are one uncontended mutex lock each; a
// waiter sleeps on its own condition variable and is handed the slot
// directly (no thundering herd).
//
// Thread safety: all methods may be called from any thread. Lifetime: no
// thread may be inside Acquire when the gate is destroyed.
#ifndef JITD_DAEMON_FAIR_GATE_H_
#define JITD_DAEMON_FAIR_GATE_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>

namespace jitd::daemon {

class FairGate {
 public:
  // `slots` executes at once; values below 1 mean 1.
  explicit FairGate(int slots) : slots_(slots < 1 ? 1 : slots) {}
  FairGate(const FairGate&) = delete;
  FairGate& operator=(const FairGate&) = delete;

  // Blocks until `client` may run one execute; pair with Release.
  void Acquire(uint64_t client);
  // Ends one execute of `client` (the key it acquired with): hands the slot
  // to the next waiter, round-robin, preferring a client that runs nothing
  // now — so while others wait, no client holds more than one slot.
  void Release(uint64_t client);

  int slots() const { return slots_; }
  // Executes granted after waiting (for stats and tests).
  uint64_t waited() const {
    std::lock_guard<std::mutex> lock(mu_);
    return waited_;
  }

  // RAII: Acquire in the constructor, Release in the destructor.
  class Turn {
   public:
    Turn(FairGate& gate, uint64_t client) : gate_(gate), client_(client) {
      gate_.Acquire(client);
    }
    ~Turn() { gate_.Release(client_); }
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;

   private:
    FairGate& gate_;
    const uint64_t client_;
  };

 private:
  struct Waiter {
    std::condition_variable cv;
    bool granted = false;
  };

  const int slots_;
  mutable std::mutex mu_;
  int active_ = 0;
  uint64_t waited_ = 0;
  std::unordered_map<uint64_t, std::deque<Waiter*>> queues_;  // client -> its waiters
  std::deque<uint64_t> ring_;  // clients with waiters, next to serve first
  std::unordered_map<uint64_t, int> running_;  // client -> slots it holds
};

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_FAIR_GATE_H_
