#include "daemon/fair_gate.h"

#include <algorithm>

namespace jitd::daemon {

void FairGate::Acquire(uint64_t client) {
  std::unique_lock<std::mutex> lock(mu_);
  if (active_ < slots_ && ring_.empty()) {
    ++active_;
    ++running_[client];
    return;
  }
  Waiter waiter;
  std::deque<Waiter*>& queue = queues_[client];
  if (queue.empty()) ring_.push_back(client);
  queue.push_back(&waiter);
  waiter.cv.wait(lock, [&] { return waiter.granted; });
  ++waited_;
  // The releaser kept active_ as it was and counted the slot as this
  // client's: the slot passed to this waiter.
}

void FairGate::Release(uint64_t client) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = running_.find(client); it != running_.end() && --it->second == 0) {
    running_.erase(it);
  }
  if (ring_.empty()) {
    --active_;
    return;
  }
  // The first waiting client in ring order that runs nothing now; when
  // every waiting client already runs something, the one at the front.
  auto pick = std::find_if(ring_.begin(), ring_.end(),
                           [&](uint64_t c) { return running_.find(c) == running_.end(); });
  if (pick == ring_.end()) pick = ring_.begin();
  const uint64_t next_client = *pick;
  ring_.erase(pick);
  auto it = queues_.find(next_client);
  Waiter* next = it->second.front();
  it->second.pop_front();
  if (it->second.empty()) {
    queues_.erase(it);
  } else {
    ring_.push_back(next_client);  // its other waiters wait for their next turn
  }
  ++running_[next_client];
  next->granted = true;
  next->cv.notify_one();
}

}  // namespace jitd::daemon
