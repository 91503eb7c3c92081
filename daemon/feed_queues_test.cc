#include "daemon/feed_queues.h"

#include <gtest/gtest.h>

#include <thread>

namespace jitd::daemon {
namespace {

using namespace std::chrono_literals;
using Clock = FeedQueues::Clock;

ir::Literal F32s(std::vector<double> values) {
  ir::Literal lit =
      *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {static_cast<int64_t>(values.size())}));
  for (size_t i = 0; i < values.size(); ++i) lit.SetDouble(static_cast<int64_t>(i), values[i]);
  return lit;
}

std::vector<ir::Literal> One(ir::Literal lit) {
  std::vector<ir::Literal> v;
  v.push_back(std::move(lit));
  return v;
}

TEST(FeedQueuesTest, FifoPerDeviceAndDirection) {
  FeedQueues q;
  ASSERT_TRUE(q.Push(FeedDirection::kInfeed, "interpreter", 0, One(F32s({1, 2}))).ok());
  ASSERT_TRUE(q.Push(FeedDirection::kInfeed, "interpreter", 0, One(F32s({3, 4}))).ok());
  ASSERT_TRUE(q.Push(FeedDirection::kInfeed, "cpu", 0, One(F32s({9}))).ok());
  EXPECT_EQ(q.size(FeedDirection::kInfeed, "interpreter", 0), 2u);
  EXPECT_EQ(q.size(FeedDirection::kOutfeed, "interpreter", 0), 0u);
  const ir::Type t2 = ir::Type::Tensor(ir::DType::kF32, {2});
  auto a = q.Pop(FeedDirection::kInfeed, "interpreter", 0, {t2}, Clock::now() + 1s);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ((*a)[0].GetDouble(1), 2);
  auto b = q.Pop(FeedDirection::kInfeed, "interpreter", 0, {t2}, Clock::now() + 1s);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)[0].GetDouble(0), 3);
  EXPECT_EQ(q.size(FeedDirection::kInfeed, "cpu", 0), 1u);
}

TEST(FeedQueuesTest, AMismatchTakesNothing) {
  FeedQueues q;
  ASSERT_TRUE(q.Push(FeedDirection::kOutfeed, "interpreter", 0, One(F32s({1, 2, 3}))).ok());
  auto r = q.Pop(FeedDirection::kOutfeed, "interpreter", 0,
                 {ir::Type::Tensor(ir::DType::kF32, {2})}, Clock::now() + 1s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("tensor<3xf32>"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(q.size(FeedDirection::kOutfeed, "interpreter", 0), 1u);
}

TEST(FeedQueuesTest, PopWaitsForAPushAndTimesOut) {
  FeedQueues q;
  const ir::Type t1 = ir::Type::Tensor(ir::DType::kF32, {1});
  std::thread feeder([&] {
    std::this_thread::sleep_for(50ms);
    (void)q.Push(FeedDirection::kInfeed, "interpreter", 0, One(F32s({5})));
  });
  auto r = q.Pop(FeedDirection::kInfeed, "interpreter", 0, {t1}, Clock::now() + 10s);
  feeder.join();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].GetDouble(0), 5);

  const auto start = Clock::now();
  r = q.Pop(FeedDirection::kInfeed, "interpreter", 0, {t1}, Clock::now() + 100ms);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_GE(Clock::now() - start, 100ms);
  EXPECT_NE(r.status().message().find("infeed of device 'interpreter' replica 0"),
            std::string::npos)
      << r.status().message();
}

TEST(FeedQueuesTest, CancelEndsAWait) {
  FeedQueues q(uint64_t{1} << 20, 10ms);
  std::atomic<bool> cancel{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(30ms);
    cancel = true;
  });
  auto r = q.Pop(FeedDirection::kInfeed, "interpreter", 0,
                 {ir::Type::Tensor(ir::DType::kF32, {1})}, std::nullopt, &cancel);
  stopper.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
}

