// Round trips between two processes for an 8-byte message, side by side with
// the floors of ../shared/FLOORS.md, and what a busy-spinning peer costs a
// compute loop.
//
// Every round-trip benchmark forks a child that echoes (value + 1) and times
// each round trip on its own (manual time: the reported Time is the mean
// round trip; the user counters p50_us / p99_us are the percentiles of the
// per-round-trip times, in microseconds):
//   floor/shm_spin        jitd ipc::Ring, both sides spin forever (no futex)
//   ring/hot              the ring's default WaitOptions, back to back
//   floor/shm_futex_idle  default WaitOptions, the client pauses 200 µs
//                         between calls so the server is asleep on the futex
//                         each time (the pause is not timed); counters
//                         server_sleeps / client_sleeps per call
//   ring/idle_client_spins
//                         the same pause, the server with the default
//                         WaitOptions (asleep when the request comes) but the
//                         client spinning forever for the reply: one wake-up
//                         per round trip instead of two
//   floor/unix_socket     socketpair(AF_UNIX, SOCK_STREAM), write + read 8 bytes
//   floor/pipe            two pipes, write + read 8 bytes
//   floor/cpu_handoff/tasks:N/processes:P
//                         N processes (P=1) or threads of one process (P=0),
//                         all pinned to one CPU, pass a turn round in order:
//                         each waits on a futex for its turn, then sets the
//                         next one's word and wakes it. Time = the mean
//                         time per handoff (one wake and one switch). What a
//                         change of turns between clients costs at least on
//                         a CPU that their turns share (daemon/dispatcher.h),
//                         and how that grows with the number of address
//                         spaces that take turns on it.
//   spin_cost/threads:N/peer_spins_forever:1
//                         a fixed arithmetic loop split over N threads, timed
//                         with and without a child process busy-spinning on
//                         an empty ring; counters alone_ms, with_peer_ms and
//                         slowdown (= with_peer / alone, medians)
//   spin_cost/threads:N/peer_spins_forever:0
//                         the same with a peer waiting on the empty ring with
//                         the default WaitOptions (spins 5 µs, then sleeps on
//                         the futex): what an idle daemon should cost
// The shared-memory benchmarks go the daemon's way: the parent Creates a
// Segment and passes its memfd over a socketpair (SendWithFd); the child
// Attaches. Nothing is pinned (but floor/cpu_handoff, which pins its
// tasks to this process's last CPU). The child dies with the parent
// (PR_SET_PDEATHSIG) and is killed and reaped on every exit path.
// Hot benchmarks run for a fixed amount of timed (manual) time, so that a
// loaded machine, where a spinning peer loses whole time slices, does not
// stretch the run; the idle ones and spin_cost run fixed iteration counts;
// cpu_handoff counts handoffs in nine 100 ms windows. The whole suite takes
// about ten seconds per repetition. Reproduce: see BENCHMARKS.md.

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/cpu_move.h"
#include "base/unique_fd.h"
#include "ipc/fd_passing.h"
#include "ipc/ring.h"
#include "ipc/segment.h"

namespace jitd {
namespace {

using Clock = std::chrono::steady_clock;

// Sent instead of a counter to a ring echo server: kCount asks for its
// futex_waits() count, kStop asks for the count and stops it.
constexpr uint64_t kStop = ~uint64_t{0};
constexpr uint64_t kCount = kStop - 1;
// Round trips run before the timed loop (page faults, child start-up).
constexpr int kWarmUp = 200;
// How long the parent waits for any one reply before giving up.
constexpr auto kReplyTimeout = std::chrono::seconds(10);

// A forked child process. The destructor kills (SIGKILL) and reaps it unless
// Wait() already reaped it, so no exit path of a benchmark leaves one behind.
// Not thread-safe; owned by the benchmark function that forked it.
class Child {
 public:
  // Forks; the child runs `body` and _exits with its result (it never returns
  // into the benchmark library). pid() < 0 when fork failed.
  explicit Child(const std::function<int()>& body) {
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(100);  // the parent died already
      ::_exit(body());
    }
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }

