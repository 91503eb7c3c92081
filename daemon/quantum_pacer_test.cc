#include "daemon/quantum_pacer.h"

#include <gtest/gtest.h>

namespace jitd::daemon {
namespace {

constexpr int64_t kTurn = 1'000'000;  // 1 ms

TEST(QuantumPacerTest, ServesTheMostUntilAPaceIsMeasured) {
  QuantumPacer pacer(4096, kTurn);
  EXPECT_EQ(pacer.Requests(), 4096u);
  EXPECT_EQ(pacer.pace_nanos(), 0);
}

TEST(QuantumPacerTest, AQuantumTakesATurnAtTheMeasuredPace) {
  QuantumPacer pacer(4096, kTurn);
  pacer.Measure(/*nanos=*/400'000, /*requests=*/200);  // 2 µs a request
  EXPECT_EQ(pacer.pace_nanos(), 2000);
  EXPECT_EQ(pacer.Requests(), 500u);
  // Faster requests: more of them, up to the most.
  for (int i = 0; i < 100; ++i) pacer.Measure(100'000, 200);  // 0.5 µs
  EXPECT_GE(pacer.Requests(), 1950u);  // the average stops a few ns short
  EXPECT_LE(pacer.Requests(), 2000u);
  QuantumPacer capped(1024, kTurn);
  capped.Measure(100'000, 200);
  EXPECT_EQ(capped.Requests(), 1024u);
}

TEST(QuantumPacerTest, TooFewRequestsAreNoSample) {
  QuantumPacer pacer(4096, kTurn);
  pacer.Measure(700'000, 7);
  EXPECT_EQ(pacer.pace_nanos(), 0);
  pacer.Measure(0, 100);
  EXPECT_EQ(pacer.pace_nanos(), 0);
}

TEST(QuantumPacerTest, OneSlowQuantumMovesThePaceLittle) {
  QuantumPacer pacer(4096, kTurn);
  pacer.Measure(400'000, 200);  // 2 µs
  // A quantum preempted for 10 ms: 50 µs a request, counted as 4 µs.
  pacer.Measure(10'400'000, 200);
  EXPECT_EQ(pacer.pace_nanos(), 2000 + (4000 - 2000) / 8);
  EXPECT_EQ(pacer.Requests(), 1'000'000u / 2250u);
}

// A daemon whose first quantum was slow (its clients still starting)
// once measured 132 µs a request: quanta of 5 requests, too few to measure
// again, for good. The floor keeps quanta measurable, and the pace comes
// back.
TEST(QuantumPacerTest, ASlowStartDoesNotShrinkQuantaForGood) {
  QuantumPacer pacer(4096, kTurn);
  pacer.Measure(1'056'000, 8);  // 132 µs a request
  EXPECT_EQ(pacer.Requests(), QuantumPacer::kMinRequests);
  for (int i = 0; i < 100; ++i) {
    const uint64_t n = pacer.Requests();
    pacer.Measure(static_cast<int64_t>(n) * 2000, n);  // 2 µs again
  }
  EXPECT_LT(pacer.pace_nanos(), 2200);
  EXPECT_GT(pacer.Requests(), 450u);
}

TEST(QuantumPacerTest, FewerMostThanTheFloorIsKept) {
  QuantumPacer pacer(16, kTurn);
  pacer.Measure(1'000'000, 10);  // 100 µs a request: 10 would fit
  EXPECT_EQ(pacer.Requests(), 16u);
  QuantumPacer one(1, kTurn);
  one.Measure(400'000, 200);
  EXPECT_EQ(one.Requests(), 1u);
}

// Quanta double once four or more sessions share a turn slot, and no more.
TEST(QuantumPacerTest, QuantaGrowWithTheSessionsTakingTurns) {
  EXPECT_EQ(QuantumPacer::Scale(2, 1), 1u);
  EXPECT_EQ(QuantumPacer::Scale(3, 1), 1u);
  EXPECT_EQ(QuantumPacer::Scale(4, 1), 2u);
  EXPECT_EQ(QuantumPacer::Scale(8, 1), QuantumPacer::kMaxScale);
  EXPECT_EQ(QuantumPacer::Scale(500, 1), QuantumPacer::kMaxScale);
  EXPECT_EQ(QuantumPacer::Scale(7, 2), 1u);  // 3.5 a slot
  EXPECT_EQ(QuantumPacer::Scale(8, 2), 2u);
  EXPECT_EQ(QuantumPacer::Scale(0, 0), 1u);
}

}  // namespace
}  // namespace jitd::daemon
