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

}  // namespace
}  // namespace jitd::daemon
