// QuantumPacer: how many requests a quantum (a session's turn with a turn
// slot, daemon/dispatcher.h) serves — as many as take the turn's time at the
// pace of recent quanta.
//
// Counted rather than timed, so that each session of a round gets as many
// calls: quanta ended by time gave a client slowed by its CPU fewer (min/max
// share 0.82-0.95 for eight clients on two vCPUs). Sized by time, so that a
// turn's change (two wake-ups, often a worker's move: ~50-130 µs on a VM)
// costs the same share of the CPUs on any machine; a fixed 256 requests were
// ~0.2 ms on one machine and ~0.5 ms on another.
//
// The pace is a moving average (1/8) of the ns per request of quanta that
// their session used up, each sample at most twice the average, so that one
// preempted quantum moves it little. The count is at least kMinRequests (or
// the most, if fewer): a slow moment (a daemon starting, a preempted client)
// must not shrink quanta below what measures the pace again.
//
// Scale: quanta grow with the sessions taking turns. A turn's change costs
// more when the clients' CPUs cycle through more processes (a switch to an
// address space not recently on the CPU: floor/cpu_handoff, 6.7 µs between
// two processes, 13 µs among eight, on this project's VMs; a change at
// eight clients ~10-20 µs more than at two), so with four or more sessions
// per slot a quantum serves twice the count (and may last twice as long).
// The cost: a waiting client's round doubles (eight tiny-request clients on
// two vCPUs: ~15 ms instead of ~7).
//
// Thread safety: Requests and Measure may be called from any thread (the
// pace is one relaxed atomic: a lost sample only delays the average).
#ifndef JITD_DAEMON_QUANTUM_PACER_H_
#define JITD_DAEMON_QUANTUM_PACER_H_

#include <atomic>
#include <cstdint>

namespace jitd::daemon {

class QuantumPacer {
 public:
  static constexpr uint64_t kMinRequests = 64;
  // Samples of fewer requests are ignored.
  static constexpr uint64_t kMinSampleRequests = 8;
  // The most a quantum is scaled by (Scale).
  static constexpr uint64_t kMaxScale = 2;

  // What a quantum's count and time are multiplied by while `active`
  // sessions of short requests take turns with `slots` turn slots: 1 below
  // four sessions a slot, kMaxScale from there.
  static uint64_t Scale(int active, int slots);

  // `most`: the count never exceeds it (at least 1); `turn_nanos`: the time
  // a quantum should take.
  QuantumPacer(uint64_t most, int64_t turn_nanos);

  // Requests for the next quantum: `most` until a pace is measured.
  uint64_t Requests() const;

  // A quantum that its session used up: `requests` requests in `nanos`.
  void Measure(int64_t nanos, uint64_t requests);

  // ns per request; 0 until measured.
  int64_t pace_nanos() const { return pace_nanos_.load(std::memory_order_relaxed); }

 private:
  const uint64_t most_;
  const int64_t turn_nanos_;
  std::atomic<int64_t> pace_nanos_{0};
};

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_QUANTUM_PACER_H_
