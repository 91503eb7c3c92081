#include "daemon/turn_order.h"

#include <vector>

#include <gtest/gtest.h>

namespace jitd::daemon {
namespace {

constexpr uint64_t kCredit = 1000;  // a quantum's requests

// Pointers to each of `services`, for Pick.
std::vector<uint64_t*> Pointers(std::vector<uint64_t>& services) {
  std::vector<uint64_t*> pointers;
  for (uint64_t& s : services) pointers.push_back(&s);
  return pointers;
}

TEST(TurnOrderTest, TheLeastServedGoesFirstAndEqualsInQueueOrder) {
  TurnOrder order;
  std::vector<uint64_t> services = {0, 0, 0};
  EXPECT_EQ(order.Pick(Pointers(services), kCredit), 0u);
  services = {500, 300, 300};
  EXPECT_EQ(order.Pick(Pointers(services), kCredit), 1u);
  services = {500, 900, 400};
  EXPECT_EQ(order.Pick(Pointers(services), kCredit), 2u);
}

// Three sessions served round after round, one of whose quanta was cut
// after one request: it is served first at the next pick, and again until
// it has caught up, so over the rounds each gets the same.
TEST(TurnOrderTest, AQuantumCutShortIsMadeUp) {
  TurnOrder order;
  std::vector<uint64_t> services = {0, 0, 0};
  std::vector<uint64_t> served(3, 0);
  bool cut = false;
  for (int turn = 0; turn < 30; ++turn) {
    const size_t i = order.Pick(Pointers(services), kCredit);
    // Session 1's fourth quantum serves one request, not a thousand.
    const uint64_t n = (i == 1 && served[1] == 3000 && !cut) ? 1 : 1000;
    if (n == 1) cut = true;
    served[i] += n;
    services[i] += TurnOrder::Charge(n, 0, 1000);
  }
  EXPECT_TRUE(cut);
  // 30 turns, one of them cut: 29,001 requests, the cut session within a
  // quantum of the others.
  EXPECT_EQ(served[0] + served[1] + served[2], 29'001u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_GE(served[i], 9'000u) << i;
    EXPECT_LE(served[i], 10'001u) << i;
  }
  EXPECT_GE(served[1], 9'001u);
}

// A session idle for a long time (or new) banks nothing: it is put no more
// than a quantum behind the last pick, so it gets one extra turn's worth,
// not every turn until it catches up.
TEST(TurnOrderTest, ASessionBackFromIdleStartsAtMostAQuantumBehind) {
  TurnOrder order;
  std::vector<uint64_t> services = {50'000, 50'000};
  ASSERT_EQ(order.Pick(Pointers(services), kCredit), 0u);
  services[0] += 1000;
  std::vector<uint64_t> with_new = {services[0], services[1], 0};  // the new one had nothing
  EXPECT_EQ(order.Pick(Pointers(with_new), kCredit), 2u);
  EXPECT_EQ(with_new[2], 49'000u);  // raised to the last pick less the credit
  with_new[2] += 1000;
  // Now 50,000 like session 1: session 1 queued first goes first.
  EXPECT_EQ(order.Pick(Pointers(with_new), kCredit), 1u);
}

// A turn whose client sent nothing within the wait held the slot for
// nothing: it counts as the requests that wait could have served, so a
// client slow between requests gets no more of the slots' time than others.
TEST(TurnOrderTest, AWaitForARequestThatDidNotComeCounts) {
  EXPECT_EQ(TurnOrder::Charge(500, 0, 1000), 500u);
  EXPECT_EQ(TurnOrder::Charge(1, 100'000, 1000), 101u);  // one request, 100 µs waited at 1 µs each
  EXPECT_EQ(TurnOrder::Charge(0, 100'000, 0), 0u);        // no pace yet: requests only
  EXPECT_EQ(TurnOrder::Charge(3, -5, 1000), 3u);
}

// A slow client's turns (each one request and a wait of 100 µs) against a
// fast one's (quanta of 1000 requests at 1 µs): the slow one is not picked
// again and again — it gets about as much of the slot's time.
TEST(TurnOrderTest, ASlowClientDoesNotHoldTheSlot) {
  TurnOrder order;
  std::vector<uint64_t> services = {0, 0};
  int64_t slot_nanos[2] = {0, 0};
  for (int turn = 0; turn < 200; ++turn) {
    const size_t i = order.Pick(Pointers(services), kCredit);
    if (i == 0) {
      services[0] += TurnOrder::Charge(1000, 0, 1000);
      slot_nanos[0] += 1'000'000;
    } else {
      services[1] += TurnOrder::Charge(1, 100'000, 1000);
      slot_nanos[1] += 101'000;
    }
  }
  const double share = static_cast<double>(slot_nanos[1]) / static_cast<double>(slot_nanos[0]);
  EXPECT_GT(share, 0.8);
  EXPECT_LT(share, 1.25);
}

// Choose over a queue: turn sessions with a request waiting compete by
// service; anything else is taken in queue order.
TEST(TurnOrderTest, ChooseTakesTheLeastServedSessionWithARequest) {
  TurnOrder order;
  uint64_t a = 900, b = 300, c = 100, d = 200;
  const TurnOrder::Queued queued[] = {
      {true, true, &a}, {true, true, &b}, {true, false, &c}, {true, true, &d}};
  // c has had the least but has nothing waiting: d.
  EXPECT_EQ(order.Choose(queued, kCredit), 3u);
}

// A front session with nothing waiting (polled hot) is taken in turn: passed
// over while others have requests, it would stay at the front for good and
// hold back everything behind it.
TEST(TurnOrderTest, ChooseTakesAFrontSessionWithNothingWaiting) {
  TurnOrder order;
  uint64_t a = 900, b = 0;
  const TurnOrder::Queued queued[] = {{true, false, &a}, {true, true, &b}};
  EXPECT_EQ(order.Choose(queued, kCredit), 0u);
}

// Nothing but turn sessions is passed over: the pick stops at the first
// posted task or session of long requests, so those reach the front.
TEST(TurnOrderTest, ChooseNeverPassesOverATask) {
  TurnOrder order;
  uint64_t a = 900, b = 800, c = 0;
  const TurnOrder::Queued queued[] = {
      {true, true, &a}, {true, true, &b}, {false, false, nullptr}, {true, true, &c}};
  EXPECT_EQ(order.Choose(queued, kCredit), 1u);  // not c, behind the task
  const TurnOrder::Queued task_first[] = {{false, false, nullptr}, {true, true, &c}};
  EXPECT_EQ(order.Choose(task_first, kCredit), 0u);
}

// Only the first kWindow items are looked at: a less-served session further
// back waits until it is nearer the front.
TEST(TurnOrderTest, ChooseLooksOnlyAtTheWindow) {
  TurnOrder order;
  std::vector<uint64_t> services(TurnOrder::kWindow + 1, 500);
  services.back() = 0;
  std::vector<TurnOrder::Queued> queued;
  for (uint64_t& s : services) queued.push_back({true, true, &s});
  services[3] = 400;
  EXPECT_EQ(order.Choose(queued, kCredit), 3u);
}

}  // namespace
}  // namespace jitd::daemon
