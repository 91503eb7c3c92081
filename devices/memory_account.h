// MemoryAccount: one client's device memory as jitd counts it, against a
// limit (jitd serve --max-device-bytes). Devices that allocate memory of
// their own (cuda) count what an execution allocates against the account
// ExecuteOptions::device_memory names; the daemon makes one per session.
//
// The counting is jitd's own, not the driver's: bytes asked for, counted
// when reserved and released when the memory goes. Thread-safe (atomics);
// shared by the session and the allocations it made.
#ifndef JITD_DEVICES_MEMORY_ACCOUNT_H_
#define JITD_DEVICES_MEMORY_ACCOUNT_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "base/status.h"

namespace jitd::devices {

class MemoryAccount {
 public:
  // `client` names it in errors ("session 3 (pid 42)"); max_bytes 0 = no limit.
  MemoryAccount(std::string client, uint64_t max_bytes)
      : client_(std::move(client)), max_bytes_(max_bytes) {}

  const std::string& client() const { return client_; }
  uint64_t max_bytes() const { return max_bytes_; }
  uint64_t bytes_in_use() const { return bytes_.load(std::memory_order_relaxed); }
  // The most it held at once.
  uint64_t peak_bytes() const { return peak_.load(std::memory_order_relaxed); }

  // Counts `bytes` more, or RESOURCE_EXHAUSTED naming --max-device-bytes
  // when that passes the limit (nothing is counted then).
  Status Reserve(uint64_t bytes) {
    uint64_t now = bytes_.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t next = now + bytes;
      if (max_bytes_ != 0 && (next > max_bytes_ || next < now)) {
        return ResourceExhausted("device memory: " + std::to_string(bytes) + " more bytes for " +
                                 client_ + " would make " + std::to_string(next) +
                                 ", over its limit of " + std::to_string(max_bytes_) +
                                 " (holding " + std::to_string(now) +
                                 "); jitd serve --max-device-bytes raises it");
      }
      if (bytes_.compare_exchange_weak(now, next, std::memory_order_relaxed)) {
        uint64_t peak = peak_.load(std::memory_order_relaxed);
        while (next > peak &&
               !peak_.compare_exchange_weak(peak, next, std::memory_order_relaxed)) {
        }
        return Status::Ok();
      }
    }
  }
  void Release(uint64_t bytes) { bytes_.fetch_sub(bytes, std::memory_order_relaxed); }

 private:
  const std::string client_;
  const uint64_t max_bytes_;
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> peak_{0};
};

}  // namespace jitd::devices

#endif  // JITD_DEVICES_MEMORY_ACCOUNT_H_
