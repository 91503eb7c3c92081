// Daemon statistics: latency histograms and per-client counters, cheap
// enough for the execute hot path.
//
// LatencyHistogram: fixed log-linear buckets over nanoseconds — 4 buckets
// per power of two (a bucket spans at most 25% of its lower bound) from 1 ns
// to 2^63 ns. Record is one relaxed atomic add (no lock); percentiles are
// read from a snapshot and reported as the bucket's midpoint, so they are
// within ~12% of the exact value.
//
// ClientCounters: one per session, written only by that session's thread
// (BumpSingleWriter: relaxed load + store) and read by Instance::StatsJson
// from any thread.
//
// Thread safety: every method may be called from any thread.
#ifndef JITD_DAEMON_STATS_H_
#define JITD_DAEMON_STATS_H_

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace jitd::daemon {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 2;
  static constexpr int kBuckets = (64 - kSubBits + 1) << kSubBits;  // 2^63.. is the last

  void Record(uint64_t nanos) {
    buckets_[BucketOf(nanos)].fetch_add(1, std::memory_order_relaxed);
  }

  // Percentiles in microseconds; all 0 when nothing was recorded.
  struct Summary {
    uint64_t count = 0;
    double p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0;
  };
  Summary Summarize() const;

  // The bucket of `nanos` and a bucket's [lower, upper) bounds (exposed for
  // tests).
  static int BucketOf(uint64_t nanos) {
    if (nanos < (uint64_t{1} << kSubBits)) return static_cast<int>(nanos);
    const int log = 63 - std::countl_zero(nanos);  // >= kSubBits
    const int sub = static_cast<int>((nanos >> (log - kSubBits)) & ((1 << kSubBits) - 1));
    return ((log - kSubBits + 1) << kSubBits) + sub;
  }
  static uint64_t BucketLower(int bucket);
  static uint64_t BucketUpper(int bucket);  // exclusive; saturates at 2^64-1

 private:
  std::array<std::atomic<uint64_t>, kBuckets> buckets_{};
};

// A "p50/p90/p99/max/count" JSON object of `s`.
std::string SummaryJson(const LatencyHistogram::Summary& s);

// Adds `n` to a counter that only one thread writes (a session's own
// counters): a relaxed load and store, no locked read-modify-write on the
// hot path. Readers on other threads see a recent value.
inline void BumpSingleWriter(std::atomic<uint64_t>& counter, uint64_t n = 1) {
  counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

struct ClientCounters {
  uint64_t session_id = 0;
  std::atomic<int64_t> pid{-1}, uid{-1};
  std::atomic<uint64_t> requests{0}, compiles{0}, executes{0}, errors{0};
  // Live handles and bytes (set by the session after each change).
  std::atomic<uint64_t> executables{0}, buffers{0}, buffer_bytes{0};
  // Time spent executing for this client (the device's run), in µs.
  std::atomic<uint64_t> execute_micros{0};
  // Device (GPU) memory its executions hold now and held at most
  // (devices/memory_account.h; set by the session after each execute).
  std::atomic<uint64_t> device_bytes{0}, device_peak_bytes{0};
  // GPU time of its executions' kernels, in µs (ExecuteOptions::device_nanos).
  std::atomic<uint64_t> device_micros{0};

  // What the client holds, one text per program (Session::PublishPrograms:
  // "module @name / @entry (device)", "x2" when held twice), for `jitd ps`.
  void SetPrograms(std::vector<std::string> programs) {
    std::lock_guard<std::mutex> lock(name_mu_);
    programs_ = std::move(programs);
  }
  std::vector<std::string> programs() const {
    std::lock_guard<std::mutex> lock(name_mu_);
    return programs_;
  }

  // A remote client (daemon/remote_server.h): its identity ("token:NAME",
  // "cert:CN") and address ("HOST:PORT"); both empty for local clients.
  void SetRemote(std::string identity, std::string address) {
    std::lock_guard<std::mutex> lock(name_mu_);
    remote_identity_ = std::move(identity);
    remote_address_ = std::move(address);
  }
  std::string remote_identity() const {
    std::lock_guard<std::mutex> lock(name_mu_);
    return remote_identity_;
  }
  std::string remote_address() const {
    std::lock_guard<std::mutex> lock(name_mu_);
    return remote_address_;
  }

  void SetName(std::string name) {
    std::lock_guard<std::mutex> lock(name_mu_);
    name_ = std::move(name);
  }
  std::string name() const {
    std::lock_guard<std::mutex> lock(name_mu_);
    return name_;
  }

 private:
  mutable std::mutex name_mu_;  // guards name_, programs_ and remote_*
  std::string name_;
  std::vector<std::string> programs_;
  std::string remote_identity_, remote_address_;
};

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_STATS_H_
