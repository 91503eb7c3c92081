// Dispatcher: serves the request rings of every session with a small pool of
// worker threads, in turn, so that an idle session costs no thread and no
// session, busy or stuck, keeps the others waiting.
//
// Each session's connection socket sits in one epoll set (EPOLLONESHOT). A
// session is
//   idle     its request ring is armed (Ring::ArmSleep) and its socket is
//            watched: the client's next push finds the ring asleep and
//            writes a byte on the socket (its ring's wake hook), so the
//            socket turns readable;
//   ready    in the run queue (FIFO, but for turns with a slot: below), or
//            just taken from epoll by a worker;
//   running  a worker serves it, one request at a time: after each it goes
//            to the back of the queue when other work waits; otherwise the
//            worker spins briefly for the next request (back-to-back
//            requests cost no wake-up), then arms the ring and lets it idle.
// Idle workers wait in epoll_wait themselves (a wake-up is one hop); a busy
// worker polls epoll without blocking before each queued turn and every
// 20 µs while it serves one session back to back, so new arrivals join the
// back of the queue and nobody is skipped.
//
// Hot sessions: a session whose ring is empty while others wait, and that
// asked for something within the last 50 µs, is polled (back of the queue)
// rather than armed, so a client running beside others rings no doorbell.
// In a turn with a slot (below) the window is 1 ms, whether others are
// queued or not: there a client waits its turn for a CPU between requests.
//
// Turns when clients outnumber the CPUs: a session of short requests served
// back to back keeps two CPUs busy, its client calling and the worker serving.
// With more such sessions active (a request within 5 ms) than cpus/2, serving
// whoever happens to ask leaves the order to the OS scheduler, and every
// request costs a switch between processes (about 1 µs here, several µs with
// the wake-ups), so calls/s collapse and shares grow unequal (two such clients
// on two CPUs got 0.65x one client's calls/s). Then a turn needs one of cpus/2
// (at least 1) turn slots, and a turn with a slot is a quantum: the worker
// serves that session's requests back to back, waiting for each next one
// (spinning 10 µs, then yielding its CPU, up to 100 µs), for as many requests
// as take `turn` (1 ms) at the pace of recent quanta (QuantumPacer: at least
// 64, at most `turn_requests`, 4096), or for twice `turn`, whichever comes
// first: counted, so that each session of a round gets as many calls; sized by
// time, so that a turn's change (two wake-ups, often a move: ~50-130 µs on a
// VM) costs the same share of the CPUs on any machine. Meanwhile the other
// clients wait for their replies asleep, so the CPUs hold the worker and the
// client whose turn it is, and that client calls at the speed of a lone one. If
// that client's requests come only after the worker yields (three in a row),
// the two share a CPU — the kernel keeps two tasks that just ran where they
// are, even beside an idle CPU — and the worker asks the client to move off
// its CPU (Ring::AskConsumerToMoveOff in the reply ring; libclient drops that
// CPU from its thread's affinity for a moment, base/cpu_move.h;
// DispatcherStats::moves). Two steps keep that from happening at a turn's
// change, where it mostly did: a quantum's end waits (30 µs at most) until
// its client sleeps, so its CPU is idle when the next client is woken; and a
// quantum's start asks the next client to move with its first reply when it
// sleeps on the worker's CPU (a sleeping client says which CPU it sleeps on,
// Ring::SleepingConsumerCpu), since the kernel wakes a thread where it slept
// unless another CPU is idle. The client moves rather than the worker, so the
// clients gather off the worker's CPU and stay there: after a round, turns
// change without moves (with the worker moving instead, half the changes at
// eight clients moved it, each ~50 µs more, BENCHMARKS.md). The next turn
// with a slot goes to the queued session, of those with a request waiting,
// that has had the least of the slots' time (TurnOrder: in requests, a wait
// for a request that did not come counted at the pace), so a quantum cut
// short is made up at the next turn and each active session gets the same
// number of requests over a few rounds; nothing else in the queue is passed
// over, and a front session with nothing waiting is taken in turn. With four or more active sessions a
// slot, quanta serve twice the count (QuantumPacer::Scale): a change costs
// more when the clients' CPUs cycle through more processes. The cost: a
// waiting client may wait a round of quanta (eight tiny-request clients on
// two CPUs: about 15 ms; at most sessions x 4 ms). A
// worker that finds every slot taken sleeps until it is needed — an item that
// needs no slot is queued, or the monitor (every `stall`) sees every slot's
// worker in one request for longer than `turn` (a blocking request: then the
// others are served a request per turn); the slots' workers serve the queue
// meanwhile.
// `jitd serve --turn-requests=1` turns quanta, slots and moves off
// (BENCHMARKS.md has both).
//
// Sessions of long requests: a session whose last two requests each held
// the worker 50 µs or more (executes that compute, compiles, feed waits)
// has a client that sleeps while it is served, so it needs no CPU beside
// the worker's: it takes no turn slot and does not count as active, and
// the second such request ends a quantum it was in. With slots, four
// clients of 1 ms executes on two CPUs ran about a fifth slower than
// without (BENCHMARKS.md).
//
// Blocking: a request may hold its worker for long (an execute, a wait for
// an execute slot, a compile, a feed). A monitor thread, awake only while
// some worker is busy, checks every `stall`: when every worker has been in
// its current turn longer than that, it starts a spare worker (up to
// `max_threads`), so new clients and short requests are served within about
// two stall periods whatever the others do; spares exit after a second
// idle. A session whose turn has lasted longer than `stall` also gets its
// socket watched for hang-up: a client that dies mid-request cancels that
// request (Session::Cancel) and its session is freed when the request ends.
//
// Closing: the client's close (EOF/hang-up on the socket) takes the
// session out of the dispatcher on the worker that notices it, which runs
// the ClosedCallback; a reaper thread then tears the session down (its
// segment unmapped, its executables and buffers released), so that a burst
// of closes never delays live clients' requests. Nothing of the client's
// outlives that.
//
// Thread safety: Post and Add may be called from any thread; the callbacks
// run on worker threads. Lifetime: the
// destructor cancels every session, joins the threads (each finishes its
// request in progress, which cancelled requests do promptly; the reaper
// finishes the sessions closed before) and then destroys the sessions.
#ifndef JITD_DAEMON_DISPATCHER_H_
#define JITD_DAEMON_DISPATCHER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "base/status.h"
#include "base/unique_fd.h"
#include "daemon/session.h"

