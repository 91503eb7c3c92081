#include "daemon/dispatcher.h"

#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <variant>

#include "base/cpu_relax.h"
#include "daemon/quantum_pacer.h"
#include "daemon/turn_order.h"

namespace jitd::daemon {
namespace {

using Clock = std::chrono::steady_clock;

// epoll keys of the dispatcher's own descriptors; sessions count up from
// kFirstSessionKey.
constexpr uint64_t kStopKey = 1;
constexpr uint64_t kKickKey = 2;
constexpr uint64_t kFirstSessionKey = 16;

constexpr uint32_t kWatchInput = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
constexpr uint32_t kWatchHangup = EPOLLRDHUP | EPOLLONESHOT;

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct Dispatcher::Impl {
  // One session and its connection.
  struct Entry {
    enum class State { kIdle, kReady, kRunning, kClosed };
    uint64_t key = 0;
    std::unique_ptr<Session> session;
    UniqueFd socket;
    std::mutex mu;
    State state = State::kReady;  // guarded by mu
    bool hangup = false;          // guarded by mu: the client closed
    bool watching = false;        // guarded by mu: armed for hang-up while running
    std::atomic<int64_t> running_since{0};  // ns; 0 = not in a turn
    std::atomic<int64_t> last_active{0};  // ns: when it last asked for something
    // Its last two requests each held the worker for kLongRequestNanos or
    // more (executes that compute, compiles, waits): its client sleeps
    // while it is served, so it needs no turn slot (see TakeSlot). Two, so
    // that a short request whose worker was preempted does not count.
    std::atomic<bool> long_requests{false};
    bool last_request_long = false;  // the serving worker's
    // Its share of the turn slots' time so far (TurnOrder), in requests:
    // the serving worker's while it runs, queue_mu's while it is queued.
    uint64_t service = 0;
    // In the queue: counted as active (CountActive) however long its round.
    std::atomic<bool> queued{false};
  };
  using EntryPtr = std::shared_ptr<Entry>;
  using Item = std::variant<EntryPtr, std::function<void()>>;

  // What the monitor knows of a worker.
  // A worker's thread (guarded by threads_mu; `exited` set by the thread
  // as its last act under the lock).
  struct Thread {
    std::thread thread;
    bool exited = false;
  };

  struct Worker {
    std::atomic<int64_t> turn_start{0};   // ns; 0 = idle
    std::atomic<bool> holds_slot{false};  // its turn has a turn slot
    int64_t last_harvest = 0;             // ns; the worker's own
  };

  // How often a worker serving one session back to back looks for others
  // that became ready meanwhile (an epoll_wait that does not block).
  static constexpr int64_t kHarvestNanos = 20'000;

  // A session that asked for something within kHotNanos is polled, not
  // armed, when its ring is empty and others wait: it goes to the back of
  // the queue, so a client that runs and calls back to back (its next
  // request a fraction of a µs after its last response) is served at its
  // next turn without ringing. Armed, every request of such a client would
  // cost a doorbell write and an epoll hop — the regime that made many
  // clients on few CPUs slow and their shares unequal.
  static constexpr int64_t kHotNanos = 50'000;

  // A session is active while it asked for something within kActiveNanos;
  // the active ones are counted every kCountNanos (at least).
  static constexpr int64_t kActiveNanos = 5'000'000;
  static constexpr int64_t kCountNanos = 100'000;

  // Within a turn with a slot, how long a worker waits for its session's
  // next request before the turn ends early, and how much of that it
  // spins before it yields instead (its client may share its CPU).
  static constexpr int64_t kTurnWaitNanos = 100'000;
  static constexpr int64_t kTurnSpinNanos = 10'000;
  // Requests in a row that came only after the worker yielded, which make
  // it ask its client to move to another CPU (AskClientOffThisCpu).
  static constexpr int kLateRequestsToMove = 3;
  // How long a worker waits for the next request of a client it asked to
  // move: the move may first wake an idle CPU (~100 µs on a VM).
  static constexpr int64_t kMovingClientWaitNanos = 300'000;
  // The longest a quantum's end waits for its client to sleep
  // (AwaitClientAsleep): a client spins some µs for a reply that does not
  // come (libclient: 5 µs after replies as quick as a quantum's).
  static constexpr int64_t kHandoffNanos = 30'000;
  // With a slot, a session that asked for something within this long is
  // polled rather than armed (kHotNanos otherwise).
  static constexpr int64_t kTurnHotNanos = 1'000'000;
  // A request that holds its worker this long or longer is "long": its
  // client, which spins for a few µs only, sleeps while it is served, so
  // it costs no CPU beside the worker, and turn slots (which keep pairs of
  // busy client and worker off each other's CPUs) would only serialize
  // such sessions' work. Ten times a wake-up here (FLOORS.md: ~5 µs).
  static constexpr int64_t kLongRequestNanos = 50'000;

  Impl(DispatcherOptions options, ClosedCallback on_closed)
      : options(options),
        on_closed(std::move(on_closed)),
        turn_nanos(std::chrono::duration_cast<std::chrono::nanoseconds>(options.turn).count()),
        pacer(options.turn_requests, turn_nanos) {}

  // --- Queue --------------------------------------------------------------

  // `kick`: wake an idle worker for it (see below); false for a hot
  // session polled again, which a busy worker will reach anyway.
  void Push(Item item, bool kick = true) {
    MarkQueued(item, true);
    {
      std::lock_guard<std::mutex> lock(queue_mu);
      queue.push_back(std::move(item));
      queued.store(queue.size(), std::memory_order_relaxed);
    }
    // Wake an idle worker (one waits in epoll_wait) unless every worker is
    // busy: a busy one polls the queue before its next turn anyway. The
    // fence pairs with the worker's fetch_add on idle_workers before its
    // last look at the queue: either it sees this item or we see it idle.
    if (!kick) return;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (idle_workers.load(std::memory_order_relaxed) > 0) Kick();
  }

  // Puts back an item just popped (no kick: the caller is a worker).
  void PushFront(Item item) {
    MarkQueued(item, true);
    std::lock_guard<std::mutex> lock(queue_mu);
    queue.push_front(std::move(item));
    queued.store(queue.size(), std::memory_order_relaxed);
  }

  // The next item: the front, or with turn slots in use the session that
  // has had the least of the slots' time among those near the front with
  // a request waiting (PickTurn).
  bool Pop(Item* item) {
    std::lock_guard<std::mutex> lock(queue_mu);
    if (queue.empty()) return false;
    const size_t at = PickTurn();
    *item = std::move(queue[at]);
    queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(at));
    queued.store(queue.size(), std::memory_order_relaxed);
    MarkQueued(*item, false);
    return true;
  }

