#include "ipc/ring.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include "base/cpu_move.h"
#include "ipc/testing.h"

namespace jitd::ipc {
namespace {

using std::chrono::steady_clock;

// A 64-byte-aligned region big enough for `geometry`.
struct Region {
  explicit Region(const RingGeometry& geometry) {
    auto size_or = RingRegionSize(geometry);
    EXPECT_TRUE(size_or.ok());
    size = *size_or;
    memory.reset(static_cast<uint8_t*>(std::aligned_alloc(64, size)));
    std::memset(memory.get(), 0xAB, size);
  }
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> memory;
  uint64_t size = 0;
  RingHeader* header() { return reinterpret_cast<RingHeader*>(memory.get()); }
  RingSlotHeader* slot(uint32_t i) {
    return reinterpret_cast<RingSlotHeader*>(memory.get() + sizeof(RingHeader) +
                                             uint64_t{i} * header()->slot_stride);
  }
};

using testing::Bytes;

std::string Text(const RingMessage& m) { return std::string(m.bytes.begin(), m.bytes.end()); }

TEST(RingTest, GeometryIsValidated) {
  EXPECT_FALSE(RingRegionSize({0, 240}).ok());
  EXPECT_FALSE(RingRegionSize({1, 240}).ok());
  EXPECT_FALSE(RingRegionSize({3, 240}).ok());
  EXPECT_FALSE(RingRegionSize({4, 8}).ok());
  EXPECT_FALSE(RingRegionSize({4, (1u << 20) + 1}).ok());
  auto size = RingRegionSize({4, 48});
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, sizeof(RingHeader) + 4 * 64);  // 16 + 48 bytes: one line a slot
  EXPECT_EQ(*RingRegionSize({256, 240}), sizeof(RingHeader) + 256 * 256);
}

TEST(RingTest, PushPopKeepsOrder) {
  Region region({8, 240});
  auto ring = Ring::Create(region.memory.get(), region.size, {8, 240}, 0);
  ASSERT_TRUE(ring.ok()) << ring.status().ToString();
  RingMessage m;
  auto empty = ring->TryPop(&m);
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(*empty);
  for (const char* s : {"one", "two", "", "three"}) ASSERT_TRUE(ring->TryPush(Bytes(s)).ok());
  for (const char* s : {"one", "two", "", "three"}) {
    auto popped = ring->TryPop(&m);
    ASSERT_TRUE(popped.ok() && *popped);
    EXPECT_EQ(m.kind, RingMessageKind::kInline);
    EXPECT_EQ(Text(m), s);
  }
  EXPECT_FALSE(*ring->TryPop(&m));
}

TEST(RingTest, FullAndEmpty) {
  Region region({4, 32});
  auto ring = Ring::Create(region.memory.get(), region.size, {4, 32}, 0);
  ASSERT_TRUE(ring.ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(ring->TryPush(Bytes(std::to_string(i))).ok());
  Status full = ring->TryPush(Bytes("x"));
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(full.message(), "ring full");
  RingMessage m;
  ASSERT_TRUE(*ring->TryPop(&m));
  EXPECT_EQ(Text(m), "0");
  EXPECT_TRUE(ring->TryPush(Bytes("4")).ok());
  for (int i = 1; i <= 4; ++i) {
    ASSERT_TRUE(*ring->TryPop(&m));
    EXPECT_EQ(Text(m), std::to_string(i));
  }
  EXPECT_FALSE(*ring->TryPop(&m));
}

TEST(RingTest, WrapsAroundManyTimes) {
  Region region({4, 64});
  auto ring = Ring::Create(region.memory.get(), region.size, {4, 64}, 0);
  ASSERT_TRUE(ring.ok());
  RingMessage m;
  int pushed = 0, popped = 0;
  while (popped < 10000) {
    // Push up to three, pop up to two, then drain: positions wrap all the time.
    for (int k = 0; k < 3; ++k) {
      std::string s(static_cast<size_t>(pushed % 65), static_cast<char>('a' + pushed % 26));
      if (!ring->TryPush(Bytes(s)).ok()) break;
      ++pushed;
    }
    for (int k = 0; k < (popped % 3 == 0 ? 4 : 2); ++k) {
      auto got = ring->TryPop(&m);
      ASSERT_TRUE(got.ok());
      if (!*got) break;
      EXPECT_EQ(Text(m), std::string(static_cast<size_t>(popped % 65),
                                     static_cast<char>('a' + popped % 26)));
      ++popped;
    }
  }
  EXPECT_GE(pushed, popped);
}

TEST(RingTest, RejectsOversizedInlineMessage) {
  Region region({4, 32});
  auto ring = Ring::Create(region.memory.get(), region.size, {4, 32}, 0);
  ASSERT_TRUE(ring.ok());
  EXPECT_EQ(ring->TryPush(Bytes(std::string(33, 'x'))).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(ring->TryPush(Bytes(std::string(32, 'x'))).ok());
}

TEST(RingTest, AttachValidatesHeader) {
  RingGeometry g{8, 64};
  Region region(g);
  ASSERT_TRUE(Ring::Create(region.memory.get(), region.size, g, 0).ok());
  EXPECT_TRUE(Ring::Attach(region.memory.get(), region.size, 0).ok());
  // Too small a region for the geometry.
  auto small = Ring::Attach(region.memory.get(), region.size - 64, 0);
  EXPECT_EQ(small.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(small.status().message().find("needs"), std::string::npos);
  // Inconsistent geometry.
  region.header()->slot_stride = 32;
  EXPECT_FALSE(Ring::Attach(region.memory.get(), region.size, 0).ok());
  region.header()->slot_stride = 128;
  region.header()->slot_count = 6;
  EXPECT_FALSE(Ring::Attach(region.memory.get(), region.size, 0).ok());
  region.header()->slot_count = 8;
  // Version and magic.
  region.header()->layout_version = 99;
  auto version = Ring::Attach(region.memory.get(), region.size, 0);
  EXPECT_NE(version.status().message().find("version 99"), std::string::npos);
  region.header()->layout_version = kRingLayoutVersion;
  region.header()->magic ^= 1;
  auto magic = Ring::Attach(region.memory.get(), region.size, 0);
  EXPECT_NE(magic.status().message().find("magic"), std::string::npos);
  // Misaligned region.
  EXPECT_FALSE(Ring::Attach(region.memory.get() + 8, region.size - 8, 0).ok());
}

TEST(RingTest, MaliciousLengthIsRejectedNotFollowed) {
  RingGeometry g{4, 32};
  Region region(g);
  auto producer = Ring::Create(region.memory.get(), region.size, g, 0);
  auto consumer = Ring::Attach(region.memory.get(), region.size, 0);
  ASSERT_TRUE(producer.ok() && consumer.ok());
  ASSERT_TRUE(producer->TryPush(Bytes("hello")).ok());
  region.slot(0)->length = 0xFFFFFFF0u;  // the hostile producer lies
  RingMessage m;
  auto bad = consumer->TryPop(&m);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("more than the slot capacity"), std::string::npos);
  // The corrupt slot was consumed; the ring keeps working.
  ASSERT_TRUE(producer->TryPush(Bytes("next")).ok());
  auto good = consumer->TryPop(&m);
  ASSERT_TRUE(good.ok() && *good);
  EXPECT_EQ(Text(m), "next");
}

TEST(RingTest, MaliciousKindAndHeapReferencesAreRejected) {
  RingGeometry g{4, 32};
  Region region(g);
  const uint64_t heap_size = 4096;
  auto producer = Ring::Create(region.memory.get(), region.size, g, heap_size);
  auto consumer = Ring::Attach(region.memory.get(), region.size, heap_size);
  ASSERT_TRUE(producer.ok() && consumer.ok());
  RingMessage m;

  ASSERT_TRUE(producer->TryPush(Bytes("x")).ok());
  region.slot(0)->kind = 77;
  EXPECT_NE(consumer->TryPop(&m).status().message().find("unknown message kind 77"),
            std::string::npos);

  ASSERT_TRUE(producer->TryPushHeapRef({4000, 200}).ok());  // past the end
  EXPECT_NE(consumer->TryPop(&m).status().message().find("outside the heap"), std::string::npos);

  ASSERT_TRUE(producer->TryPushHeapRef({~uint64_t{0}, 2}).ok());  // offset overflow
  EXPECT_FALSE(consumer->TryPop(&m).ok());

  ASSERT_TRUE(producer->TryPushHeapRef({8, 16}).ok());
  region.slot(3)->length = 8;  // a heap reference must be 16 bytes
  EXPECT_FALSE(consumer->TryPop(&m).ok());

  ASSERT_TRUE(producer->TryPushHeapRef({96, 4000}).ok());
  auto ok = consumer->TryPop(&m);
  ASSERT_TRUE(ok.ok() && *ok);
  EXPECT_EQ(m.kind, RingMessageKind::kHeapRef);
  EXPECT_EQ(m.heap.offset, 96u);
  EXPECT_EQ(m.heap.length, 4000u);
}

TEST(RingTest, BlockingPopTimesOut) {
  RingGeometry g{4, 32};
  Region region(g);
  auto ring = Ring::Create(region.memory.get(), region.size, g, 0);
  ASSERT_TRUE(ring.ok());
  RingMessage m;
  const auto start = steady_clock::now();
  WaitOptions wait;
  wait.deadline = start + std::chrono::milliseconds(30);
  Status status = ring->Pop(&m, wait);
  const auto elapsed = steady_clock::now() - start;
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_GE(elapsed, std::chrono::milliseconds(30));
  EXPECT_GE(ring->futex_waits(), 1u);
  // A message already there is returned even with a deadline in the past.
  ASSERT_TRUE(ring->TryPush(Bytes("late")).ok());
  wait.deadline = start;
  EXPECT_TRUE(ring->Pop(&m, wait).ok());
  EXPECT_EQ(Text(m), "late");
}

TEST(RingTest, BlockingPushTimesOutWhenFull) {
  RingGeometry g{2, 16};
  Region region(g);
  auto ring = Ring::Create(region.memory.get(), region.size, g, 0);
  ASSERT_TRUE(ring.ok());
  ASSERT_TRUE(ring->Push(Bytes("a")).ok());
  ASSERT_TRUE(ring->Push(Bytes("b")).ok());
  WaitOptions wait;
  wait.deadline = steady_clock::now() + std::chrono::milliseconds(5);
  EXPECT_EQ(ring->Push(Bytes("b"), wait).code(), StatusCode::kDeadlineExceeded);
}

// A consumer asleep in Pop says so, and on which CPU; awake, it says
// nothing. The value is read as a hint from a hostile side: out of range
// means "not said".
TEST(RingTest, ASleepingConsumerSaysItsCpu) {
  RingGeometry g{4, 32};
  Region region(g);
  auto producer = Ring::Create(region.memory.get(), region.size, g, 0);
  auto consumer = Ring::Attach(region.memory.get(), region.size, 0);
  ASSERT_TRUE(producer.ok() && consumer.ok());
  EXPECT_FALSE(producer->ConsumerSleeping());
  EXPECT_EQ(producer->SleepingConsumerCpu(), -1);

  // The consumer runs on one CPU only: the last it may use.
  cpu_set_t allowed;
  ASSERT_EQ(::sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  int cpu = -1;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cpu = c;
  }
  ASSERT_GE(cpu, 0);
  Status popped = Internal("not run");
  std::thread thread([&] {
    if (!PinThisThread(cpu)) return;
    WaitOptions sleepy;
    sleepy.spin = std::chrono::nanoseconds(0);
    sleepy.deadline = steady_clock::now() + std::chrono::seconds(30);
    RingMessage m;
    popped = consumer->Pop(&m, sleepy);
  });
  const auto give_up = steady_clock::now() + std::chrono::seconds(10);
  while (!producer->ConsumerSleeping() && steady_clock::now() < give_up) {
    std::this_thread::yield();
  }
  ASSERT_TRUE(producer->ConsumerSleeping());
  EXPECT_EQ(producer->SleepingConsumerCpu(), cpu);
  ASSERT_TRUE(producer->TryPush(Bytes("wake")).ok());  // takes the flag back
  thread.join();
  EXPECT_TRUE(popped.ok()) << popped.ToString();
  EXPECT_FALSE(producer->ConsumerSleeping());
  EXPECT_EQ(producer->SleepingConsumerCpu(), -1);

  // Forged by the other side: asleep, on a CPU that cannot be.
  region.header()->consumer_sleeping = 1;
  region.header()->consumer_cpu = 0xFFFFFFFFu;
  EXPECT_TRUE(producer->ConsumerSleeping());
  EXPECT_EQ(producer->SleepingConsumerCpu(), -1);
  region.header()->consumer_cpu = 0;  // asleep, CPU not said (an older consumer)
  EXPECT_EQ(producer->SleepingConsumerCpu(), -1);
}

TEST(RingTest, AProducerAsksTheConsumerToMoveOffItsCpu) {
  RingGeometry g{4, 32};
  Region region(g);
  auto producer = Ring::Create(region.memory.get(), region.size, g, 0);
  auto consumer = Ring::Attach(region.memory.get(), region.size, 0);
  ASSERT_TRUE(producer.ok() && consumer.ok());
  EXPECT_EQ(consumer->TakeMoveOffRequest(), -1);  // nothing asked

  producer->AskConsumerToMoveOff(3);
  producer->AskConsumerToMoveOff(1);  // replaces the first
  EXPECT_EQ(consumer->TakeMoveOffRequest(), 1);
  EXPECT_EQ(consumer->TakeMoveOffRequest(), -1);  // taken once

  producer->AskConsumerToMoveOff(0);
  EXPECT_EQ(consumer->TakeMoveOffRequest(), 0);
  producer->AskConsumerToMoveOff(-1);  // no CPU: nothing asked
  producer->AskConsumerToMoveOff(CPU_SETSIZE);
  EXPECT_EQ(consumer->TakeMoveOffRequest(), -1);

  // Forged by the other side: a CPU that cannot be is no request, and is
  // gone once read.
  region.header()->consumer_move_off = 0xFFFFFFFFu;
  EXPECT_EQ(consumer->TakeMoveOffRequest(), -1);
  EXPECT_EQ(region.header()->consumer_move_off, 0u);
}

// Two threads, the consumer always sleeping on the futex (spin = 0).
TEST(RingTest, ThreadPingPongThroughFutex) {
  RingGeometry g{4, 32};
  Region requests(g), replies(g);
  auto request_tx = Ring::Create(requests.memory.get(), requests.size, g, 0);
  auto reply_tx = Ring::Create(replies.memory.get(), replies.size, g, 0);
  auto request_rx = Ring::Attach(requests.memory.get(), requests.size, 0);
  auto reply_rx = Ring::Attach(replies.memory.get(), replies.size, 0);
  ASSERT_TRUE(request_tx.ok() && reply_tx.ok() && request_rx.ok() && reply_rx.ok());
  constexpr uint64_t kRounds = 5000;
  WaitOptions sleepy;
  sleepy.spin = std::chrono::nanoseconds(0);
  sleepy.deadline = steady_clock::now() + std::chrono::seconds(60);
  std::thread server([&] {
    RingMessage m;
    for (uint64_t i = 0; i < kRounds; ++i) {
      if (!request_rx->Pop(&m, sleepy).ok()) return;
      uint64_t v;
      std::memcpy(&v, m.bytes.data(), 8);
      ++v;
      if (!reply_tx->Push({reinterpret_cast<uint8_t*>(&v), 8}).ok()) return;
    }
  });
  RingMessage m;
  uint64_t sum = 0;
  for (uint64_t i = 0; i < kRounds; ++i) {
    ASSERT_TRUE(request_tx->Push({reinterpret_cast<uint8_t*>(&i), 8}).ok());
    ASSERT_TRUE(reply_rx->Pop(&m, sleepy).ok());
    uint64_t v;
    ASSERT_EQ(m.bytes.size(), 8u);
    std::memcpy(&v, m.bytes.data(), 8);
    ASSERT_EQ(v, i + 1);
    sum += v;
  }
  server.join();
  EXPECT_EQ(sum, kRounds * (kRounds + 1) / 2);
  EXPECT_GT(reply_rx->futex_waits() + request_rx->futex_waits(), 0u);
}

}  // namespace
}  // namespace jitd::ipc
