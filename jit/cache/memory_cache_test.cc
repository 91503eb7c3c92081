#include "jit/cache/memory_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <stdexcept>
#include <thread>

namespace jitd::cache {
namespace {

Fingerprint Key(uint64_t n) { return Fingerprint(n, n * 7 + 1); }
std::shared_ptr<const std::string> Str(std::string s) {
  return std::make_shared<const std::string>(std::move(s));
}

TEST(MemoryCacheTest, PutGetAndStats) {
  MemoryCache<std::string> cache(100);
  EXPECT_EQ(cache.Get(Key(1)), nullptr);
  EXPECT_TRUE(cache.Put(Key(1), Str("one"), 10));
  auto v = cache.Get(Key(1));
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(*v, "one");
  MemoryCacheStats s = cache.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.bytes, 10u);
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.budget_bytes, 100u);
  EXPECT_FALSE(s.ToString().empty());
}

TEST(MemoryCacheTest, ProbeCountsOnlyHits) {
  MemoryCache<std::string> cache(100);
  EXPECT_EQ(cache.Probe(Key(1)), nullptr);
  EXPECT_EQ(cache.stats().misses, 0u);  // the GetOrCompute that follows counts it
  EXPECT_TRUE(cache.Put(Key(1), Str("one"), 10));
  auto v = cache.Probe(Key(1));
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(*v, "one");
  EXPECT_EQ(cache.stats().hits, 1u);
}

TEST(MemoryCacheTest, EvictsLeastRecentlyUsed) {
  MemoryCache<std::string> cache(30);
  cache.Put(Key(1), Str("a"), 10);
  cache.Put(Key(2), Str("b"), 10);
  cache.Put(Key(3), Str("c"), 10);
  ASSERT_NE(cache.Get(Key(1)), nullptr);  // 1 is now the most recent
  cache.Put(Key(4), Str("d"), 10);        // evicts 2
  EXPECT_EQ(cache.Get(Key(2)), nullptr);
  EXPECT_NE(cache.Get(Key(1)), nullptr);
  EXPECT_NE(cache.Get(Key(3)), nullptr);
  EXPECT_NE(cache.Get(Key(4)), nullptr);
  EXPECT_EQ(cache.stats().evictions, 1u);
  // A big entry evicts several.
  cache.Put(Key(5), Str("e"), 25);
  auto entries = cache.Entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].key, Key(5));
  EXPECT_EQ(cache.stats().bytes, 25u);
  EXPECT_EQ(cache.stats().evictions, 4u);
}

TEST(MemoryCacheTest, EntriesAreMostRecentFirst) {
  MemoryCache<int> cache(100);
  cache.Put(Key(1), std::make_shared<const int>(1), 1);
  cache.Put(Key(2), std::make_shared<const int>(2), 2);
  cache.Put(Key(3), std::make_shared<const int>(3), 3);
  cache.Get(Key(2));
  auto e = cache.Entries();
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].key, Key(2));
  EXPECT_EQ(e[1].key, Key(3));
  EXPECT_EQ(e[2].key, Key(1));
  EXPECT_EQ(e[0].bytes, 2u);
}

TEST(MemoryCacheTest, OversizeEntryIsNotKept) {
  MemoryCache<std::string> cache(10);
  cache.Put(Key(1), Str("small"), 5);
  EXPECT_FALSE(cache.Put(Key(2), Str("huge"), 11));
  EXPECT_EQ(cache.Get(Key(2)), nullptr);
  EXPECT_NE(cache.Get(Key(1)), nullptr);  // nothing was evicted for it
  EXPECT_EQ(cache.stats().rejected, 1u);
  EXPECT_FALSE(cache.Put(Key(3), nullptr, 1));
}

TEST(MemoryCacheTest, ReplaceAndErase) {
  MemoryCache<std::string> cache(100);
  cache.Put(Key(1), Str("a"), 10);
  cache.Put(Key(1), Str("b"), 20);
  EXPECT_EQ(*cache.Get(Key(1)), "b");
  EXPECT_EQ(cache.stats().bytes, 20u);
  EXPECT_EQ(cache.stats().entries, 1u);
  EXPECT_TRUE(cache.Erase(Key(1)));
  EXPECT_FALSE(cache.Erase(Key(1)));
  EXPECT_EQ(cache.stats().bytes, 0u);
  cache.Put(Key(2), Str("c"), 10);
  cache.Clear();
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_EQ(cache.stats().bytes, 0u);
}