  // Pop's choice (under queue_mu): an index into the queue (TurnOrder::
  // Choose, over the first TurnOrder::kWindow items).
  size_t PickTurn() {
    TurnOrder::Queued items[TurnOrder::kWindow];
    size_t window = std::min(queue.size(), TurnOrder::kWindow);
    for (size_t i = 0; i < window; ++i) {
      const EntryPtr* e = std::get_if<EntryPtr>(&queue[i]);
      // A queued session is kReady: nobody serves or frees it meanwhile.
      if (e == nullptr || (*e)->session == nullptr || NeedsNoSlot(**e)) {
        window = i;  // Choose passes over nothing else
        break;
      }
      items[i].turn = true;
      items[i].request = (*e)->session->HasRequest();
      items[i].service = &(*e)->service;
      if (i == 0 && !items[0].request) return 0;
    }
    if (window == 0) return 0;
    const uint64_t credit =
        pacer.Requests() * QuantumPacer::Scale(active_sessions.load(std::memory_order_relaxed), slots);
    return turn_order.Choose(std::span<const TurnOrder::Queued>(items, window), credit);
  }

  static void MarkQueued(const Item& item, bool queued) {
    if (const EntryPtr* e = std::get_if<EntryPtr>(&item)) {
      (*e)->queued.store(queued, std::memory_order_relaxed);
    }
  }

  bool QueueEmpty() const { return queued.load(std::memory_order_relaxed) == 0; }

  void Kick() {
    const uint64_t one = 1;
    (void)!::write(kick_fd.get(), &one, sizeof(one));
  }

  // --- Sessions -------------------------------------------------------------

  EntryPtr Lookup(uint64_t key) {
    std::lock_guard<std::mutex> lock(entries_mu);
    auto it = entries.find(key);
    return it == entries.end() ? nullptr : it->second;
  }

  void Rearm(Entry& e, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = e.key;
    ::epoll_ctl(epoll_fd.get(), EPOLL_CTL_MOD, e.socket.get(), &ev);
  }

  // Frees a session whose state the caller set to kClosed: it leaves the
  // dispatcher and the ClosedCallback sees it at once (the server's session
  // count drops with it, so a client that reconnects at once is not
  // refused for the session it just closed); the reaper thread tears it
  // down (ReaperLoop).
  void Close(const EntryPtr& e) {
    {
      std::lock_guard<std::mutex> lock(entries_mu);
      entries.erase(e->key);
      num_sessions.store(entries.size(), std::memory_order_relaxed);
    }
    ::epoll_ctl(epoll_fd.get(), EPOLL_CTL_DEL, e->socket.get(), nullptr);
    std::unique_ptr<Session> session;
    {
      std::lock_guard<std::mutex> lock(e->mu);
      session = std::move(e->session);
      e->socket.Reset();
    }
    if (session == nullptr) return;
    if (on_closed) on_closed(*session);
    {
      std::lock_guard<std::mutex> lock(reap_mu);
      to_reap.push_back(std::move(session));
    }
    reap_cv.notify_one();
  }

  // --- Reaper ---------------------------------------------------------------

  // Tears down closed sessions (their segments unmapped, their executables
  // and buffers released) on a thread of its own. On the workers, a burst
  // of closes (hundreds of clients gone at once) cost ~0.25 ms each, mostly
  // munmap serialized on the address space's lock, and every live client's
  // request whose doorbell came after their hang-ups waited for all of
  // them.
  void ReaperLoop() {
    std::unique_lock<std::mutex> lock(reap_mu);
    for (;;) {
      reap_cv.wait(lock, [&] { return !to_reap.empty() || reaper_stop; });
      if (to_reap.empty()) return;  // stopping, nothing left
      std::unique_ptr<Session> session = std::move(to_reap.front());
      to_reap.pop_front();
      lock.unlock();
      session.reset();
      lock.lock();
    }
  }

