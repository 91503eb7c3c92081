#include "daemon/feed_queues.h"

#include <algorithm>

namespace jitd::daemon {
namespace {

std::string Where(FeedDirection direction, const std::string& device, uint32_t replica) {
  return std::string(FeedName(direction)) + " of device '" + device + "' replica " +
         std::to_string(replica);
}

std::string TypeList(const std::vector<ir::Type>& types) {
  std::string out;
  for (size_t i = 0; i < types.size(); ++i) out += (i ? ", " : "") + types[i].ToString();
  return out;
}

}  // namespace

const char* FeedName(FeedDirection direction) {
  return direction == FeedDirection::kInfeed ? "infeed" : "outfeed";
}

Status FeedQueues::Push(FeedDirection direction, const std::string& device, uint32_t replica,
                        std::vector<ir::Literal> values, std::optional<Clock::time_point> deadline,
                        const std::atomic<bool>* cancel) {
  uint64_t bytes = 0;
  for (const ir::Literal& v : values) bytes += v.bytes().size();
  if (bytes > max_queue_bytes_) {
    return ResourceExhausted(std::to_string(bytes) + " bytes for the " +
                             Where(direction, device, replica) +
                             " exceed its capacity of " + std::to_string(max_queue_bytes_) +
                             " bytes");
  }
  std::unique_lock<std::mutex> lock(mu_);
  Queue& queue = queues_[MakeKey(direction, device, replica)];
  while (bytes_ + bytes > max_queue_bytes_) {
    if (!deadline) {
      return ResourceExhausted("this client's feed queues hold " + std::to_string(bytes_) +
                               " bytes (the " + Where(direction, device, replica) + ": " +
                               std::to_string(queue.values.size()) + " values); " +
                               std::to_string(bytes) + " more would exceed their capacity of " +
                               std::to_string(max_queue_bytes_) +
                               " bytes (jitd serve --max-feed-bytes)");
    }
    if (cancel && cancel->load()) return Status(StatusCode::kUnavailable, "session closing");
    if (Clock::now() >= *deadline) {
      return Status(StatusCode::kDeadlineExceeded,
                    "this client's feed queues stayed full (" + std::to_string(bytes_) +
                        " bytes; nobody read the " + Where(direction, device, replica) +
                        ") until the execution deadline");
    }
    changed_.wait_until(lock, std::min(*deadline, Clock::now() + poll_));
  }
  for (ir::Literal& v : values) queue.values.push_back(std::move(v));
  bytes_ += bytes;
  changed_.notify_all();
  return Status::Ok();
}

StatusOr<std::vector<ir::Literal>> FeedQueues::Pop(FeedDirection direction,
                                                   const std::string& device, uint32_t replica,
                                                   const std::vector<ir::Type>& types,
                                                   std::optional<Clock::time_point> deadline,
                                                   const std::atomic<bool>* cancel) {
  const Clock::time_point start = Clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  Queue& queue = queues_[MakeKey(direction, device, replica)];
  while (queue.values.size() < types.size()) {
    if (cancel && cancel->load()) return Status(StatusCode::kUnavailable, "session closing");
    const Clock::time_point now = Clock::now();
    if (deadline && now >= *deadline) {
      const auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count();
      return Status(StatusCode::kDeadlineExceeded,
                    "waited " + std::to_string(waited) + " ms for " +
                        std::to_string(types.size()) + " value(s) (" + TypeList(types) +
                        ") on the " + Where(direction, device, replica) + ", " +
                        std::to_string(queue.values.size()) +
                        " queued, and the deadline passed" +
                        (direction == FeedDirection::kInfeed
                             ? " (no client transferred them to the infeed in time)"
                             : " (no execution wrote them to the outfeed in time)"));
    }
    Clock::time_point until = now + poll_;
    if (deadline) until = std::min(until, *deadline);
    changed_.wait_until(lock, until);
  }
  for (size_t i = 0; i < types.size(); ++i) {
    if (queue.values[i].type() != types[i]) {
      return InvalidArgument("the " + Where(direction, device, replica) + "'s value " +
                             std::to_string(i) + " in line is " +
                             queue.values[i].type().ToString() + ", " + types[i].ToString() +
                             " was asked for (nothing was taken)");
    }
  }
  std::vector<ir::Literal> out;
  out.reserve(types.size());
  for (size_t i = 0; i < types.size(); ++i) {
    bytes_ -= queue.values.front().bytes().size();
    out.push_back(std::move(queue.values.front()));
    queue.values.pop_front();
  }
  changed_.notify_all();
  return out;
}

size_t FeedQueues::size(FeedDirection direction, const std::string& device,
                        uint32_t replica) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = queues_.find(MakeKey(direction, device, replica));
  return it == queues_.end() ? 0 : it->second.values.size();
}

uint64_t FeedQueues::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

std::shared_ptr<FeedQueues> FeedRegistry::Acquire(const FeedOwner& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  std::weak_ptr<FeedQueues>& slot = owners_[owner];
  if (std::shared_ptr<FeedQueues> live = slot.lock()) return live;
  // The last holder's release drops the map entry too, unless a new
  // FeedQueues for the same owner took the slot meanwhile.
  std::shared_ptr<FeedQueues> queues(
      new FeedQueues(max_bytes_per_client_, poll_), [this, owner](FeedQueues* q) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          auto it = owners_.find(owner);
          if (it != owners_.end() && it->second.expired()) owners_.erase(it);
        }
        delete q;
      });
  slot = queues;
  return queues;
}

size_t FeedRegistry::clients() const {
  std::lock_guard<std::mutex> lock(mu_);
  return owners_.size();
}

void FeedQueues::AllowReplicas(const std::string& device, uint32_t count) {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t& allowed = replicas_.try_emplace(device, 1).first->second;
  allowed = std::max(allowed, count);
}

uint32_t FeedQueues::replicas(const std::string& device) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = replicas_.find(device);
  return it == replicas_.end() ? 1 : it->second;
}

}  // namespace jitd::daemon
