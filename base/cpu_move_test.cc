#include "base/cpu_move.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

namespace jitd {
namespace {

bool SameSet(const cpu_set_t& a, const cpu_set_t& b) { return CPU_EQUAL(&a, &b) != 0; }

// Runs `body` on a thread of its own, so that affinity changes stay there.
template <typename F>
void OnOwnThread(F body) {
  std::thread t(body);
  t.join();
}

TEST(CpuMoveTest, MovesToAnotherAllowedCpuAndRestoresTheAffinity) {
  OnOwnThread([] {
    cpu_set_t all;
    ASSERT_EQ(::sched_getaffinity(0, sizeof(all), &all), 0);
    if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "one CPU allowed: nowhere to move";
    const int before = ::sched_getcpu();
    ASSERT_GE(before, 0);
    ASSERT_TRUE(MoveOffThisCpu());
    // Read at once: sched_setaffinity migrates before it returns, but the
    // scheduler may have moved the thread between the reads and the move,
    // or move it back after; then it moves again.
    bool moved = false;
    for (int i = 0; i < 20 && !moved; ++i) {
      moved = ::sched_getcpu() != before;
      if (!moved) ASSERT_TRUE(MoveOffThisCpu());
    }
    EXPECT_TRUE(moved);
    cpu_set_t after;
    ASSERT_EQ(::sched_getaffinity(0, sizeof(after), &after), 0);
    EXPECT_TRUE(SameSet(after, all));
  });
}

TEST(CpuMoveTest, AThreadPinnedToOneCpuStays) {
  OnOwnThread([] {
    const int cpu = ::sched_getcpu();
    ASSERT_GE(cpu, 0);
    ASSERT_TRUE(PinThisThread(cpu));
    cpu_set_t pinned;
    ASSERT_EQ(::sched_getaffinity(0, sizeof(pinned), &pinned), 0);
    EXPECT_FALSE(MoveOffThisCpu());
    EXPECT_EQ(::sched_getcpu(), cpu);
    cpu_set_t after;
    ASSERT_EQ(::sched_getaffinity(0, sizeof(after), &after), 0);
    EXPECT_TRUE(SameSet(after, pinned));
  });
}

TEST(CpuMoveTest, PinThisThreadRunsItOnThatCpuOnly) {
  OnOwnThread([] {
    cpu_set_t all;
    ASSERT_EQ(::sched_getaffinity(0, sizeof(all), &all), 0);
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &all)) continue;
      ASSERT_EQ(::sched_setaffinity(0, sizeof(all), &all), 0);
      ASSERT_TRUE(PinThisThread(cpu)) << "cpu " << cpu;
      EXPECT_EQ(::sched_getcpu(), cpu);
      cpu_set_t pinned;
      ASSERT_EQ(::sched_getaffinity(0, sizeof(pinned), &pinned), 0);
      EXPECT_EQ(CPU_COUNT(&pinned), 1);
      EXPECT_TRUE(CPU_ISSET(cpu, &pinned));
    }
  });
}

TEST(CpuMoveTest, PinThisThreadRefusesACpuItMayNotUse) {
  OnOwnThread([] {
    cpu_set_t all;
    ASSERT_EQ(::sched_getaffinity(0, sizeof(all), &all), 0);
    EXPECT_FALSE(PinThisThread(-1));
    EXPECT_FALSE(PinThisThread(CPU_SETSIZE));
    if (!CPU_ISSET(CPU_SETSIZE - 1, &all)) EXPECT_FALSE(PinThisThread(CPU_SETSIZE - 1));
    cpu_set_t after;
    ASSERT_EQ(::sched_getaffinity(0, sizeof(after), &after), 0);
    EXPECT_TRUE(SameSet(after, all));
  });
}

}  // namespace
}  // namespace jitd
