#include "daemon/remote_heap.h"

#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace jitd::daemon {
namespace {

TEST(RemoteHeap, AllocatesAlignedDisjointRangesAndCoalesces) {
  RemoteHeap heap(4096);
  StatusOr<uint64_t> a = heap.Allocate(10);
  StatusOr<uint64_t> b = heap.Allocate(100);
  StatusOr<uint64_t> c = heap.Allocate(64);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(*a % 64, 0u);
  EXPECT_EQ(*b, *a + 64);
  EXPECT_EQ(*c, *b + 128);
  EXPECT_EQ(heap.allocated_bytes(), 256u);
  ASSERT_TRUE(heap.Free(*b).ok());
  ASSERT_TRUE(heap.Free(*a).ok());
  ASSERT_TRUE(heap.Free(*c).ok());
  EXPECT_EQ(heap.allocated_bytes(), 0u);
  // Everything coalesced back: the whole heap is one range again.
  StatusOr<uint64_t> all = heap.Allocate(4096);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(*all, 0u);
  EXPECT_FALSE(heap.Allocate(1).ok());
}

TEST(RemoteHeap, RefusesWhatDoesNotFit) {
  RemoteHeap heap(1024);
  StatusOr<uint64_t> big = heap.Allocate(2048);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(big.status().message().find("--segment-bytes"), std::string::npos);
  EXPECT_EQ(heap.Free(64).code(), StatusCode::kNotFound);
  EXPECT_FALSE(heap.Allocate(~uint64_t{0}).ok());
}

TEST(RemoteHeap, CheckRangeOnlyInsideOneAllocation) {
  RemoteHeap heap(4096);
  const uint64_t a = *heap.Allocate(128);
  const uint64_t b = *heap.Allocate(128);
  EXPECT_TRUE(heap.CheckRange(a, 128).ok());
  EXPECT_TRUE(heap.CheckRange(a + 100, 28).ok());
  EXPECT_TRUE(heap.CheckRange(a + 128, 0).ok());  // b's start
  EXPECT_FALSE(heap.CheckRange(a + 100, 29 + 128).ok());  // spans a and b
  EXPECT_FALSE(heap.CheckRange(b + 128, 1).ok());         // past b: free space
  EXPECT_FALSE(heap.CheckRange(~uint64_t{0} - 4, 16).ok());
  EXPECT_FALSE(heap.CheckRange(a, ~uint64_t{0}).ok());
  ASSERT_TRUE(heap.Free(a).ok());
  EXPECT_FALSE(heap.CheckRange(a, 1).ok());
}

TEST(RemoteHeap, RandomAllocFreeKeepsAccounting) {
  RemoteHeap heap(1 << 20);
  std::mt19937 rng(3);
  std::vector<std::pair<uint64_t, uint64_t>> live;
  for (int i = 0; i < 2000; ++i) {
    if (live.empty() || rng() % 2 == 0) {
      const uint64_t n = 1 + rng() % 5000;
      StatusOr<uint64_t> off = heap.Allocate(n);
      if (!off.ok()) continue;
      for (auto [o, len] : live) EXPECT_TRUE(*off + n <= o || o + len <= *off);
      live.emplace_back(*off, n);
    } else {
      const size_t k = rng() % live.size();
      ASSERT_TRUE(heap.Free(live[k].first).ok());
      live.erase(live.begin() + static_cast<ptrdiff_t>(k));
    }
  }
  for (auto [o, len] : live) ASSERT_TRUE(heap.Free(o).ok());
  EXPECT_EQ(heap.allocated_bytes(), 0u);
  EXPECT_TRUE(heap.Allocate(1 << 20).ok());
}

}  // namespace
}  // namespace jitd::daemon
