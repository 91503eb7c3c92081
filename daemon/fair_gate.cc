#include "daemon/fair_gate.h"

namespace jitd::daemon {

void FairGate::Acquire(uint64_t client) {
  std::unique_lock<std::mutex> lock(mu_);
  if (active_ < slots_ && ring_.empty()) {
    ++active_;
    return;
  }
  Waiter waiter;
  std::deque<Waiter*>& queue = queues_[client];
  if (queue.empty()) ring_.push_back(client);
  queue.push_back(&waiter);
  waiter.cv.wait(lock, [&] { return waiter.granted; });
  ++waited_;
  // The releaser kept active_ as it was: the slot passed to this waiter.
}

void FairGate::Release() {
  std::lock_guard<std::mutex> lock(mu_);
  if (ring_.empty()) {
    --active_;
    return;
  }
  const uint64_t client = ring_.front();
  ring_.pop_front();
  auto it = queues_.find(client);
  Waiter* next = it->second.front();
  it->second.pop_front();
  if (it->second.empty()) {
    queues_.erase(it);
  } else {
    ring_.push_back(client);  // its other waiters wait for their next turn
  }
  next->granted = true;
  next->cv.notify_one();
}

}  // namespace jitd::daemon