  // An epoll event for a session: the entry to serve now, or null.
  EntryPtr OnEvent(uint64_t key, uint32_t revents) {
    EntryPtr e = Lookup(key);
    if (e == nullptr) return nullptr;
    std::unique_lock<std::mutex> lock(e->mu);
    bool closed = (revents & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)) != 0;
    if (e->state == Entry::State::kRunning && e->watching) {
      // The hang-up watch of a long turn fired: cancel the request; the
      // worker frees the session when it returns.
      e->watching = false;
      if (closed) {
        e->hangup = true;
        e->session->Cancel();
      }
      return nullptr;
    }
    if (e->state != Entry::State::kIdle) return nullptr;  // a stale event
    e->last_active.store(NowNanos(), std::memory_order_relaxed);
    // Doorbell bytes (any number) or the end of the stream.
    char buffer[256];
    for (;;) {
      const ssize_t n = ::recv(e->socket.get(), buffer, sizeof(buffer), MSG_DONTWAIT);
      if (n == static_cast<ssize_t>(sizeof(buffer))) continue;
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        closed = true;
      }
      break;
    }
    if (closed) {
      e->state = Entry::State::kClosed;
      lock.unlock();
      Close(e);
      return nullptr;
    }
    e->state = Entry::State::kReady;
    return e;
  }

  // --- Turn slots -----------------------------------------------------------

  // Recounts the active sessions at most every kCountNanos.
  void CountActive(int64_t now) {
    // The count walks every session: spaced out with their number (1 µs of
    // interval per session), so that it stays a small share of a worker.
    const int64_t interval = std::max<int64_t>(
        kCountNanos, static_cast<int64_t>(num_sessions.load(std::memory_order_relaxed)) * 1000);
    int64_t at = counted_at.load(std::memory_order_relaxed);
    if (now - at < interval || !counted_at.compare_exchange_strong(at, now)) return;
    int active = 0;
    std::lock_guard<std::mutex> lock(entries_mu);
    for (auto& [key, e] : entries) {
      // Queued counts too: a round of turns may outlast kActiveNanos.
      if ((now - e->last_active.load(std::memory_order_relaxed) < kActiveNanos ||
           e->queued.load(std::memory_order_relaxed)) &&
          !e->long_requests.load(std::memory_order_relaxed)) {
        ++active;
      }
    }
    active_sessions.store(active, std::memory_order_relaxed);
  }

  // More sessions of short requests are active than there are turn slots:
  // each such session, served, keeps two CPUs busy (its client calling
  // back to back, and the worker), so more of them than cpus/2 share CPUs.
  bool Oversubscribed() const {
    return active_sessions.load(std::memory_order_relaxed) > slots;
  }

  // Whether this worker may take `e`'s next turn: always while the active
  // sessions of short requests are no more than the turn slots, and always
  // for a session of long requests; otherwise with a free turn slot (then
  // the turn is a quantum), or without one when every slot's worker has
  // been in one request for longer than a quantum's time (a blocking
  // request: the others are then served a request per turn).
  bool TakeSlot(Worker& me, int64_t now, const Entry& e) {
    if (NeedsNoSlot(e)) return true;
    int free = free_slots.load(std::memory_order_relaxed);
    while (free > 0) {
      if (free_slots.compare_exchange_weak(free, free - 1, std::memory_order_acquire)) {
        me.holds_slot.store(true, std::memory_order_relaxed);
        return true;
      }
    }
    return SlotsStuck(now);
  }

  // Whether `e`'s next turn may start without a turn slot (TakeSlot).
  bool NeedsNoSlot(const Entry& e) const {
    return options.turn_requests <= 1 || e.long_requests.load(std::memory_order_relaxed) ||
           !Oversubscribed();
  }

  // Whether every slot's worker has been in its current request for longer
  // than a quantum's time (a blocking request).
  bool SlotsStuck(int64_t now) {
    std::lock_guard<std::mutex> lock(threads_mu);
    for (const std::shared_ptr<Worker>& w : workers) {
      if (!w->holds_slot.load(std::memory_order_relaxed)) continue;
      const int64_t start = w->turn_start.load(std::memory_order_relaxed);
      if (start == 0 || now - start < turn_nanos) return false;
    }
    return true;
  }

  // Whether a worker without a slot could start the front item's turn now
  // (a queue whose front needs a taken slot waits for the slots' workers,
  // which serve it in order).
  bool FrontServable(int64_t now) {
    {
      std::lock_guard<std::mutex> lock(queue_mu);
      if (queue.empty()) return false;
      const EntryPtr* e = std::get_if<EntryPtr>(&queue.front());
      if (e == nullptr || NeedsNoSlot(**e)) return true;
    }
    return free_slots.load(std::memory_order_relaxed) > 0 || SlotsStuck(now);
  }

  void GiveSlot(Worker& me) {
    if (!me.holds_slot.load(std::memory_order_relaxed)) return;
    me.holds_slot.store(false, std::memory_order_relaxed);
    free_slots.fetch_add(1, std::memory_order_release);
  }

  // Waits until `session` has a request or `end` (ns): spins for
  // kTurnSpinNanos, then yields; takes in the sessions that ring meanwhile.
  // Whether the request came only after this worker had yielded.
  bool WaitForRequest(Worker& me, Session& session, int64_t end) {
    const int64_t yield_from = NowNanos() + kTurnSpinNanos;
    bool yielded = false;
    for (;;) {
      if (session.HasRequest()) return yielded;
      const int64_t now = NowNanos();
      if (now >= end) return false;
      if (now - me.last_harvest > kHarvestNanos) Harvest(me, now);
      if (now >= yield_from) {
        ::sched_yield();
        yielded = true;
      } else {
        CpuRelax();
      }
    }
  }

  // At the end of a quantum, its client's next request unanswered: waits
  // (kHandoffNanos at most) until the client sleeps, so that its CPU is
  // idle when the next session's client is woken. With no CPU idle the
  // kernel may run the woken client on the waker's CPU, beside this worker.
  void AwaitClientAsleep(Session& session) {
    const int64_t end = NowNanos() + kHandoffNanos;
    while (!session.ClientAsleep() && NowNanos() < end) CpuRelax();
  }

  // At the start of a quantum: when the session's client sleeps on this
  // worker's CPU, asks it to move off (it does when it takes the first
  // reply). The kernel runs a woken thread on the CPU it slept on unless
  // another is idle, so the two would share a CPU (each call two switches).
  // The client moves, not the worker: a client that moved sleeps on its new
  // CPU after its quantum, so after a round every client sleeps off the
  // worker's CPU and turns change with no move at all. (When the worker
  // moved instead, each client kept its CPU for good, and the worker moved
  // at every change between clients on different CPUs: half of them, at
  // eight clients.) The client's CPU is its own say (a hint: a client that
  // lies is asked to move, and ignoring it costs its own turn).
  // True when it asked.
  bool AvoidClientCpu(Session& session) {
    const int cpu = session.SleepingClientCpu();
    if (cpu < 0 || cpu != ::sched_getcpu()) return false;
    AskClientOffThisCpu(session);
    return true;
  }

  void AskClientOffThisCpu(Session& session) {
    const int cpu = ::sched_getcpu();
    if (cpu < 0) return;
    session.AskClientToMoveOff(cpu);
    moves.fetch_add(1, std::memory_order_relaxed);
  }

  // One turn of a session: its requests while nobody else waits, at least
  // one, and with a turn slot a quantum's worth while others wait; then the
  // back of the queue, or idle.
  void Serve(Worker& me, const EntryPtr& e) {
    {
      std::lock_guard<std::mutex> lock(e->mu);
      if (e->state != Entry::State::kReady) return;
      e->state = Entry::State::kRunning;
    }
    Session& session = *e->session;  // stays while the state is kRunning
    turns.fetch_add(1, std::memory_order_relaxed);
    e->running_since.store(me.turn_start.load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
    // The quantum: with a turn slot, the pacer's count of requests (about
    // `turn`) or twice `turn`, whichever comes first (the time bound only
    // cuts quanta whose requests came slower than the recent pace);
    // without, one request.
    const bool slot = me.holds_slot.load(std::memory_order_relaxed);
    const uint64_t scale =
        QuantumPacer::Scale(active_sessions.load(std::memory_order_relaxed), slots);
    const uint64_t quantum = slot ? pacer.Requests() * scale : 1;
    const int64_t turn_end = slot ? NowNanos() + 2 * turn_nanos * static_cast<int64_t>(scale) : 0;
    int64_t wasted = 0;  // ns waited for requests that did not come (TurnOrder::Charge)
    int64_t first_served = 0;  // when its first request was answered
    // Asked to move, the client takes longer for its next request.
    bool client_moves = slot && AvoidClientCpu(session);
    uint64_t served = 0;
    int late_requests = 0;  // in a row, each come only after a yield
    bool spun = false;
    bool waited = false;
    bool quantum_over = false;  // a long request ended it
    enum class Next { kQueue, kPoll, kIdle } next;
    for (;;) {
      const int64_t started = NowNanos();
      if (session.ServeOne()) {
        requests.fetch_add(1, std::memory_order_relaxed);
        const int64_t now = NowNanos();
        // A long request ends a quantum: its client slept through it, and
        // its next turn needs no slot.
        const bool long_request = now - started >= kLongRequestNanos;
        const bool long_session = long_request && e->last_request_long;
        e->long_requests.store(long_session, std::memory_order_relaxed);
        e->last_request_long = long_request;
        quantum_over = quantum_over || long_session;
        e->last_active.store(now, std::memory_order_relaxed);
        CountActive(now);
        me.turn_start.store(now, std::memory_order_relaxed);
        e->running_since.store(now, std::memory_order_relaxed);
        spun = false;
        waited = false;
        if (++served == 1) first_served = now;
        // While this session is served back to back, others may have rung:
        // without this look they would wait for its turn to end.
        if (now - me.last_harvest > kHarvestNanos) Harvest(me, now);
        if (!QueueEmpty() && session.HasRequest() &&
            (served >= quantum || now >= turn_end || quantum_over)) {
          next = Next::kQueue;  // others wait: take turns
          if (slot) {
            // Its pace: the requests after the first (whose wait for the
            // client to wake is no part of it).
            if (!quantum_over) pacer.Measure(now - first_served, served - 1);
            AwaitClientAsleep(session);
          }
          break;
        }
        continue;
      }
      if (!waited && served > 0 && served < quantum && !quantum_over &&
          !stopping.load(std::memory_order_relaxed) && NowNanos() < turn_end) {
        // The quantum is not used up: wait for the client's next request
        // (a client running beside this worker sends it within a µs or
        // two; one woken for this turn a little later). Whether others
        // wait does not matter here: with clients outnumbering the CPUs,
        // they mostly wait asleep, armed, and arming this one too would
        // make its next request ring.
        waited = true;
        const int64_t wait = client_moves ? kMovingClientWaitNanos : kTurnWaitNanos;
        client_moves = false;
        const int64_t wait_start = NowNanos();
        if (!WaitForRequest(me, session, std::min(turn_end, wait_start + wait))) {
          if (!session.HasRequest()) wasted += NowNanos() - wait_start;
          late_requests = 0;
        } else if (++late_requests == kLateRequestsToMove) {
          // The client calls only while this worker yields: they share a
          // CPU (the kernel keeps two tasks that just ran where they are,
          // even beside an idle CPU), and every call costs two switches.
          // The client takes the request with this late request's reply.
          late_requests = 0;
          AskClientOffThisCpu(session);
          client_moves = true;
        }
        continue;
      }
      if (!spun && options.spin.count() > 0 && QueueEmpty() && !stopping.load()) {
        // Back-to-back requests arrive within a few µs: wait for the next
        // one here rather than pay a wake-up.
        spun = true;
        const auto end = Clock::now() + options.spin;
        while (!session.HasRequest() && QueueEmpty() && Clock::now() < end) CpuRelax();
        continue;
      }
      // With a slot (clients outnumber the CPUs) a client may wait for a
      // CPU for long between requests: polled for longer, and whether
      // others are queued or still armed.
      if ((slot || !QueueEmpty()) && !stopping.load(std::memory_order_relaxed) &&
          NowNanos() - e->last_active.load(std::memory_order_relaxed) <
              (slot ? kTurnHotNanos : kHotNanos)) {
        next = served > 0 ? Next::kQueue : Next::kPoll;  // hot: polled, not armed
        break;
      }
      if (session.ArmSleep()) {
        next = Next::kIdle;
        break;
      }
      if (!QueueEmpty()) {
        next = Next::kQueue;
        break;
      }
    }
    e->running_since.store(0, std::memory_order_relaxed);
    if (slot && served > 0) {  // a hot session polled with nothing to serve is no quantum
      e->service += TurnOrder::Charge(served, wasted, pacer.pace_nanos());
      quanta.fetch_add(1, std::memory_order_relaxed);
      quantum_requests.fetch_add(served, std::memory_order_relaxed);
    }
    std::unique_lock<std::mutex> lock(e->mu);
    if (e->hangup) {
      e->state = Entry::State::kClosed;
      lock.unlock();
      Close(e);
      return;
    }
    e->watching = false;
    if (next == Next::kIdle) {
      e->state = Entry::State::kIdle;
      Rearm(*e, kWatchInput);  // under mu: an event for it sees kIdle
      return;
    }
    e->state = Entry::State::kReady;
    lock.unlock();
    // No kick in a turn with a slot: an idle worker would find no free
    // slot, and waking it costs the clients' CPUs a switch.
    Push(e, /*kick=*/next != Next::kPoll && !slot);
  }

  // --- Workers --------------------------------------------------------------

  void StartWorker(bool spare) {
    auto worker = std::make_shared<Worker>();
    num_threads.fetch_add(1, std::memory_order_relaxed);
    if (spare) spares_started.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(threads_mu);
    // Join the threads of workers that exited (spares that retired).
    for (auto it = threads.begin(); it != threads.end();) {
      if (!it->exited) {
        ++it;
        continue;
      }
      it->thread.join();  // it has returned, or is about to
      it = threads.erase(it);
    }
    workers.push_back(worker);
    Thread& t = threads.emplace_back();
    t.thread = std::thread([this, worker, &t] { WorkerLoop(worker, &t); });
  }

  void Run(Worker& me, Item& item) {
    me.turn_start.store(NowNanos(), std::memory_order_relaxed);
    BusyBegin();
    // A turn without a slot (a long request, a task) while a slot is free
    // and a worker sleeps for one: that worker can serve the queue now,
    // rather than when the monitor next looks.
    if (!me.holds_slot.load(std::memory_order_relaxed) &&
        slot_waiters.load(std::memory_order_seq_cst) > 0 &&
        free_slots.load(std::memory_order_relaxed) > 0) {
      Kick();
    }
    if (auto* e = std::get_if<EntryPtr>(&item)) {
      Serve(me, *e);
    } else {
      std::get<std::function<void()>>(item)();
    }
    item = Item();
    me.turn_start.store(0, std::memory_order_relaxed);
    BusyEnd();
  }

  // Whether this idle worker is a spare that may exit now.
  bool RetireSpare() {
    int n = num_threads.load();
    while (n > base_workers) {
      if (num_threads.compare_exchange_weak(n, n - 1)) return true;
    }
    return false;
  }

  // Moves the sessions that rang since the last look to the back of the
  // queue (an epoll_wait that waits up to `timeout_ms`).
  void Harvest(Worker& me, int64_t now, int timeout_ms = 0) {
    me.last_harvest = now;
    epoll_event events[8];
    const int n = ::epoll_wait(epoll_fd.get(), events, 8, timeout_ms);
    for (int i = 0; i < n; ++i) {
      const uint64_t key = events[i].data.u64;
      if (key == kStopKey) continue;  // seen at the top of the worker loop
      if (key == kKickKey) {
        uint64_t count;
        (void)!::read(kick_fd.get(), &count, sizeof(count));
        continue;
      }
      if (EntryPtr e = OnEvent(key, events[i].events)) Push(std::move(e));
    }
  }

  void WorkerLoop(std::shared_ptr<Worker> me, Thread* self) {
    epoll_event events[8];
    Item item;
    // Every turn slot was taken when this worker last looked: it sleeps
    // until it is needed (a kick: an item that needs no slot was queued, or
    // the monitor saw every slot's worker stuck in a request) rather than
    // looking again every so often. The slots' workers serve the queue in
    // order meanwhile; a worker that woke every millisecond to find the
    // slots still taken (1,700-3,200 times a second with eight busy
    // clients on two CPUs) took a CPU from a client or worker in a quantum
    // each time.
    bool slot_wait = false;
    while (!stopping.load(std::memory_order_relaxed)) {
      if (!slot_wait && !QueueEmpty()) {
        // Newly readied sessions go behind the ones already waiting (looked
        // for at most every kHarvestNanos: the queue may be hot sessions
        // polled in turn).
        const int64_t now = NowNanos();
        if (now - me->last_harvest > kHarvestNanos) Harvest(*me, now);
        if (!Pop(&item)) continue;
        if (auto* e = std::get_if<EntryPtr>(&item); e != nullptr && !TakeSlot(*me, now, **e)) {
          // Put the session back where it was.
          PushFront(std::move(item));
          slot_waits.fetch_add(1, std::memory_order_relaxed);
          slot_wait = true;
          continue;
        }
        Run(*me, item);
        GiveSlot(*me);
        continue;
      }
      idle_workers.fetch_add(1, std::memory_order_seq_cst);
      if (slot_wait) slot_waiters.fetch_add(1, std::memory_order_seq_cst);
      // Re-check after announcing: a push in between kicked, or we see it.
      if (slot_wait ? FrontServable(NowNanos()) : !QueueEmpty()) {
        idle_workers.fetch_sub(1, std::memory_order_seq_cst);
        if (slot_wait) slot_waiters.fetch_sub(1, std::memory_order_seq_cst);
        slot_wait = false;
        continue;
      }
      const bool spare = num_threads.load(std::memory_order_relaxed) > base_workers;
      const int timeout = spare ? static_cast<int>(options.spare_idle.count()) : -1;
      const int n = ::epoll_wait(epoll_fd.get(), events, 1, timeout);
      idle_workers.fetch_sub(1, std::memory_order_seq_cst);
      if (slot_wait) slot_waiters.fetch_sub(1, std::memory_order_seq_cst);
      slot_wait = false;  // whatever woke it, look at the queue again
      if (n == 0) {
        if (RetireSpare()) break;
        continue;
      }
      if (n < 0) continue;  // EINTR
      const uint64_t key = events[0].data.u64;
      if (key == kStopKey) break;
      if (key == kKickKey) {
        uint64_t count;
        (void)!::read(kick_fd.get(), &count, sizeof(count));
        continue;
      }
      if (EntryPtr e = OnEvent(key, events[0].events)) {
        if (!TakeSlot(*me, NowNanos(), *e)) {
          Push(std::move(e), /*kick=*/false);  // served when a slot frees
          continue;
        }
        item = std::move(e);
        Run(*me, item);
        GiveSlot(*me);
      }
    }
    std::lock_guard<std::mutex> lock(threads_mu);
    workers.remove(me);
    self->exited = true;  // joined by the next StartWorker, or by Stop
  }

  // --- Monitor --------------------------------------------------------------

  void BusyBegin() {
    if (busy_workers.fetch_add(1, std::memory_order_seq_cst) == 0 &&
        monitor_sleeping.load(std::memory_order_seq_cst)) {
      std::lock_guard<std::mutex> lock(monitor_mu);
      monitor_cv.notify_one();
    }
  }
  void BusyEnd() { busy_workers.fetch_sub(1, std::memory_order_seq_cst); }

  void MonitorLoop() {
    std::unique_lock<std::mutex> lock(monitor_mu);
    Clock::time_point last_busy = Clock::now();
    while (!stopping.load()) {
      if (busy_workers.load() == 0 && Clock::now() - last_busy > std::chrono::seconds(1)) {
        // Idle for a while: sleep until a worker starts a turn.
        monitor_sleeping.store(true, std::memory_order_seq_cst);
        monitor_cv.wait(lock, [&] { return stopping.load() || busy_workers.load() > 0; });
        monitor_sleeping.store(false, std::memory_order_seq_cst);
        continue;
      }
      monitor_cv.wait_for(lock, options.stall, [&] { return stopping.load(); });
      if (stopping.load()) break;
      if (busy_workers.load() > 0) last_busy = Clock::now();
      lock.unlock();
      Check();
      lock.lock();
    }
  }

  void Check() {
    const int64_t now = NowNanos();
    const int64_t stall = std::chrono::duration_cast<std::chrono::nanoseconds>(options.stall).count();
    int responsive = 0;
    {
      std::lock_guard<std::mutex> lock(threads_mu);
      for (const std::shared_ptr<Worker>& w : workers) {
        const int64_t start = w->turn_start.load(std::memory_order_relaxed);
        if (start == 0 || now - start < stall) ++responsive;
      }
    }
    if (responsive == 0 && num_threads.load() < max_threads) StartWorker(/*spare=*/true);
    // Sessions queued without a kick (a hot session polled again, the end
    // of a turn with a slot) count on the worker that queued them; if it
    // is now in a long request (an execute waiting for its infeed, whose
    // feed request is one of them), an idle worker must take them. The
    // same for workers asleep because every turn slot was taken, once the
    // slots' workers are stuck.
    if (idle_workers.load() > 0 && FrontServable(now)) Kick();
    // Long turns: watch their clients for hang-up.
    std::vector<EntryPtr> long_turns;
    {
      std::lock_guard<std::mutex> lock(entries_mu);
      for (auto& [key, e] : entries) {
        const int64_t since = e->running_since.load(std::memory_order_relaxed);
        if (since != 0 && now - since >= stall) long_turns.push_back(e);
      }
    }
    for (const EntryPtr& e : long_turns) {
      std::lock_guard<std::mutex> lock(e->mu);
      if (e->state == Entry::State::kRunning && !e->watching && !e->hangup) {
        e->watching = true;
        Rearm(*e, kWatchHangup);
      }
    }
  }

  const DispatcherOptions options;
  const ClosedCallback on_closed;
  const int64_t turn_nanos;
  QuantumPacer pacer;  // how many requests a quantum serves
  TurnOrder turn_order;  // guarded by queue_mu
  int base_workers = 2;
  int max_threads = 0;
  UniqueFd epoll_fd, stop_fd, kick_fd;
  std::atomic<bool> stopping{false};

  std::mutex queue_mu;
  std::deque<Item> queue;
  std::atomic<size_t> queued{0};
  std::atomic<int> idle_workers{0};
  std::atomic<int> slot_waiters{0};  // idle workers asleep because every slot was taken

  mutable std::mutex entries_mu;
  std::unordered_map<uint64_t, EntryPtr> entries;
  uint64_t next_key = kFirstSessionKey;  // guarded by entries_mu

  std::mutex threads_mu;
  std::list<std::shared_ptr<Worker>> workers;  // guarded by threads_mu
  std::list<Thread> threads;  // every worker thread not yet joined
  bool stopped = false;  // Stop ran (the controlling thread's)
  std::atomic<int> num_threads{0};

  std::mutex monitor_mu;
  std::condition_variable monitor_cv;
  std::atomic<bool> monitor_sleeping{false};
  std::atomic<int> busy_workers{0};
  std::thread monitor;

  std::mutex reap_mu;
  std::condition_variable reap_cv;
  std::deque<std::unique_ptr<Session>> to_reap;  // guarded by reap_mu
  bool reaper_stop = false;                       // guarded by reap_mu
  std::thread reaper;

  std::atomic<uint64_t> num_sessions{0}, spares_started{0}, turns{0}, requests{0};
  std::atomic<uint64_t> quanta{0}, quantum_requests{0}, moves{0}, slot_waits{0};

  // Turn slots (see dispatcher.h): half the clients' CPUs, at least 1.
  int slots = 1;
  std::atomic<int> active_sessions{0};
  std::atomic<int64_t> counted_at{0};
  std::atomic<int> free_slots{1};
};

