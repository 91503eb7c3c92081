#include "daemon/fair_gate.h"

#include <algorithm>

namespace jitd::daemon {
namespace {

// Clients remembered (their averages) beyond those running or waiting;
// past it the idle ones are forgotten, and start again as "no history".
constexpr size_t kMaxRememberedClients = 4096;

}  // namespace

FairGate::Lane FairGate::Acquire(uint64_t client) {
  std::unique_lock<std::mutex> lock(mu_);
  Client& c = clients_[client];
  if (active_ < slots_ && ring_.empty()) {
    ++active_;
    ++c.running;
    return Lane::kSlot;
  }
  if (const Lane lane = ExpressFor(c); lane != Lane::kSlot) {
    Busy(lane) = true;
    ++express_;
    ++c.running;
    return lane;
  }
  Waiter waiter;
  if (c.waiters.empty()) ring_.push_back(client);
  c.waiters.push_back(&waiter);
  waiter.cv.wait(lock, [&] { return waiter.granted; });
  ++waited_;
  // The releaser counted the turn as this client's (running, active_ or the
  // express lane): it passed to this waiter.
  return waiter.lane;
}

void FairGate::Grant(std::deque<uint64_t>::iterator it, Lane lane) {
  const uint64_t key = *it;
  ring_.erase(it);
  Client& c = clients_[key];
  Waiter* next = c.waiters.front();
  c.waiters.pop_front();
  if (!c.waiters.empty()) ring_.push_back(key);  // its other waiters wait for their next turn
  ++c.running;
  if (lane != Lane::kSlot) {
    Busy(lane) = true;
    ++express_;
  }
  next->lane = lane;
  next->granted = true;
  next->cv.notify_one();
}

void FairGate::Release(uint64_t client, Lane lane, std::chrono::nanoseconds ran) {
  std::lock_guard<std::mutex> lock(mu_);
  Client& c = clients_[client];
  --c.running;
  const int64_t ns = ran.count();
  c.average_ns = c.average_ns < 0 ? ns : (3 * c.average_ns + ns) / 4;
  if (lane != Lane::kSlot) {
    Busy(lane) = false;
    auto fits = std::find_if(ring_.begin(), ring_.end(),
                             [&](uint64_t k) { return ExpressFor(clients_[k]) == lane; });
    if (fits != ring_.end()) Grant(fits, lane);
  } else if (ring_.empty()) {
    --active_;
  } else {
    // The first waiting client that runs nothing now; when every waiting
    // client already runs something, the one at the front.
    auto pick = std::find_if(ring_.begin(), ring_.end(),
                             [&](uint64_t k) { return clients_[k].running == 0; });
    Grant(pick != ring_.end() ? pick : ring_.begin(), Lane::kSlot);
  }
  if (clients_.size() > kMaxRememberedClients) {
    std::erase_if(clients_, [](const auto& entry) {
      return entry.second.running == 0 && entry.second.waiters.empty();
    });
  }
}

}  // namespace jitd::daemon
