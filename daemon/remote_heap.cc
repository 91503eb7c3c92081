#include "daemon/remote_heap.h"

#include <string>

namespace jitd::daemon {

RemoteHeap::RemoteHeap(uint64_t size) : size_(size / kAlignment * kAlignment) {
  if (size_ > 0) free_.emplace(0, size_);
}

StatusOr<uint64_t> RemoteHeap::Allocate(uint64_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes > size_) {
    return ResourceExhausted("cannot allocate " + std::to_string(bytes) +
                             " bytes: the session's heap holds " + std::to_string(size_) +
                             " (jitd serve --segment-bytes)");
  }
  const uint64_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  // First fit: cheap, and a session holds few ranges.
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < rounded) continue;
    const uint64_t offset = it->first;
    const uint64_t rest = it->second - rounded;
    free_.erase(it);
    if (rest > 0) free_.emplace(offset + rounded, rest);
    used_.emplace(offset, rounded);
    allocated_bytes_ += rounded;
    return offset;
  }
  return ResourceExhausted("cannot allocate " + std::to_string(bytes) + " bytes: " +
                           std::to_string(size_ - allocated_bytes_) + " of the session's " +
                           std::to_string(size_) +
                           " heap bytes are free, in no range large enough; free some ranges");
}

Status RemoteHeap::Free(uint64_t offset) {
  auto it = used_.find(offset);
  if (it == used_.end()) {
    return NotFound("no heap range starts at offset " + std::to_string(offset));
  }
  uint64_t start = offset;
  uint64_t length = it->second;
  allocated_bytes_ -= length;
  used_.erase(it);
  // Coalesce with the free neighbours.
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == start + length) {
    length += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      length += prev->second;
      free_.erase(prev);
    }
  }
  free_.emplace(start, length);
  return Status::Ok();
}

Status RemoteHeap::CheckRange(uint64_t offset, uint64_t length) const {
  auto it = used_.upper_bound(offset);
  if (it != used_.begin()) {
    --it;
    if (offset >= it->first && length <= it->second &&
        offset - it->first <= it->second - length) {
      return Status::Ok();
    }
  }
  return InvalidArgument("heap range [" + std::to_string(offset) + ", +" +
                         std::to_string(length) +
                         ") does not lie inside one allocated range of this connection");
}

}  // namespace jitd::daemon
