// Plain-data layout of a single-producer/single-consumer ring in shared
// memory (see ring.h for the logic that uses it).
//
// Everything here is trivially copyable, fixed-width and pointer-free: both
// processes map the same bytes at different addresses, and the consumer must
// be able to treat every byte as hostile. Shared words that are accessed
// concurrently are plain integers read and written through std::atomic_ref.
//
// A ring region is laid out as
//
//   RingHeader (2 cache lines: geometry, then the doorbell)
//   slot[0] .. slot[slot_count - 1], each `slot_stride` bytes, 64-aligned:
//     RingSlotHeader (16 bytes) followed by up to `slot_capacity` payload
//     bytes, so a message of up to 48 bytes travels in one cache line.
//
// Protocol (per-slot sequence numbers, no shared head/tail indices): slot i
// starts with sequence == i. The producer at position p (slot p % count)
// waits for sequence == p, writes the message, then stores sequence = p + 1
// (release). The consumer at position p waits for sequence == p + 1, copies
// the message out, then stores sequence = p + count (release), handing the
// slot back. Positions live in each process's private memory, never here.
#ifndef JITD_IPC_RING_DATA_H_
#define JITD_IPC_RING_DATA_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace jitd::ipc {

inline constexpr uint64_t kRingMagic = 0x31474e4952445449ull;  // "ITDRING1"
inline constexpr uint32_t kRingLayoutVersion = 1;
inline constexpr uint32_t kCacheLine = 64;

// What a slot carries.
enum class RingMessageKind : uint32_t {
  // The payload bytes are the message.
  kInline = 1,
  // The payload is a RingHeapRef: the message lives in the segment's heap.
  kHeapRef = 2,
};

struct alignas(kCacheLine) RingHeader {
  // Line 0: geometry, written once by the creator, validated on attach and
  // then copied into private memory (never re-read by a consumer).
  uint64_t magic;
  uint32_t layout_version;
  uint32_t slot_count;     // a power of two
  uint32_t slot_stride;    // bytes per slot, a multiple of kCacheLine
  uint32_t slot_capacity;  // payload bytes per slot
  uint64_t slots_offset;   // from the start of the ring region
  uint64_t region_size;    // bytes of the whole ring region
  uint8_t reserved0[24];
  // Line 1: the doorbell. `doorbell` is the futex word, bumped by the
  // producer when it finds `consumer_sleeping` set.
  alignas(kCacheLine) uint32_t doorbell;
  uint32_t consumer_sleeping;  // 0 or 1
  // The CPU the consumer last went to sleep on, plus one (0: not said): a
  // hint for the producer, whose wake-up the kernel usually runs there.
  uint32_t consumer_cpu;
  // A CPU the producer asks the consumer to leave, plus one (0: none): the
  // producer runs there, and the two would share it (Ring::AskConsumerToMoveOff).
  uint32_t consumer_move_off;
  uint8_t reserved1[48];
};
static_assert(std::is_trivially_copyable_v<RingHeader>);
static_assert(std::is_standard_layout_v<RingHeader>);
static_assert(sizeof(RingHeader) == 2 * kCacheLine);
static_assert(offsetof(RingHeader, slot_count) == 12);
static_assert(offsetof(RingHeader, slots_offset) == 24);
static_assert(offsetof(RingHeader, doorbell) == kCacheLine);
static_assert(offsetof(RingHeader, consumer_sleeping) == kCacheLine + 4);
static_assert(offsetof(RingHeader, consumer_cpu) == kCacheLine + 8);
static_assert(offsetof(RingHeader, consumer_move_off) == kCacheLine + 12);

struct RingSlotHeader {
  uint64_t sequence;  // see the protocol above
  uint32_t kind;      // RingMessageKind
  uint32_t length;    // payload bytes in this slot
};
static_assert(std::is_trivially_copyable_v<RingSlotHeader>);
static_assert(sizeof(RingSlotHeader) == 16);
static_assert(offsetof(RingSlotHeader, kind) == 8);
static_assert(offsetof(RingSlotHeader, length) == 12);

// The payload of a kHeapRef message: bytes [offset, offset + length) of the
// segment's heap region (offsets from the start of that region).
struct RingHeapRef {
  uint64_t offset;
  uint64_t length;
};
static_assert(std::is_trivially_copyable_v<RingHeapRef>);
static_assert(sizeof(RingHeapRef) == 16);

static_assert(std::atomic_ref<uint64_t>::is_always_lock_free);
static_assert(std::atomic_ref<uint32_t>::is_always_lock_free);

}  // namespace jitd::ipc

#endif  // JITD_IPC_RING_DATA_H_
