#include "daemon/quantum_pacer.h"

#include <algorithm>

namespace jitd::daemon {

QuantumPacer::QuantumPacer(uint64_t most, int64_t turn_nanos)
    : most_(std::max<uint64_t>(1, most)), turn_nanos_(std::max<int64_t>(1, turn_nanos)) {}

uint64_t QuantumPacer::Requests() const {
  const int64_t pace = pace_nanos();
  if (pace <= 0) return most_;
  const uint64_t fit = static_cast<uint64_t>(std::max<int64_t>(1, turn_nanos_ / pace));
  return std::clamp(fit, std::min(most_, kMinRequests), most_);
}

uint64_t QuantumPacer::Scale(int active, int slots) {
  const int per_slot = active / std::max(1, slots);
  return std::clamp<uint64_t>(static_cast<uint64_t>(std::max(0, per_slot / 2)), 1, kMaxScale);
}

void QuantumPacer::Measure(int64_t nanos, uint64_t requests) {
  if (requests < kMinSampleRequests || nanos <= 0) return;
  int64_t sample = std::max<int64_t>(1, nanos / static_cast<int64_t>(requests));
  const int64_t pace = pace_nanos();
  if (pace <= 0) {
    pace_nanos_.store(sample, std::memory_order_relaxed);
    return;
  }
  sample = std::min(sample, 2 * pace);
  pace_nanos_.store(std::max<int64_t>(1, pace + (sample - pace) / 8), std::memory_order_relaxed);
}

}  // namespace jitd::daemon