  // Waits up to `timeout` for the child to exit by itself; true when it
  // exited with status 0. Kills it (and returns false) after the timeout.
  bool Wait(std::chrono::milliseconds timeout) {
    const auto end = Clock::now() + timeout;
    int status = 0;
    for (;;) {
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0;
      }
      if (r < 0 && errno != EINTR) {
        pid_ = -1;
        return false;
      }
      if (Clock::now() >= end) return false;  // the destructor kills it
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

 private:
  pid_t pid_ = -1;
};

std::span<const uint8_t> AsBytes(const uint64_t* v) {
  return {reinterpret_cast<const uint8_t*>(v), sizeof(*v)};
}

// Per-round-trip times: p50 / p99 as user counters, in microseconds.
void ReportPercentiles(benchmark::State& state, std::vector<double>& ns) {
  if (ns.empty()) return;
  std::sort(ns.begin(), ns.end());
  auto at = [&](double q) {
    return ns[static_cast<size_t>(q * static_cast<double>(ns.size() - 1) + 0.5)] / 1e3;
  };
  state.counters["p50_us"] = at(0.50);
  state.counters["p99_us"] = at(0.99);
}

// ---------------------------------------------------------------------------
// Shared-memory ring.

struct RingMode {
  ipc::WaitOptions server;  // the echo child's Pop
  ipc::WaitOptions client;  // the parent's Pop (deadline added per call)
  std::chrono::microseconds pause{0};
};

ipc::WaitOptions SpinForever() {
  ipc::WaitOptions wait;
  wait.spin = std::chrono::hours(24);
  return wait;
}

// The echo server: attaches to the segment it receives on `socket`, pops
// requests and pushes value + 1 until kStop, answered with its futex_waits().
int RingEchoServer(int socket, const ipc::WaitOptions& wait) {
  auto message = ipc::ReceiveWithFd(socket);
  if (!message.ok() || !message->fd.valid()) return 10;
  auto segment = ipc::Segment::Attach(std::move(message->fd));
  if (!segment.ok()) return 11;
  ipc::Ring& requests = (*segment)->request_ring();
  ipc::Ring& replies = (*segment)->reply_ring();
  ipc::RingMessage m;
  for (;;) {
    if (!requests.Pop(&m, wait).ok() || m.bytes.size() != sizeof(uint64_t)) return 12;
    uint64_t v;
    std::memcpy(&v, m.bytes.data(), sizeof(v));
    const bool stop = v == kStop;
    v = stop || v == kCount ? requests.futex_waits() : v + 1;
    if (!replies.Push(AsBytes(&v), wait).ok()) return 13;
    if (stop) return 0;
  }
}

void BM_Ring(benchmark::State& state, RingMode mode) {
  auto segment = ipc::Segment::Create(1 << 20);
  if (!segment.ok()) {
    state.SkipWithError(segment.status().message().c_str());
    return;
  }
  int sockets[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) {
    state.SkipWithError("socketpair failed");
    return;
  }
  UniqueFd ours(sockets[0]), theirs(sockets[1]);
  Child child([&] {
    ours.Reset();
    return RingEchoServer(theirs.get(), mode.server);
  });
  if (child.pid() < 0) {
    state.SkipWithError("fork failed");
    return;
  }
  theirs.Reset();
  if (!ipc::SendWithFd(ours.get(), (*segment)->fd(), {}).ok()) {
    state.SkipWithError("SendWithFd failed");
    return;
  }
  ipc::Ring& requests = (*segment)->request_ring();
  ipc::Ring& replies = (*segment)->reply_ring();
  ipc::RingMessage m;
  // One request + reply; false (and the state skipped) on any failure.
  auto round_trip = [&](uint64_t v) {
    ipc::WaitOptions wait = mode.client;
    wait.deadline = Clock::now() + kReplyTimeout;
    if (!requests.Push(AsBytes(&v), wait).ok() || !replies.Pop(&m, wait).ok() ||
        m.bytes.size() != sizeof(uint64_t)) {
      state.SkipWithError("round trip failed (echo child gone?)");
      return false;
    }
    uint64_t r;
    std::memcpy(&r, m.bytes.data(), sizeof(r));
    if (v < kCount && r != v + 1) {
      state.SkipWithError("wrong reply");
      return false;
    }
    return true;
  };

  uint64_t counter = 0;
  for (int i = 0; i < kWarmUp; ++i) {
    if (!round_trip(++counter)) return;
  }
  // The server's sleep count before the timed loop (the warm-up's sleeps are
  // not the figure asked for).
  if (!round_trip(kCount)) return;
  uint64_t server_waits_before;
  std::memcpy(&server_waits_before, m.bytes.data(), sizeof(server_waits_before));
  const uint64_t client_waits_before = replies.futex_waits();
  std::vector<double> ns;
  ns.reserve(static_cast<size_t>(state.max_iterations));
  for (auto _ : state) {
    if (mode.pause.count() > 0) std::this_thread::sleep_for(mode.pause);
    const auto start = Clock::now();
    if (!round_trip(++counter)) break;
    const auto end = Clock::now();
    const double elapsed = std::chrono::duration<double, std::nano>(end - start).count();
    ns.push_back(elapsed);
    state.SetIterationTime(elapsed * 1e-9);
  }
  if (state.error_occurred()) return;
  const uint64_t client_waits = replies.futex_waits() - client_waits_before;

  // Stop the child; it answers with how often it slept.
  if (!round_trip(kStop)) return;
  uint64_t server_waits;
  std::memcpy(&server_waits, m.bytes.data(), sizeof(server_waits));
  if (!child.Wait(std::chrono::seconds(5))) {
    state.SkipWithError("echo child did not exit cleanly");
    return;
  }
  ReportPercentiles(state, ns);
  if (mode.pause.count() > 0 || mode.server.spin < std::chrono::hours(1)) {
    // Per timed call; the server's count may include one sleep waiting for
    // kStop.
    const double calls = static_cast<double>(state.iterations());
    state.counters["server_sleeps"] =
        static_cast<double>(server_waits - server_waits_before) / calls;
    state.counters["client_sleeps"] = static_cast<double>(client_waits) / calls;
  }
}

// ---------------------------------------------------------------------------
// Kernel byte streams: a Unix socketpair, or two pipes.

bool WriteAll(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, void* data, size_t n) {
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;  // EOF: the peer is gone
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

enum class Stream { kUnixSocket, kPipe };

void BM_Stream(benchmark::State& state, Stream kind) {
  // to_child: parent writes [1], child reads [0]; to_parent the reverse.
  UniqueFd to_child[2], to_parent[2];
  if (kind == Stream::kUnixSocket) {
    int s[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) != 0) {
      state.SkipWithError("socketpair failed");
      return;
    }
    // One bidirectional socket each side: the parent uses s[0], the child s[1].
    to_child[1].Reset(s[0]);
    to_child[0].Reset(s[1]);
    to_parent[0].Reset(::dup(s[0]));
    to_parent[1].Reset(::dup(s[1]));
  } else {
    int a[2], b[2];
    if (::pipe2(a, O_CLOEXEC) != 0) {
      state.SkipWithError("pipe2 failed");
      return;
    }
    to_child[0].Reset(a[0]);
    to_child[1].Reset(a[1]);
    if (::pipe2(b, O_CLOEXEC) != 0) {
      state.SkipWithError("pipe2 failed");
      return;
    }
    to_parent[0].Reset(b[0]);
    to_parent[1].Reset(b[1]);
  }
  Child child([&] {
    to_child[1].Reset();
    to_parent[0].Reset();
    uint64_t v;
    while (ReadAll(to_child[0].get(), &v, sizeof(v))) {
      ++v;
      if (!WriteAll(to_parent[1].get(), &v, sizeof(v))) return 1;
    }
    return 0;  // EOF: the parent closed its end
  });
  if (child.pid() < 0) {
    state.SkipWithError("fork failed");
    return;
  }
  to_child[0].Reset();
  to_parent[1].Reset();
  const int out = to_child[1].get(), in = to_parent[0].get();
  auto round_trip = [&](uint64_t v) {
    uint64_t r = 0;
    if (!WriteAll(out, &v, sizeof(v)) || !ReadAll(in, &r, sizeof(r)) || r != v + 1) {
      state.SkipWithError("round trip failed (echo child gone?)");
      return false;
    }
    return true;
  };

  uint64_t counter = 0;
  for (int i = 0; i < kWarmUp; ++i) {
    if (!round_trip(++counter)) return;
  }
  std::vector<double> ns;
  ns.reserve(static_cast<size_t>(state.max_iterations));
  for (auto _ : state) {
    const auto start = Clock::now();
    if (!round_trip(++counter)) break;
    const auto end = Clock::now();
    const double elapsed = std::chrono::duration<double, std::nano>(end - start).count();
    ns.push_back(elapsed);
    state.SetIterationTime(elapsed * 1e-9);
  }
  if (state.error_occurred()) return;
  // Closing our write end gives the child EOF.
  to_child[1].Reset();
  if (kind == Stream::kUnixSocket) to_parent[0].Reset();
  if (!child.Wait(std::chrono::seconds(5))) {
    state.SkipWithError("echo child did not exit cleanly");
    return;
  }
  ReportPercentiles(state, ns);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// ---------------------------------------------------------------------------
// Handing one CPU round a group of tasks.

constexpr int kMaxHandoffTasks = 16;

// Shared by the tasks (a MAP_SHARED page, so forked children see it).
struct HandoffBoard {
  std::atomic<uint32_t> turn[kMaxHandoffTasks];  // 1 = that task's turn
  std::atomic<uint64_t> handoffs;
  std::atomic<uint32_t> stop;
  std::atomic<uint32_t> unpinned;  // tasks that could not pin themselves
};
static_assert(std::atomic<uint32_t>::is_always_lock_free);

void FutexWaitWhile(std::atomic<uint32_t>* word, uint32_t value) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, value, nullptr, nullptr, 0);
}
void FutexWakeOne(std::atomic<uint32_t>* word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

// Task `i` of `n`: on `cpu`, waits for its turn and passes it to the next.
// One that cannot pin itself there says so on the board (and still passes
// turns, so that the others stop).
void HandoffTask(HandoffBoard* board, int i, int n, int cpu) {
  if (!PinThisThread(cpu)) board->unpinned.fetch_add(1);
  while (board->stop.load() == 0) {
    if (board->turn[i].load() == 0) {
      FutexWaitWhile(&board->turn[i], 0);
      continue;
    }
    board->turn[i].store(0);
    board->handoffs.fetch_add(1, std::memory_order_relaxed);
    std::atomic<uint32_t>* next = &board->turn[(i + 1) % n];
    next->store(1);
    FutexWakeOne(next);
  }
}

void BM_CpuHandoff(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool processes = state.range(1) != 0;
  cpu_set_t allowed;
  if (n < 2 || n > kMaxHandoffTasks || ::sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    state.SkipWithError("bad task count, or no CPU set");
    return;
  }
  int cpu = -1;  // the last CPU this process may use
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cpu = c;
  }
  void* page = ::mmap(nullptr, sizeof(HandoffBoard), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) {
    state.SkipWithError("mmap failed");
    return;
  }
  auto* board = new (page) HandoffBoard{};
  std::vector<std::unique_ptr<Child>> children;
  std::vector<std::thread> threads;
  bool forked = true;
  for (int i = 0; i < n && forked; ++i) {
    if (processes) {
      children.push_back(std::make_unique<Child>([=] {
        HandoffTask(board, i, n, cpu);
        return 0;
      }));
      forked = children.back()->pid() > 0;
    } else {
      threads.emplace_back(HandoffTask, board, i, n, cpu);
    }
  }
  board->turn[0].store(1);
  FutexWakeOne(&board->turn[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // start-up
  std::vector<double> per_handoff_us;
  if (!forked) state.SkipWithError("fork failed");
  if (board->unpinned.load() != 0) state.SkipWithError("a task could not pin itself to one CPU");
  for (auto _ : state) {
    const uint64_t before = board->handoffs.load();
    const auto start = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const uint64_t count = board->handoffs.load() - before;
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (count == 0) {
      state.SkipWithError("no handoff in 100 ms");
      break;
    }
    state.SetIterationTime(seconds / static_cast<double>(count));
    per_handoff_us.push_back(seconds * 1e6 / static_cast<double>(count));
  }
  board->stop.store(1);
  for (int i = 0; i < n; ++i) {
    board->turn[i].store(1);
    FutexWakeOne(&board->turn[i]);
  }
  for (std::thread& t : threads) t.join();
  for (auto& child : children) (void)child->Wait(std::chrono::seconds(5));
  children.clear();
  ::munmap(page, sizeof(HandoffBoard));
  if (!per_handoff_us.empty()) state.counters["p50_us"] = Median(per_handoff_us);
}

// ---------------------------------------------------------------------------
// What a spinning peer takes from compute.

// A fixed, compute-bound loop: 8 independent multiply-add chains (no memory
// traffic). Returns a value so that nothing is optimized away.
double ComputeLoop(int64_t steps) {
  double acc[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  for (int64_t i = 0; i < steps; ++i) {
    for (double& a : acc) a = a * 0.999999 + 1e-7;
    benchmark::DoNotOptimize(acc);
  }
  double sum = 0;
  for (double a : acc) sum += a;
  return sum;
}

// The fixed amount of work, split over `threads` threads; returns wall ms.
double TimeCompute(int threads, int64_t total_steps) {
  const auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) {
    pool.emplace_back([=] { benchmark::DoNotOptimize(ComputeLoop(total_steps / threads)); });
  }
  benchmark::DoNotOptimize(ComputeLoop(total_steps / threads));
  for (std::thread& t : pool) t.join();
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Each iteration times the loop with the peer stopped (SIGSTOP), then with it
// running (SIGCONT). The peer is what a daemon does when its client has gone
// quiet: Pop on an empty ring, with an infinite spin budget (range(1) == 1)
// or with the default WaitOptions (range(1) == 0).
void BM_SpinCost(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const ipc::WaitOptions peer_wait = state.range(1) != 0 ? SpinForever() : ipc::WaitOptions{};
  constexpr int64_t kSteps = 8'000'000;  // ~20-30 ms on one core here
  auto segment = ipc::Segment::Create(1 << 20);
  if (!segment.ok()) {
    state.SkipWithError(segment.status().message().c_str());
    return;
  }
  ipc::Ring& requests = (*segment)->request_ring();
  // The child inherits the mapping and the ring view; nobody ever pushes.
  Child peer([&] {
    ipc::RingMessage m;
    return requests.Pop(&m, peer_wait).ok() ? 0 : 1;
  });
  if (peer.pid() < 0) {
    state.SkipWithError("fork failed");
    return;
  }
  // Sends `sig` and waits until the kernel reports the state change.
  auto signal_and_wait = [&](int sig) {
    if (::kill(peer.pid(), sig) != 0) return false;
    int status = 0;
    const int flags = sig == SIGSTOP ? WUNTRACED : WCONTINUED;
    for (;;) {
      const pid_t r = ::waitpid(peer.pid(), &status, flags);
      if (r < 0 && errno == EINTR) continue;
      if (r != peer.pid()) return false;
      return sig == SIGSTOP ? WIFSTOPPED(status) : WIFCONTINUED(status);
    }
  };

  TimeCompute(threads, kSteps / 4);  // warm up (threads, frequency)
  std::vector<double> alone, with_peer;
  for (auto _ : state) {
    if (!signal_and_wait(SIGSTOP)) {
      state.SkipWithError("cannot stop the peer");
      break;
    }
    alone.push_back(TimeCompute(threads, kSteps));
    if (!signal_and_wait(SIGCONT)) {
      state.SkipWithError("cannot continue the peer");
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // let it spin up
    with_peer.push_back(TimeCompute(threads, kSteps));
    state.SetIterationTime(with_peer.back() * 1e-3);
  }
  if (state.error_occurred()) return;
  const double a = Median(alone), s = Median(with_peer);
  state.counters["alone_ms"] = a;
  state.counters["with_peer_ms"] = s;
  state.counters["slowdown"] = a > 0 ? s / a : 0;
}

}  // namespace

// Registers every benchmark of this file (jitd_daemon_bench links it too, to
// run the floors in the same process as the daemon's figures).
void RegisterIpcBenchmarks() {
  const ipc::WaitOptions defaults;
  RingMode spin{SpinForever(), SpinForever(), {}};
  RingMode hot{defaults, defaults, {}};
  RingMode idle{defaults, defaults, std::chrono::microseconds(200)};
  RingMode idle_client_spins{defaults, SpinForever(), std::chrono::microseconds(200)};

  benchmark::RegisterBenchmark("floor/shm_spin", BM_Ring, spin)
      ->UseManualTime()
      ->MinTime(0.1)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("ring/hot", BM_Ring, hot)
      ->UseManualTime()
      ->MinTime(0.1)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("floor/shm_futex_idle", BM_Ring, idle)
      ->UseManualTime()
      ->Iterations(3'000)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("ring/idle_client_spins", BM_Ring, idle_client_spins)
      ->UseManualTime()
      ->Iterations(3'000)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("floor/unix_socket", BM_Stream, Stream::kUnixSocket)
      ->UseManualTime()
      ->MinTime(0.2)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("floor/pipe", BM_Stream, Stream::kPipe)
      ->UseManualTime()
      ->MinTime(0.2)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("floor/cpu_handoff", BM_CpuHandoff)
      ->ArgNames({"tasks", "processes"})
      ->ArgsProduct({{2, 3, 8}, {0, 1}})
      ->UseManualTime()
      ->Iterations(9)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("spin_cost", BM_SpinCost)
      ->ArgNames({"threads", "peer_spins_forever"})
      ->Args({1, 1})
      ->Args({2, 1})
      ->Args({2, 0})
      ->UseManualTime()
      ->Iterations(10)
      ->Unit(benchmark::kMillisecond);
}

}  // namespace jitd

#ifndef JITD_IPC_BENCH_NO_MAIN
int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  jitd::RegisterIpcBenchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
#endif  // JITD_IPC_BENCH_NO_MAIN