TEST(FeedQueuesTest, CapacityIsBounded) {
  FeedQueues q(16);  // four f32s
  ASSERT_TRUE(q.Push(FeedDirection::kInfeed, "interpreter", 0, One(F32s({1, 2, 3}))).ok());
  Status full = q.Push(FeedDirection::kInfeed, "interpreter", 0, One(F32s({4, 5})));
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted) << full.ToString();
  // With a deadline a push waits for room, and gets it when a pop makes some.
  std::thread reader([&] {
    std::this_thread::sleep_for(30ms);
    (void)q.Pop(FeedDirection::kInfeed, "interpreter", 0,
                {ir::Type::Tensor(ir::DType::kF32, {3})}, Clock::now() + 1s);
  });
  Status waited = q.Push(FeedDirection::kInfeed, "interpreter", 0, One(F32s({4, 5})),
                         Clock::now() + 5s);
  reader.join();
  EXPECT_TRUE(waited.ok()) << waited.ToString();
  EXPECT_EQ(q.Push(FeedDirection::kInfeed, "interpreter", 0, One(F32s({1, 2, 3, 4, 5}))).code(),
            StatusCode::kResourceExhausted);
}

TEST(FeedQueuesTest, CapacityCoversAllOfAClientsQueues) {
  FeedQueues q(16);
  ASSERT_TRUE(q.Push(FeedDirection::kInfeed, "interpreter", 0, One(F32s({1, 2}))).ok());
  ASSERT_TRUE(q.Push(FeedDirection::kOutfeed, "cpu", 0, One(F32s({3}))).ok());
  EXPECT_EQ(q.bytes(), 12u);
  Status full = q.Push(FeedDirection::kInfeed, "cpu", 0, One(F32s({4, 5})));
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(full.message().find("--max-feed-bytes"), std::string::npos) << full.message();
}

// Issue 13, item 6: one client's feeds are never another's.
TEST(FeedRegistryTest, EachClientHasItsOwnQueues) {
  FeedRegistry registry;
  const ir::Type t2 = ir::Type::Tensor(ir::DType::kF32, {2});
  // Two sessions of process 100 (uid 1000) share; process 200 and a session
  // without a pid have their own.
  auto a1 = registry.Acquire(FeedOwner::Of(/*session=*/1, /*pid=*/100, /*uid=*/1000));
  auto a2 = registry.Acquire(FeedOwner::Of(2, 100, 1000));
  auto b = registry.Acquire(FeedOwner::Of(3, 200, 1000));
  auto c = registry.Acquire(FeedOwner::Of(4, 0, 1000));
  auto d = registry.Acquire(FeedOwner::Of(5, 0, 1000));
  // The same pid under another uid (a process that changed its uid between
  // connections) is another client.
  auto e = registry.Acquire(FeedOwner::Of(6, 100, 1001));
  EXPECT_EQ(a1.get(), a2.get());
  for (const auto& other : {b, c, d, e}) EXPECT_NE(a1.get(), other.get());
  EXPECT_NE(c.get(), d.get());
  EXPECT_EQ(registry.clients(), 5u);

  ASSERT_TRUE(a1->Push(FeedDirection::kOutfeed, "interpreter", 0, One(F32s({7, 8}))).ok());
  for (const auto& other : {b, c, d, e}) {
    auto r = other->Pop(FeedDirection::kOutfeed, "interpreter", 0, {t2}, Clock::now() + 20ms);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  }
  auto mine = a2->Pop(FeedDirection::kOutfeed, "interpreter", 0, {t2}, Clock::now() + 1s);
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  EXPECT_EQ((*mine)[0].GetDouble(1), 8);
}

TEST(FeedRegistryTest, QueuesGoWithTheClientsLastSession) {
  FeedRegistry registry;
  const FeedOwner owner = FeedOwner::Of(1, 100, 1000);
  auto first = registry.Acquire(owner);
  auto second = registry.Acquire(owner);
  ASSERT_TRUE(first->Push(FeedDirection::kInfeed, "interpreter", 0, One(F32s({1}))).ok());
  first.reset();
  EXPECT_EQ(second->size(FeedDirection::kInfeed, "interpreter", 0), 1u);
  EXPECT_EQ(registry.clients(), 1u);
  second.reset();
  EXPECT_EQ(registry.clients(), 0u);
  // A later process with the same pid starts empty.
  auto later = registry.Acquire(owner);
  EXPECT_EQ(later->size(FeedDirection::kInfeed, "interpreter", 0), 0u);
}

TEST(FeedRegistryTest, ConcurrentAcquireAndRelease) {
  FeedRegistry registry;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&registry, t] {
      for (int i = 0; i < 2000; ++i) {
        auto q = registry.Acquire(FeedOwner::Of(0, 1 + (i + t) % 3, 1000));
        (void)q->Push(FeedDirection::kInfeed, "interpreter", 0, One(F32s({1})));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(registry.clients(), 0u);
}

}  // namespace
}  // namespace jitd::daemon
