// RemoteHeap: the allocator of a remote session's heap (docs/REMOTE.md,
// "The heap, remotely").
//
// A local client allocates in its segment's heap itself (Boost's allocator,
// bookkeeping in shared memory). A remote client has no mapping, so the
// daemon's bridge allocates for it — and keeps the bookkeeping here, in the
// daemon's private memory, not in the heap: the heap's bytes are the
// client's data (DATA frames, results written by executes), and nothing the
// client writes there can corrupt the allocator. Offsets are relative to the
// heap's start, as in wire::HeapRef. (The segment's Boost allocator is never
// used for a remote session's segment.)
//
// Thread safety: none; the connection that owns it uses it from one thread
// at a time. Lifetime: plain value.
#ifndef JITD_DAEMON_REMOTE_HEAP_H_
#define JITD_DAEMON_REMOTE_HEAP_H_

#include <cstdint>
#include <map>

#include "base/status.h"

namespace jitd::daemon {

class RemoteHeap {
 public:
  static constexpr uint64_t kAlignment = 64;

  explicit RemoteHeap(uint64_t size);

  // A range of at least `bytes` (rounded up to kAlignment; 0 counts as 1):
  // its offset. RESOURCE_EXHAUSTED naming the sizes when no free range is
  // large enough.
  StatusOr<uint64_t> Allocate(uint64_t bytes);
  // Frees the range starting at `offset`: NOT_FOUND when none does.
  Status Free(uint64_t offset);
  // OK when [offset, offset + length) lies inside one live allocation;
  // INVALID_ARGUMENT naming the range otherwise.
  Status CheckRange(uint64_t offset, uint64_t length) const;

  uint64_t size() const { return size_; }
  uint64_t allocated_bytes() const { return allocated_bytes_; }
  size_t num_allocations() const { return used_.size(); }

 private:
  uint64_t size_;
  uint64_t allocated_bytes_ = 0;
  std::map<uint64_t, uint64_t> free_;  // offset -> length, disjoint, coalesced
  std::map<uint64_t, uint64_t> used_;  // offset -> (rounded) length
};

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_REMOTE_HEAP_H_
