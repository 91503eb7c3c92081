#include "daemon/turn_order.h"

#include <algorithm>

namespace jitd::daemon {

size_t TurnOrder::Pick(std::span<uint64_t* const> services, uint64_t credit) {
  const uint64_t floor = last_ > credit ? last_ - credit : 0;
  size_t pick = 0;
  uint64_t least = UINT64_MAX;
  for (size_t i = 0; i < services.size(); ++i) {
    const uint64_t service = std::max(*services[i], floor);
    if (service < least) {
      least = service;
      pick = i;
    }
  }
  *services[pick] = least;
  last_ = std::max(last_, least);
  return pick;
}

size_t TurnOrder::Choose(std::span<const Queued> queued, uint64_t credit) {
  if (!queued[0].turn || !queued[0].request) return 0;
  size_t index[kWindow];
  uint64_t* services[kWindow];
  size_t n = 0;
  for (size_t i = 0; i < std::min(queued.size(), kWindow) && queued[i].turn; ++i) {
    if (!queued[i].request) continue;
    index[n] = i;
    services[n] = queued[i].service;
    ++n;
  }
  return index[Pick(std::span<uint64_t* const>(services, n), credit)];
}

uint64_t TurnOrder::Charge(uint64_t served, int64_t wasted_nanos, int64_t pace_nanos) {
  if (wasted_nanos <= 0 || pace_nanos <= 0) return served;
  return served + static_cast<uint64_t>(wasted_nanos / pace_nanos);
}

}  // namespace jitd::daemon
