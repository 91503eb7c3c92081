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
