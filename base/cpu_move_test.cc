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
    // Pinned to the CPU it runs on, then given the whole set back: it
    // stays there until moved.
    const int before = ::sched_getcpu();
    ASSERT_GE(before, 0);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(before, &one);
    ASSERT_EQ(::sched_setaffinity(0, sizeof(one), &one), 0);
    ASSERT_EQ(::sched_setaffinity(0, sizeof(all), &all), 0);
    ASSERT_TRUE(MoveOffThisCpu());
    // Read at once: the kernel may move it back later, but the move itself
    // took it off `before` (sched_setaffinity migrates before it returns).
    // A preemption between the two calls could put it back; then retry.
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
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ASSERT_EQ(::sched_setaffinity(0, sizeof(one), &one), 0);
    EXPECT_FALSE(MoveOffThisCpu());
    EXPECT_EQ(::sched_getcpu(), cpu);
    cpu_set_t after;
    ASSERT_EQ(::sched_getaffinity(0, sizeof(after), &after), 0);
    EXPECT_TRUE(SameSet(after, one));
  });
}

}  // namespace
}  // namespace jitd
