// Round-trip latency of the shared-memory data path between two processes:
// a client pushes an 8-byte request, a server process pops it and pushes an
// 8-byte reply. Prints p50/p99 for "hot" (back-to-back, the server catches
// requests while spinning) and "idle" (a pause between calls, longer than
// the spin budget, so the server is asleep on the futex each time).
// Figures are printed only; the test asserts that every reply arrived.
// Compare with ../shared/FLOORS.md (0.44 µs hot, ~10.7 µs after a sleep).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "ipc/fd_passing.h"
#include "ipc/segment.h"

namespace jitd::ipc {
namespace {

using Clock = std::chrono::steady_clock;

std::span<const uint8_t> AsBytes(const uint64_t* v) {
  return {reinterpret_cast<const uint8_t*>(v), sizeof(*v)};
}

struct Result {
  std::vector<double> micros;
  uint64_t replies = 0;
};

// Runs `rounds` round trips against a forked server; `pause` between calls.
Result Measure(uint64_t rounds, std::chrono::microseconds pause) {
  Result result;
  auto segment = Segment::Create(1 << 20);
  EXPECT_TRUE(segment.ok());
  if (!segment.ok()) return result;
  int sockets[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets), 0);
  UniqueFd ours(sockets[0]), theirs(sockets[1]);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ours.Reset();
    auto message = ReceiveWithFd(theirs.get());
    if (!message.ok()) ::_exit(10);
    auto attached = Segment::Attach(std::move(message->fd));
    if (!attached.ok()) ::_exit(11);
    WaitOptions wait;
    wait.deadline = Clock::now() + std::chrono::seconds(120);
    RingMessage m;
    for (uint64_t i = 0; i < rounds; ++i) {
      if (!(*attached)->request_ring().Pop(&m, wait).ok() || m.bytes.size() != 8) ::_exit(12);
      uint64_t v;
      std::memcpy(&v, m.bytes.data(), 8);
      ++v;
      if (!(*attached)->reply_ring().Push(AsBytes(&v), wait).ok()) ::_exit(13);
    }
    ::_exit(0);
  }
  theirs.Reset();
  EXPECT_TRUE(SendWithFd(ours.get(), (*segment)->fd(), {}).ok());
  WaitOptions wait;
  wait.deadline = Clock::now() + std::chrono::seconds(120);
  RingMessage m;
  result.micros.reserve(rounds);
  for (uint64_t i = 0; i < rounds; ++i) {
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
    const auto start = Clock::now();
    if (!(*segment)->request_ring().Push(AsBytes(&i), wait).ok()) break;
    if (!(*segment)->reply_ring().Pop(&m, wait).ok()) break;
    const auto end = Clock::now();
    uint64_t v = 0;
    if (m.bytes.size() == 8) std::memcpy(&v, m.bytes.data(), 8);
    if (v == i + 1) ++result.replies;
    result.micros.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return result;
}

void Print(const char* name, Result& r) {
  if (r.micros.empty()) return;
  std::sort(r.micros.begin(), r.micros.end());
  auto at = [&](double q) { return r.micros[static_cast<size_t>(q * (r.micros.size() - 1))]; };
  std::printf("[ipc pingpong] %-5s n=%zu  p50 %.2f us  p99 %.2f us  max %.2f us\n", name,
              r.micros.size(), at(0.5), at(0.99), r.micros.back());
}

TEST(IpcPingPongTest, HotAndIdleRoundTrips) {
  constexpr uint64_t kHot = 50000;
  constexpr uint64_t kIdle = 2000;
  Result hot = Measure(kHot, std::chrono::microseconds(0));
  EXPECT_EQ(hot.replies, kHot);
  Print("hot", hot);
  Result idle = Measure(kIdle, std::chrono::microseconds(200));
  EXPECT_EQ(idle.replies, kIdle);
  Print("idle", idle);
}

}  // namespace
}  // namespace jitd::ipc