Dispatcher::Dispatcher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StatusOr<std::unique_ptr<Dispatcher>> Dispatcher::Create(DispatcherOptions options,
                                                         ClosedCallback on_closed) {
  auto impl = std::make_unique<Impl>(options, std::move(on_closed));
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  impl->base_workers = options.workers > 0 ? options.workers : std::max(2, cpus);
  impl->slots = std::max(1, (options.cpus > 0 ? options.cpus : cpus) / 2);
  impl->free_slots.store(impl->slots);
  impl->max_threads =
      std::max(impl->base_workers, options.max_threads > 0 ? options.max_threads
                                                           : impl->base_workers + 1024);
  impl->epoll_fd.Reset(::epoll_create1(EPOLL_CLOEXEC));
  impl->stop_fd.Reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  impl->kick_fd.Reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!impl->epoll_fd.valid() || !impl->stop_fd.valid() || !impl->kick_fd.valid()) {
    return Internal(std::string("dispatcher: epoll/eventfd: ") + std::strerror(errno));
  }
  epoll_event stop{};
  stop.events = EPOLLIN;  // level-triggered: once written, wakes every worker
  stop.data.u64 = kStopKey;
  epoll_event kick{};
  kick.events = EPOLLIN | EPOLLET;
  kick.data.u64 = kKickKey;
  if (::epoll_ctl(impl->epoll_fd.get(), EPOLL_CTL_ADD, impl->stop_fd.get(), &stop) != 0 ||
      ::epoll_ctl(impl->epoll_fd.get(), EPOLL_CTL_ADD, impl->kick_fd.get(), &kick) != 0) {
    return Internal(std::string("dispatcher: epoll_ctl: ") + std::strerror(errno));
  }
  std::unique_ptr<Dispatcher> dispatcher(new Dispatcher(std::move(impl)));
  Impl* raw = dispatcher->impl_.get();
  for (int i = 0; i < raw->base_workers; ++i) raw->StartWorker(/*spare=*/false);
  raw->monitor = std::thread([raw] { raw->MonitorLoop(); });
  raw->reaper = std::thread([raw] { raw->ReaperLoop(); });
  return dispatcher;
}

