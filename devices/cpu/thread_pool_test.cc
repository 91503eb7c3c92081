// ThreadPool::ParallelFor: every index exactly once, for any size, chunk
// bound and pool size, from several callers at once and from inside a chunk.
#include "devices/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace jitd::cpu {
namespace {

void ExpectEachIndexOnce(ThreadPool& pool, int64_t n, int64_t min_chunk) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::atomic<int64_t> calls{0};
  pool.ParallelFor(n, min_chunk, [&](int64_t b, int64_t e) {
    ++calls;
    EXPECT_LE(0, b);
    EXPECT_LT(b, e);
    EXPECT_LE(e, n);
    for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "index " << i;
  EXPECT_LE(calls.load(), std::max<int64_t>(1, pool.num_threads() * ThreadPool::kChunksPerThread));
}

TEST(ThreadPoolTest, EveryIndexRunsOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 7, 100, 1000, 4097}) {
      for (int64_t min_chunk : {1, 3, 64, 10000}) {
        SCOPED_TRACE(std::to_string(threads) + " threads, n " + std::to_string(n) + ", min_chunk " +
                     std::to_string(min_chunk));
        ExpectEachIndexOnce(pool, n, min_chunk);
      }
    }
  }
}

TEST(ThreadPoolTest, ConcurrentAndNestedCalls) {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int round = 0; round < 50; ++round) ExpectEachIndexOnce(pool, 999, 1);
    });
  }
  for (auto& c : callers) c.join();
  // A chunk that itself splits a loop on the same pool.
  std::atomic<int64_t> sum{0};
  pool.ParallelFor(8, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      pool.ParallelFor(100, 1, [&](int64_t ib, int64_t ie) { sum += ie - ib; });
    }
  });
  EXPECT_EQ(sum.load(), 800);
}

}  // namespace
}  // namespace jitd::cpu
