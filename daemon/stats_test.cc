// LatencyHistogram and the peer policy (CheckPeer): pure functions.
#include "daemon/stats.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "daemon/server.h"

namespace jitd::daemon {
namespace {

TEST(LatencyHistogramTest, BucketsCoverEveryValueInOrder) {
  // Every value lies in its bucket's [lower, upper), and buckets grow.
  std::vector<uint64_t> values = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 1000, 1023, 1024, 999'999,
                                  uint64_t{1} << 40, ~uint64_t{0}};
  for (uint64_t v : values) {
    const int b = LatencyHistogram::BucketOf(v);
    ASSERT_GE(b, 0);
    ASSERT_LT(b, LatencyHistogram::kBuckets);
    EXPECT_LE(LatencyHistogram::BucketLower(b), v) << v;
    if (v != ~uint64_t{0}) EXPECT_LT(v, LatencyHistogram::BucketUpper(b)) << v;
  }
  for (int b = 1; b < LatencyHistogram::kBuckets; ++b) {
    EXPECT_EQ(LatencyHistogram::BucketLower(b), LatencyHistogram::BucketUpper(b - 1)) << b;
    EXPECT_GT(LatencyHistogram::BucketLower(b), LatencyHistogram::BucketLower(b - 1)) << b;
  }
  // A bucket spans at most a quarter of its lower bound (4 per octave).
  for (int b = 8; b < LatencyHistogram::kBuckets - 1; ++b) {
    const double lo = static_cast<double>(LatencyHistogram::BucketLower(b));
    const double hi = static_cast<double>(LatencyHistogram::BucketUpper(b));
    EXPECT_LE(hi - lo, lo / 4 + 1) << b;
  }
}

TEST(LatencyHistogramTest, PercentilesAreWithinTheBucketError) {
  LatencyHistogram h;
  EXPECT_EQ(h.Summarize().count, 0u);
  EXPECT_EQ(h.Summarize().p50_us, 0.0);
  // 1..10000 µs, uniformly: p50 ~ 5000 µs, p90 ~ 9000, p99 ~ 9900.
  for (uint64_t us = 1; us <= 10000; ++us) h.Record(us * 1000);
  const LatencyHistogram::Summary s = h.Summarize();
  EXPECT_EQ(s.count, 10000u);
  EXPECT_NEAR(s.p50_us, 5000, 5000 * 0.13);
  EXPECT_NEAR(s.p90_us, 9000, 9000 * 0.13);
  EXPECT_NEAR(s.p99_us, 9900, 9900 * 0.13);
  EXPECT_GE(s.max_us, 10000);
  EXPECT_LE(s.max_us, 10000 * 1.26);
  EXPECT_LE(s.p50_us, s.p90_us);
  EXPECT_LE(s.p90_us, s.p99_us);
  // One slow outlier among fast calls moves max but not p50/p99.
  LatencyHistogram fast;
  for (int i = 0; i < 1000; ++i) fast.Record(2000);
  fast.Record(5'000'000);
  const LatencyHistogram::Summary f = fast.Summarize();
  EXPECT_NEAR(f.p50_us, 2.0, 0.3);
  EXPECT_NEAR(f.p99_us, 2.0, 0.3);
  EXPECT_GE(f.max_us, 5000);
  EXPECT_NE(SummaryJson(f).find("\"count\":1001"), std::string::npos) << SummaryJson(f);
}

TEST(PeerPolicyTest, OwnerIsAllowedOthersNeedAnAllowance) {
  PeerPolicy policy;
  policy.owner_uid = 1000;
  EXPECT_TRUE(CheckPeer(policy, 1000, 1000, {}).ok());
  const Status refused = CheckPeer(policy, 1001, 1001, {});
  EXPECT_EQ(refused.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(refused.message().find("uid 1001"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("serves uid 1000"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("--allow-uid"), std::string::npos) << refused.message();

  policy.allow_uids = {1001, 1005};
  EXPECT_TRUE(CheckPeer(policy, 1001, 50, {}).ok());
  EXPECT_TRUE(CheckPeer(policy, 1005, 50, {}).ok());
  EXPECT_EQ(CheckPeer(policy, 1002, 50, {}).code(), StatusCode::kPermissionDenied);

  // A group allowance admits the primary group and supplementary groups.
  policy.allow_gids = {77};
  EXPECT_TRUE(CheckPeer(policy, 1002, 77, {}).ok());
  const gid_t groups[] = {10, 77};
  EXPECT_TRUE(CheckPeer(policy, 1002, 50, groups).ok());
  const gid_t other_groups[] = {10, 78};
  EXPECT_EQ(CheckPeer(policy, 1002, 50, other_groups).code(), StatusCode::kPermissionDenied);
}

TEST(PeerPolicyTest, DefaultOwnerIsTheEffectiveUid) {
  PeerPolicy policy;  // owner_uid -1
  EXPECT_TRUE(CheckPeer(policy, ::geteuid(), ::getegid(), {}).ok());
  EXPECT_EQ(CheckPeer(policy, ::geteuid() + 1, ::getegid() + 1, {}).code(),
            StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace jitd::daemon