Dispatcher::~Dispatcher() { Stop(); }

void Dispatcher::Stop() {
  Impl& impl = *impl_;
  if (impl.stopped) return;
  impl.stopped = true;
  impl.stopping.store(true);
  {
    std::lock_guard<std::mutex> lock(impl.entries_mu);
    for (auto& [key, e] : impl.entries) {
      std::lock_guard<std::mutex> entry_lock(e->mu);
      if (e->session != nullptr) e->session->Cancel();
    }
  }
  const uint64_t one = 1;
  (void)!::write(impl.stop_fd.get(), &one, sizeof(one));
  {
    std::lock_guard<std::mutex> lock(impl.monitor_mu);
    impl.monitor_cv.notify_all();
  }
  impl.monitor.join();  // no worker starts from now on
  std::list<Impl::Thread> threads;
  {
    std::lock_guard<std::mutex> lock(impl.threads_mu);
    threads.swap(impl.threads);
  }
  for (Impl::Thread& t : threads) t.thread.join();
  // The reaper finishes the sessions closed so far.
  {
    std::lock_guard<std::mutex> lock(impl.reap_mu);
    impl.reaper_stop = true;
  }
  impl.reap_cv.notify_one();
  impl.reaper.join();
  // Tasks never run (their owners learn nothing more) and sessions go.
  impl.queue.clear();
  std::unordered_map<uint64_t, Impl::EntryPtr> entries;
  {
    std::lock_guard<std::mutex> lock(impl.entries_mu);
    entries.swap(impl.entries);
  }
  for (auto& [key, e] : entries) {
    std::unique_ptr<Session> session;
    {
      std::lock_guard<std::mutex> lock(e->mu);
      e->state = Impl::Entry::State::kClosed;
      session = std::move(e->session);
    }
    if (session != nullptr && impl.on_closed) impl.on_closed(*session);
  }
}

