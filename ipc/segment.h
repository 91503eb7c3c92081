// Segment: a per-client shared-memory segment — one sealed memfd holding a
// header, a request ring, a reply ring and a heap (layout: segment_data.h).
//
// The daemon Create()s a segment for each client and passes fd() over the
// control socket (fd_passing.h); the client Attach()es to the descriptor it
// received. Nothing is named in /dev/shm and nothing outlives the last
// descriptor and mapping, so a crash leaves nothing behind. The memfd is
// sealed against shrinking and growing, so neither side can make the other's
// mapping fault (SIGBUS) by truncating it.
//
// The heap is managed by Boost.Interprocess (managed_external_buffer over the
// heap region): Create formats it, Attach opens it. Its bookkeeping lives in
// the shared memory and can be corrupted by the client, so allocation is the
// client's business: the daemon must not call Allocate/Deallocate on a
// segment a client has attached to. The daemon reads and writes heap bytes
// only through HeapBytes/CopyFromHeap, which bounds-check (offset, length)
// against its private copy of the heap size.
//
// Thread safety: the rings follow Ring's rules (one pusher and one popper per
// ring); Allocate/Deallocate are safe from several threads and processes
// (Boost's allocator takes an interprocess mutex); the rest is immutable.
// Lifetime: the rings and every span handed out point into the mapping and
// die with the Segment (unmapped and closed in the destructor).
#ifndef JITD_IPC_SEGMENT_H_
#define JITD_IPC_SEGMENT_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "ipc/ring.h"
#include "ipc/segment_data.h"
#include "base/unique_fd.h"

namespace jitd::ipc {

// The segment's rings; the heap takes the rest of the requested size.
struct SegmentLayout {
  RingGeometry request_ring;
  RingGeometry reply_ring;
};

class Segment {
 public:
  // Smallest and largest segments Create accepts (the heap needs room for
  // Boost's bookkeeping; the upper bound only stops absurd requests —
  // per-client quotas are the daemon's).
  static constexpr uint64_t kMinHeapSize = 64 * 1024;
  static constexpr uint64_t kMaxSize = uint64_t{1} << 40;

  // Daemon side: creates, sizes (rounded up to whole pages), seals and maps a
  // memfd of `size` bytes and formats header, rings and heap.
  static StatusOr<std::unique_ptr<Segment>> Create(uint64_t size,
                                                   const SegmentLayout& layout = {});
  // Client side: maps the memfd `fd` (taking ownership) and checks the magic,
  // the layout version, the seals, and that every region lies inside the
  // mapping; INVALID_ARGUMENT naming the first problem otherwise.
  static StatusOr<std::unique_ptr<Segment>> Attach(UniqueFd fd);

  // Both sides map the first PrefaultBytes(size) bytes of a segment (the
  // request ring and the start of the reply ring with the daemon's layout)
  // pre-faulted, and the daemon allocates them at Create; the rest is
  // faulted in on first use (~2 us a page, once). Small, so that an idle
  // client costs little memory: the daemon holds one segment per session.
  static constexpr uint64_t kPrefaultLimit = uint64_t{512} << 10;
  static uint64_t PrefaultBytes(uint64_t segment_size);

  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // The memfd (owned by the Segment; dup it to keep it longer).
  int fd() const { return fd_.get(); }
  uint64_t size() const { return size_; }
  Ring& request_ring() { return request_ring_; }
  Ring& reply_ring() { return reply_ring_; }
  uint64_t heap_size() const { return heap_.size; }

  // --- Heap (client side; see the trust note above) ----------------------
  // Allocates `bytes` in the heap: RESOURCE_EXHAUSTED when it has no room.
  StatusOr<RingHeapRef> Allocate(uint64_t bytes);
  // Frees a block returned by Allocate (its offset; the length is ignored).
  Status Deallocate(RingHeapRef ref);
  // Free bytes left in the heap.
  uint64_t heap_free_bytes() const;

  // --- Heap bytes by (offset, length), bounds-checked ---------------------
  // A view of shared bytes: the peer can change them under you. Use for
  // writing results or for data that is re-validated after reading.
  StatusOr<std::span<uint8_t>> HeapBytes(RingHeapRef ref);
  // A private copy: what a consumer should verify and use.
  StatusOr<std::vector<uint8_t>> CopyFromHeap(RingHeapRef ref) const;

  // Pushes `bytes` on `ring` inline when they fit in a slot; otherwise
  // allocates a heap block, copies them there and pushes a heap reference,
  // returned in `*out_ref` (its owner — by the protocol — frees it later);
  // `*out_ref` is {0, 0} when the message went inline. RESOURCE_EXHAUSTED
  // when the ring is full or the heap has no room (nothing stays allocated).
  Status TryPushMessage(Ring& ring, std::span<const uint8_t> bytes, RingHeapRef* out_ref);

 private:
  struct HeapAllocator;
  Segment();

  UniqueFd fd_;
  uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  SegmentRegion heap_{};
  Ring request_ring_;
  Ring reply_ring_;
  std::unique_ptr<HeapAllocator> allocator_;
};

}  // namespace jitd::ipc

#endif  // JITD_IPC_SEGMENT_H_