TEST(MemoryCacheTest, SingleFlightComputesOnce) {
  MemoryCache<std::string> cache(1000);
  constexpr int kThreads = 8;
  std::atomic<int> calls{0};
  std::latch start(kThreads);
  std::vector<std::shared_ptr<const std::string>> results(kThreads);
  std::vector<CacheSource> sources(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      auto r = cache.GetOrCompute(Key(42), [&]() -> StatusOr<MemoryCache<std::string>::Sized> {
        ++calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        return MemoryCache<std::string>::Sized{Str("compiled"), 8};
      });
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      results[t] = r->value;
      sources[t] = r->source;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(calls.load(), 1);
  int computed = 0;
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_NE(results[t], nullptr);
    EXPECT_EQ(results[t].get(), results[0].get());  // the very same object
    computed += sources[t] == CacheSource::kComputed;
  }
  EXPECT_EQ(computed, 1);
  MemoryCacheStats s = cache.stats();
  EXPECT_EQ(s.computes, 1u);
  EXPECT_EQ(s.joined + s.hits, static_cast<uint64_t>(kThreads - 1));
  // Afterwards it is a plain hit.
  auto again = cache.GetOrCompute(Key(42), [&]() -> StatusOr<MemoryCache<std::string>::Sized> {
    ++calls;
    return MemoryCache<std::string>::Sized{Str("other"), 5};
  });
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->source, CacheSource::kHit);
  EXPECT_EQ(calls.load(), 1);
}

TEST(MemoryCacheTest, SingleFlightErrorsReachAllAndAreNotCached) {
  MemoryCache<std::string> cache(1000);
  constexpr int kThreads = 6;
  std::atomic<int> calls{0};
  std::latch start(kThreads);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      auto r = cache.GetOrCompute(Key(7), [&]() -> StatusOr<MemoryCache<std::string>::Sized> {
        ++calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        return InvalidArgument("bad program");
      });
      if (!r.ok() && r.status().message() == "bad program") ++errors;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(errors.load(), kThreads);
  EXPECT_EQ(cache.stats().entries, 0u);
  // The next caller computes again.
  auto r = cache.GetOrCompute(Key(7), [&]() -> StatusOr<MemoryCache<std::string>::Sized> {
    ++calls;
    return MemoryCache<std::string>::Sized{Str("ok now"), 6};
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->source, CacheSource::kComputed);
  EXPECT_EQ(*r->value, "ok now");
  EXPECT_EQ(calls.load(), 2);
}

TEST(MemoryCacheTest, ThrowingOrNullComputeIsInternal) {
  MemoryCache<std::string> cache(1000);
  auto r = cache.GetOrCompute(Key(1), []() -> StatusOr<MemoryCache<std::string>::Sized> {
    throw std::runtime_error("boom");
  });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_NE(r.status().message().find("boom"), std::string::npos);
  auto n = cache.GetOrCompute(Key(2), []() -> StatusOr<MemoryCache<std::string>::Sized> {
    return MemoryCache<std::string>::Sized{nullptr, 1};
  });
  EXPECT_EQ(n.status().code(), StatusCode::kInternal);
}

TEST(MemoryCacheTest, OversizeComputedValueIsReturnedButNotKept) {
  MemoryCache<std::string> cache(10);
  auto r = cache.GetOrCompute(Key(1), []() -> StatusOr<MemoryCache<std::string>::Sized> {
    return MemoryCache<std::string>::Sized{Str("big"), 100};
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r->value, "big");
  EXPECT_EQ(cache.Get(Key(1)), nullptr);
}

TEST(MemoryCacheTest, ConcurrentMixedUseStaysWithinBudget) {
  MemoryCache<int> cache(500);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        uint64_t k = static_cast<uint64_t>((i * 31 + t) % 97);
        if (i % 3 == 0) {
          cache.Put(Key(k), std::make_shared<const int>(i), 10 + k % 20);
        } else if (i % 3 == 1) {
          cache.Get(Key(k));
        } else {
          auto r = cache.GetOrCompute(Key(k), [&]() -> StatusOr<MemoryCache<int>::Sized> {
            return MemoryCache<int>::Sized{std::make_shared<const int>(i), 10 + k % 20};
          });
          ASSERT_TRUE(r.ok());
        }
        ASSERT_LE(cache.stats().bytes, 500u);
      }
    });
  }
  for (auto& th : threads) th.join();
  uint64_t sum = 0;
  for (const auto& e : cache.Entries()) sum += e.bytes;
  EXPECT_EQ(sum, cache.stats().bytes);
}

}  // namespace
}  // namespace jitd::cache