void Dispatcher::Post(std::function<void()> task) { impl_->Push(std::move(task)); }

Status Dispatcher::Add(std::unique_ptr<Session> session, UniqueFd connection) {
  Impl& impl = *impl_;
  auto e = std::make_shared<Impl::Entry>();
  e->session = std::move(session);
  e->socket = std::move(connection);
  e->last_active.store(NowNanos());
  {
    std::lock_guard<std::mutex> lock(impl.entries_mu);
    e->key = impl.next_key++;
    // Registered disarmed: the first turn is queued below, and the turn
    // arms the socket when the session goes idle.
    epoll_event ev{};
    ev.events = EPOLLONESHOT;  // hang-up is reported even with no events asked
    ev.data.u64 = e->key;
    if (::epoll_ctl(impl.epoll_fd.get(), EPOLL_CTL_ADD, e->socket.get(), &ev) != 0) {
      const int error = errno;
      if (impl.on_closed) impl.on_closed(*e->session);  // every session added is reported
      return Internal(std::string("dispatcher: epoll_ctl(ADD): ") + std::strerror(error));
    }
    impl.entries.emplace(e->key, e);
    impl.num_sessions.store(impl.entries.size(), std::memory_order_relaxed);
  }
  impl.Push(std::move(e));
  return Status::Ok();
}

DispatcherStats Dispatcher::stats() const {
  const Impl& impl = *impl_;
  DispatcherStats s;
  s.sessions = impl.num_sessions.load();
  s.threads = static_cast<uint64_t>(impl.num_threads.load());
  s.spares_started = impl.spares_started.load();
  s.turns = impl.turns.load();
  s.requests = impl.requests.load();
  s.quanta = impl.quanta.load();
  s.quantum_requests = impl.quantum_requests.load();
  s.moves = impl.moves.load();
  s.slot_waits = impl.slot_waits.load();
  return s;
}

}  // namespace jitd::daemon
