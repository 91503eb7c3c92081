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
//   ready    in the run queue (FIFO), or just taken from epoll by a worker;
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
//
// Pacing: when more sessions are active (a request within 5 ms) than there
// are CPUs, the OS decides which clients run, and a worker serves whoever
// does: left alone, clients that happen to run beside a worker get many
// times the calls of the others. Then a session served `pace_lead` (32)
// requests more than the least served active one is held back (`pace_hold`,
// 200 µs at most), leaving
// the CPUs to the clients that lag; a laggard that did not catch up in that
// time asks less by choice and is forgiven (moved up to the held session's
// count). A session waking from a quiet spell starts at the least served
// count, so it gets no burst for time it asked for nothing. The cost: a
// client of microsecond requests among many active ones that ask rarely
// waits up to 200 µs per 32 requests, and when clients outnumber the CPUs
// the holds trade aggregate calls/s for equal shares (`jitd serve
// --pace-lead=0` turns pacing off; BENCHMARKS.md has both).
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
// Closing: the client's close (EOF/hang-up on the socket) frees the session
// on the worker that notices it; nothing of the client's outlives that.
//
// Thread safety: Post and Add may be called from any thread; the callbacks
// run on worker threads. Lifetime: the destructor cancels every session,
// joins the threads (each finishes its request in progress, which cancelled
// requests do promptly) and then destroys the sessions.
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
  // Pacing (see the file comment): how many requests a session may be
  // ahead of the least served active one while active sessions outnumber
  // the CPUs (0 = no pacing), and the longest it is then held back.
  uint64_t pace_lead = 32;
  std::chrono::microseconds pace_hold{200};
};

// Counters, a snapshot. Plain value.
struct DispatcherStats {
  uint64_t sessions = 0;      // sessions held now
  uint64_t threads = 0;       // worker threads now
  uint64_t spares_started = 0;
  uint64_t turns = 0;         // sessions served (one or more requests each)
  uint64_t requests = 0;
};

class Dispatcher {
 public:
  // Called on a worker thread when a session is freed (its client closed).
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