namespace jitd::daemon {

// Options of a Dispatcher. Plain value.
struct DispatcherOptions {
  // Worker threads serving rings; 0 = the number of CPUs (at least 2).
  int workers = 0;
  // Most threads, spares included; 0 = workers + 1024.
  int max_threads = 0;
  // How long a worker spins for a session's next request when nothing else
  // is waiting (see ipc::WaitOptions::spin).
  std::chrono::nanoseconds spin = std::chrono::microseconds(5);
  // How long a turn may last before the monitor counts its worker as stuck.
  std::chrono::milliseconds stall{5};
  // How long a spare worker stays idle before it exits.
  std::chrono::milliseconds spare_idle{1000};
  // Turns while active sessions of short requests outnumber cpus / 2 (see
  // the file comment): the most requests of one session a turn serves
  // while others wait (fewer when they take longer than `turn` at the
  // recent pace; 1 = a request per turn, no quanta), and how long a turn
  // lasts at that pace (one ends after twice that whatever its pace; a
  // request longer than that has its worker counted as blocking).
  uint64_t turn_requests = 4096;
  std::chrono::microseconds turn{1000};
  // CPUs the sessions' clients share (0 = this machine's).
  int cpus = 0;
};

// Counters, a snapshot. Plain value.
struct DispatcherStats {
  uint64_t sessions = 0;      // sessions held now
  uint64_t threads = 0;       // worker threads now
  uint64_t spares_started = 0;
  uint64_t turns = 0;         // sessions served (one or more requests each)
  uint64_t requests = 0;
  uint64_t quanta = 0;             // turns with a turn slot that served requests
  uint64_t quantum_requests = 0;   // requests served in them
  uint64_t moves = 0;              // clients asked to move off their worker's CPU
  uint64_t slot_waits = 0;         // workers that found every turn slot taken (then slept)
};

class Dispatcher {
 public:
  // Called on a worker thread when a session is closed (its client went),
  // before the reaper frees it; on the calling thread when Add fails, and
  // in Stop.
  using ClosedCallback = std::function<void(const Session& session)>;

  static StatusOr<std::unique_ptr<Dispatcher>> Create(DispatcherOptions options,
                                                      ClosedCallback on_closed);
  // Stop(), then frees what is left.
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Runs `task` on a worker, in queue order with the sessions' turns.
  void Post(std::function<void()> task);
  // Serves `session`, whose client is at the other end of `connection`,
  // from now on (its first turn is queued at once). The session is freed
  // when the connection's peer closes, or with the dispatcher; either way
  // (and when Add fails) the ClosedCallback sees it first.
  Status Add(std::unique_ptr<Session> session, UniqueFd connection);

  DispatcherStats stats() const;

  // Cancels every session's request in progress, joins the workers and the
  // monitor, and frees the sessions (the ClosedCallback sees each); tasks
  // never run are dropped. Idempotent; from one controlling thread. An
  // owner whose posted tasks reach the dispatcher through a pointer calls
  // Stop before destroying it, so that no task runs while the pointer is
  // reset.
  void Stop();

 private:
  struct Impl;
  explicit Dispatcher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_DISPATCHER_H_
