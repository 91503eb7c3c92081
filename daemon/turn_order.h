// TurnOrder: which queued session gets the next turn with a turn slot
// (daemon/dispatcher.h, "Turns"): the one that has had the least of the
// slots' time so far, the earliest queued of equals — so that a session
// whose quantum was cut short (its client was not on a CPU for its next
// request within the wait) makes it up at its next turn, rather than
// falling behind for good. In plain round robin each cut cost its session a
// whole quantum: with 2 ms quanta, eight tiny-request clients on two vCPUs
// got min/max shares of 0.81-0.93 (BENCHMARKS.md).
//
// Service is counted in requests: a request served counts one, and a wait
// for a request that did not come counts its length at the recent pace (the
// slot was held for nothing), so a client slow between requests cannot hold
// the slot by being behind. A session that was idle banks nothing: at a
// pick its service is raised to no less than `credit` (a quantum's
// requests) below the last pick's.
//
// The caller keeps each session's service and guards it and the TurnOrder
// (the dispatcher: the queue's lock, and the serving worker while it runs).
// Plain value; not thread-safe.
#ifndef JITD_DAEMON_TURN_ORDER_H_
#define JITD_DAEMON_TURN_ORDER_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace jitd::daemon {

class TurnOrder {
 public:
  // The most queued items Choose looks at (a pick costs the same with
  // hundreds of sessions queued).
  static constexpr size_t kWindow = 64;

  // One queued item, as Choose sees it.
  struct Queued {
    bool turn = false;             // a session whose next turn needs a turn slot
    bool request = false;          // it has a request waiting
    uint64_t* service = nullptr;   // its service (a turn session's)
  };

  // The index of the item to take next from a queue whose first items are
  // `queued` (at least one; those past kWindow are not looked at). The front, unless it is a turn session with a
  // request waiting; then, of the turn sessions with a request waiting
  // from the front up to the first item that is not a turn session, the
  // Pick. Nothing but turn sessions is passed over (a posted task, a
  // session of long requests), so every item reaches the front; and a
  // front session with nothing waiting (a hot session polled) is taken in
  // turn, since passed over for good it would hold back all behind it.
  size_t Choose(std::span<const Queued> queued, uint64_t credit);

  // The index of the candidate to serve next, given pointers to the
  // candidates' services in queue order (at least one): the least, after
  // raising each to the floor (the last pick's service less `credit`). The
  // pick's service is stored raised.
  size_t Pick(std::span<uint64_t* const> services, uint64_t credit);

  // What a turn adds to its session's service: `served` requests, and
  // `wasted_nanos` spent waiting for requests that did not come, at
  // `pace_nanos` a request (none until a pace is measured).
  static uint64_t Charge(uint64_t served, int64_t wasted_nanos, int64_t pace_nanos);

 private:
  uint64_t last_ = 0;
};

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_TURN_ORDER_H_
