#include "jit/passes/buffer_assignment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>

namespace jitd::passes {
namespace {

TEST(BufferAssignmentTest, DisjointRangesShareOverlappingOnesDoNot) {
  // a [0,1], b [1,2] overlap at 1; c [2,3] may reuse a's bytes; d [4,4]
  // may reuse anything.
  const std::vector<BufferInterval> buffers = {{100, 0, 1}, {64, 1, 2}, {100, 2, 3}, {500, 4, 4}};
  const BufferAssignment a = AssignBuffers(buffers, 64);
  EXPECT_EQ(a.offsets[0], 0);
  EXPECT_EQ(a.offsets[1], 128);  // after a (100 rounded to 128)
  EXPECT_EQ(a.offsets[2], 0);    // a is dead at 2
  EXPECT_EQ(a.offsets[3], 0);
  EXPECT_EQ(a.arena_bytes, 512);
  EXPECT_EQ(a.unshared_bytes, 128 + 64 + 128 + 512);
}

TEST(BufferAssignmentTest, DefinedWhereAnotherDiesDoesNotShare) {
  const std::vector<BufferInterval> buffers = {{64, 0, 3}, {64, 3, 5}};
  const BufferAssignment a = AssignBuffers(buffers, 64);
  EXPECT_NE(a.offsets[0], a.offsets[1]);
  EXPECT_EQ(a.arena_bytes, 128);
}

TEST(BufferAssignmentTest, FirstFitFillsHoles) {
  // x and z live long; y dies early and leaves a hole a smaller w takes.
  const std::vector<BufferInterval> buffers = {{64, 0, 9}, {256, 0, 2}, {64, 0, 9}, {128, 3, 9}};
  const BufferAssignment a = AssignBuffers(buffers, 64);
  EXPECT_EQ(a.offsets[0], 0);
  EXPECT_EQ(a.offsets[1], 64);
  EXPECT_EQ(a.offsets[2], 320);
  EXPECT_EQ(a.offsets[3], 64);  // in y's hole
  EXPECT_EQ(a.arena_bytes, 384);
}

// Random live ranges: buffers live at the same time never overlap in
// memory, offsets are aligned, and the arena holds them all.
TEST(BufferAssignmentTest, LiveBuffersNeverOverlap) {
  std::mt19937 gen(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<BufferInterval> buffers;
    const int n = 1 + static_cast<int>(gen() % 60);
    for (int i = 0; i < n; ++i) {
      const int64_t def = gen() % 40;
      buffers.push_back({static_cast<int64_t>(gen() % 5000), def, def + static_cast<int64_t>(gen() % 10)});
    }
    const BufferAssignment a = AssignBuffers(buffers, 64);
    ASSERT_EQ(a.offsets.size(), buffers.size());
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(a.offsets[i] % 64, 0);
      EXPECT_LE(a.offsets[i] + std::max<int64_t>(buffers[i].bytes, 1), a.arena_bytes);
      for (int j = i + 1; j < n; ++j) {
        const bool live_together = buffers[i].def <= buffers[j].last_use && buffers[j].def <= buffers[i].last_use;
        const bool disjoint = a.offsets[i] + buffers[i].bytes <= a.offsets[j] ||
                              a.offsets[j] + buffers[j].bytes <= a.offsets[i];
        if (live_together) EXPECT_TRUE(disjoint) << round << ": " << i << " and " << j;
      }
    }
    EXPECT_LE(a.arena_bytes, a.unshared_bytes);
  }
  EXPECT_NE(DescribeAssignment({}, AssignBuffers({}, 64)).find("arena=0"), std::string::npos);
}

// 200,000 buffers all defined before any dies (a program computing 10^5
// values before using them), then 200,000 dying one by one: linear-ish
// time (first fit over every live buffer took minutes), no overlaps.
TEST(BufferAssignmentTest, ManyBuffersLiveAtOnceStayFast) {
  const int64_t n = 200'000;
  std::vector<BufferInterval> buffers;
  for (int64_t i = 0; i < n; ++i) buffers.push_back({64, i, n});
  for (int64_t i = 0; i < n; ++i) buffers.push_back({64, n + i, n + i + 1});
  const auto start = std::chrono::steady_clock::now();
  const BufferAssignment a = AssignBuffers(buffers, 64);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  // The first n are live together: all distinct offsets.
  std::vector<int64_t> offsets(a.offsets.begin(), a.offsets.begin() + n);
  std::sort(offsets.begin(), offsets.end());
  EXPECT_EQ(std::adjacent_find(offsets.begin(), offsets.end()), offsets.end());
  // The first of the later ones is defined where the others die (so it
  // cannot share); the rest reuse the space.
  EXPECT_EQ(a.arena_bytes, 64 * (n + 1));
}

}  // namespace
}  // namespace jitd::passes
