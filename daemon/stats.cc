#include "daemon/stats.h"

#include <cstdio>
#include <limits>
#include <vector>

namespace jitd::daemon {

uint64_t LatencyHistogram::BucketLower(int bucket) {
  if (bucket < (1 << kSubBits)) return static_cast<uint64_t>(bucket);
  const int log = (bucket >> kSubBits) + kSubBits - 1;
  const uint64_t sub = static_cast<uint64_t>(bucket & ((1 << kSubBits) - 1));
  return (uint64_t{1} << log) + (sub << (log - kSubBits));
}

uint64_t LatencyHistogram::BucketUpper(int bucket) {
  if (bucket + 1 >= kBuckets) return std::numeric_limits<uint64_t>::max();
  return BucketLower(bucket + 1);
}

LatencyHistogram::Summary LatencyHistogram::Summarize() const {
  std::vector<uint64_t> counts(kBuckets);
  Summary s;
  for (int i = 0; i < kBuckets; ++i) {
    counts[i] = buckets_[i].load(std::memory_order_relaxed);
    s.count += counts[i];
  }
  if (s.count == 0) return s;
  auto middle_us = [](int b) {
    const double lo = static_cast<double>(BucketLower(b));
    const double hi = static_cast<double>(BucketUpper(b));
    return (b < (1 << kSubBits) ? lo : (lo + hi) / 2) / 1e3;
  };
  auto percentile = [&](double q) {
    // The smallest bucket whose cumulative count reaches q of the total.
    const double target = q * static_cast<double>(s.count);
    uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += counts[i];
      if (counts[i] != 0 && static_cast<double>(seen) >= target) return middle_us(i);
    }
    return 0.0;
  };
  s.p50_us = percentile(0.50);
  s.p90_us = percentile(0.90);
  s.p99_us = percentile(0.99);
  for (int i = kBuckets - 1; i >= 0; --i) {
    if (counts[i] != 0) {
      s.max_us = static_cast<double>(BucketUpper(i)) / 1e3;
      break;
    }
  }
  return s;
}

std::string SummaryJson(const LatencyHistogram::Summary& s) {
  char text[256];
  std::snprintf(text, sizeof(text),
                "{\"count\":%llu,\"p50_us\":%.3f,\"p90_us\":%.3f,\"p99_us\":%.3f,\"max_us\":%.3f}",
                static_cast<unsigned long long>(s.count), s.p50_us, s.p90_us, s.p99_us, s.max_us);
  return text;
}

}  // namespace jitd::daemon
