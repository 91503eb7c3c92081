// FairGate: slots are respected, and waiting clients are served round-robin.
#include "daemon/fair_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace jitd::daemon {
namespace {

using namespace std::chrono_literals;

// Waits (10 s at most) until `done` holds.
void WaitUntil(const std::function<bool()>& done) {
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (!done() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
}

TEST(FairGateTest, NeverMoreThanSlotsAtOnce) {
  FairGate gate(2, /*express_below=*/0ms);
  std::atomic<int> running{0}, peak{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        FairGate::Turn turn(gate, static_cast<uint64_t>(t));
        const int now = ++running;
        int seen = peak.load();
        while (now > seen && !peak.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::yield();
        --running;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(peak.load(), 2);
  EXPECT_GE(peak.load(), 1);
}

TEST(FairGateTest, WaitersAreServedRoundRobinAcrossClients) {
  // One slot, held by the test. Client 1 queues three waiters (a process
  // with three connections), client 2 one, client 3 one, in that order.
  FairGate gate(1, /*express_below=*/0ms);
  gate.Acquire(0);
  std::mutex mu;
  std::vector<uint64_t> order;
  std::vector<std::thread> threads;
  auto enqueue = [&](uint64_t client) {
    threads.emplace_back([&, client] {
      FairGate::Turn turn(gate, client);
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(client);
    });
    const size_t queued = threads.size();
    WaitUntil([&] { return gate.waiting() == queued; });  // queued before the next one
  };
  enqueue(1);
  enqueue(1);
  enqueue(1);
  enqueue(2);
  enqueue(3);
  gate.Release(0, FairGate::Lane::kSlot, 1s);
  for (std::thread& t : threads) t.join();
  // Round-robin by client: 1, 2, 3, then client 1's remaining waiters; not
  // the arrival order 1, 1, 1, 2, 3.
  EXPECT_EQ(order, (std::vector<uint64_t>{1, 2, 3, 1, 1}));
  EXPECT_EQ(gate.waited(), 5u);
}

TEST(FairGateTest, FreeSlotDoesNotWait) {
  FairGate gate(3, /*express_below=*/0ms);
  gate.Acquire(1);
  gate.Acquire(1);
  gate.Acquire(2);
  gate.Release(1, FairGate::Lane::kSlot, 1ms);
  gate.Release(1, FairGate::Lane::kSlot, 1ms);
  gate.Release(2, FairGate::Lane::kSlot, 1ms);
  EXPECT_EQ(gate.waited(), 0u);
}

TEST(FairGateTest, WhileOthersWaitNoClientHoldsTwoSlots) {
  // Two slots, both held by client 1 (nobody waited when it took them).
  // Client 1 queues another execute, then client 2 one: when client 1
  // frees a slot it goes to client 2, who runs nothing, although client 1
  // queued first; client 1's waiter gets the next slot.
  FairGate gate(2, /*express_below=*/0ms);
  gate.Acquire(1);
  gate.Acquire(1);
  std::mutex mu;
  std::vector<uint64_t> order;
  std::vector<std::thread> threads;
  for (uint64_t client : {uint64_t{1}, uint64_t{2}}) {
    threads.emplace_back([&, client] {
      gate.Acquire(client);
      {
        std::lock_guard<std::mutex> lock(mu);
        order.push_back(client);
      }
    });
    const size_t queued = threads.size();
    WaitUntil([&] { return gate.waiting() == queued; });
  }
  gate.Release(1, FairGate::Lane::kSlot, 1s);
  WaitUntil([&] {
    std::lock_guard<std::mutex> lock(mu);
    return !order.empty();
  });
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(order, (std::vector<uint64_t>{2}));
  }
  gate.Release(1, FairGate::Lane::kSlot, 1s);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(order, (std::vector<uint64_t>{2, 1}));
  gate.Release(1, FairGate::Lane::kSlot, 1s);
  gate.Release(2, FairGate::Lane::kSlot, 1s);
}

TEST(FairGateTest, ShortClientsTakeTheExpressLanesPastLongOnes) {
  FairGate gate(1, /*express_below=*/10ms);
  // Client 1 is long (its last run took a second) and holds the slot.
  EXPECT_EQ(gate.Acquire(1), FairGate::Lane::kSlot);
  gate.Release(1, FairGate::Lane::kSlot, 1s);
  EXPECT_EQ(gate.Acquire(1), FairGate::Lane::kSlot);
  // Client 2 has no history: its first execute runs at once on the trial
  // lane; client 3 is short and runs at once on the short lane.
  EXPECT_EQ(gate.Acquire(3), FairGate::Lane::kTrial);
  gate.Release(3, FairGate::Lane::kTrial, 1ms);
  EXPECT_EQ(gate.Acquire(2), FairGate::Lane::kTrial);
  EXPECT_EQ(gate.Acquire(3), FairGate::Lane::kShort);
  // One execute per lane: client 4 (new) waits for client 2's end.
  std::atomic<bool> granted{false};
  std::thread four([&] {
    EXPECT_EQ(gate.Acquire(4), FairGate::Lane::kTrial);
    granted = true;
    gate.Release(4, FairGate::Lane::kTrial, 1ms);
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(granted.load());
  gate.Release(3, FairGate::Lane::kShort, 1ms);  // the short lane is not its
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(granted.load());
  gate.Release(2, FairGate::Lane::kTrial, 1ms);
  four.join();
  EXPECT_TRUE(granted.load());
  EXPECT_EQ(gate.express(), 4u);
  gate.Release(1, FairGate::Lane::kSlot, 1s);
}

TEST(FairGateTest, LongClientsWaitForASlot) {
  FairGate gate(1, /*express_below=*/10ms);
  // Client 2 ran long once: its average keeps it off the express lane.
  EXPECT_EQ(gate.Acquire(2), FairGate::Lane::kSlot);
  gate.Release(2, FairGate::Lane::kSlot, 2s);
  EXPECT_EQ(gate.Acquire(1), FairGate::Lane::kSlot);
  std::atomic<bool> granted{false};
  std::thread two([&] {
    EXPECT_EQ(gate.Acquire(2), FairGate::Lane::kSlot);
    granted = true;
    gate.Release(2, FairGate::Lane::kSlot, 2s);
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(granted.load());
  gate.Release(1, FairGate::Lane::kSlot, 1ms);
  two.join();
  EXPECT_EQ(gate.express(), 0u);
}

}  // namespace
}  // namespace jitd::daemon
