// Ring: a single-producer/single-consumer message ring in shared memory,
// with an adaptive doorbell (spin briefly, then sleep on a futex).
//
// A Ring is a view over a ring region laid out as in ring_data.h; it owns
// nothing in shared memory and must not outlive the mapping it points into
// (a Segment owns its two rings and their mapping). It keeps the producer's
// and the consumer's positions in private memory; a process uses one role
// per ring (the daemon consumes requests and produces replies, a client the
// reverse), and both sides must attach before the first message is pushed.
//
// Thread safety: at most one thread pushes and at most one thread pops at a
// time; the producer and consumer may be different threads or processes.
//
// Trust: the consumer treats the region as hostile. Geometry is validated
// once at Create/Attach and then only the private copy is used; every slot's
// kind and length are read once, bounds-checked, and the payload is copied
// out before the slot is handed back. A corrupt slot is consumed and reported
// as INVALID_ARGUMENT; it never makes the consumer read out of bounds.
//
// Wake-ups (see ../shared/FLOORS.md): a blocking Pop first spins on the slot's
// sequence number for `WaitOptions::spin` (default 5 µs, about the cost of a
// futex wake-up on this machine — a shorter spin buys nothing), then sets the
// ring's "consumer sleeping" flag and FUTEX_WAITs on the doorbell word. The
// producer issues FUTEX_WAKE only when that flag is set, so a busy consumer
// costs the producer no system call. Before it sleeps, the consumer also
// writes the CPU it sleeps on into the header (SleepingConsumerCpu): the
// kernel usually wakes it there, which a producer that decides where it
// runs itself (the daemon's dispatcher) wants to know. The producer may in
// turn ask the consumer to move off the producer's CPU
// (AskConsumerToMoveOff); the consumer reads the request when it takes a
// message (TakeMoveOffRequest) and decides itself.
//
// A consumer that serves many rings from a few threads (the daemon's
// dispatcher) does not sleep in Pop: it TryPops, then ArmSleep()s the ring
// and waits elsewhere (epoll). Its producer then wakes it through a wake
// hook (set_wake_hook: the client writes a byte on its connection socket)
// instead of the futex. Either way the producer takes the "sleeping" flag
// back (one wake per sleep) and rings only when it was set.
#ifndef JITD_IPC_RING_H_
#define JITD_IPC_RING_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/status.h"
#include "ipc/ring_data.h"

namespace jitd::ipc {

// The shape of a ring: how many slots, how many payload bytes each.
struct RingGeometry {
  uint32_t slot_count = 256;     // a power of two, 2 .. 2^20
  uint32_t slot_capacity = 240;  // 16 .. 2^20; 240 gives a 256-byte slot
};

// Bytes a ring region of `geometry` needs (a multiple of 64), or
// INVALID_ARGUMENT for a geometry out of range.
StatusOr<uint64_t> RingRegionSize(const RingGeometry& geometry);

// How a blocking call waits.
struct WaitOptions {
  // How long to spin (PAUSE + polling the slot) before sleeping; 0 sleeps at
  // once.
  std::chrono::nanoseconds spin = std::chrono::microseconds(5);
  // Past this much spinning, each spin step also calls sched_yield(), so a
  // peer that is runnable on this CPU (a daemon thread just woken, on a
  // loaded machine) gets it instead of waiting for a time slice to end;
  // none = PAUSE only for the whole spin.
  std::optional<std::chrono::nanoseconds> yield_after;
  // Give up with DEADLINE_EXCEEDED at this time; none = wait forever.
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

// A message popped from a ring: the consumer's private copy.
struct RingMessage {
  RingMessageKind kind = RingMessageKind::kInline;
  // kInline: the payload (its capacity is reused across pops).
  std::vector<uint8_t> bytes;
  // kHeapRef: a reference into the heap region, already checked to lie
  // inside a heap of the size the ring was given. The referenced bytes are
  // still shared: copy them out (Segment::CopyFromHeap) before use.
  RingHeapRef heap{};
};

class Ring {
 public:
  // Formats `region` (64-byte aligned, `region_size` bytes, at least
  // RingRegionSize(geometry)) as an empty ring. `heap_size` bounds the heap
  // references this side accepts when it pops.
  static StatusOr<Ring> Create(void* region, uint64_t region_size,
                               const RingGeometry& geometry, uint64_t heap_size);
  // Validates the ring already formatted in `region` (magic, layout version,
  // geometry that fits in `region_size`) and attaches to it.
  static StatusOr<Ring> Attach(void* region, uint64_t region_size,
                               uint64_t heap_size);

  Ring() = default;
  Ring(Ring&&) = default;
  Ring& operator=(Ring&&) = default;
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  uint32_t slot_count() const { return slot_count_; }
  // The largest inline message.
  uint32_t slot_capacity() const { return slot_capacity_; }

  // --- Producer side ---------------------------------------------------
  // Called instead of FUTEX_WAKE when a push finds the consumer asleep (see
  // the file comment); `context` is passed through. Null = the futex.
  using WakeHook = void (*)(void* context);
  // Whether the consumer sleeps (or is about to): its "sleeping" flag is
  // set, so the next push wakes it. A hint: the consumer may change it at
  // any moment.
  bool ConsumerSleeping() const;
  // The CPU the consumer sleeps on, while it sleeps in Pop (it says so
  // before it sleeps); -1 while it does not, or did not say. A hint from
  // the other side (any value in range may come back), for where the kernel
  // will run the consumer when the next push wakes it: usually on that CPU.
  int SleepingConsumerCpu() const;
  // Producer: asks the consumer to move off `cpu` (where the producer runs):
  // the consumer's next TakeMoveOffRequest returns it. Another request
  // replaces one not yet taken.
  void AskConsumerToMoveOff(int cpu);
  // Consumer: the CPU the producer asked it to leave (and the request is
  // then gone), or -1. A hint from the other side: any value in range may
  // come back.
  int TakeMoveOffRequest();
  void set_wake_hook(WakeHook hook, void* context) {
    wake_hook_ = hook;
    wake_context_ = context;
  }

  // Pushes `bytes` inline. RESOURCE_EXHAUSTED ("ring full") when no slot is
  // free right now; INVALID_ARGUMENT when larger than slot_capacity() (send
  // such messages through the heap: Segment::TryPushLarge).
  Status TryPush(std::span<const uint8_t> bytes);
  // Pushes a message that names heap bytes by (offset, length). The bytes
  // must stay valid until the consumer says it is done with them (that is
  // the protocol's business, not the ring's).
  Status TryPushHeapRef(RingHeapRef ref);
  // TryPush, waiting while the ring is full: spins for options.spin, then
  // polls with short sleeps (the consumer rings no doorbell for the
  // producer). DEADLINE_EXCEEDED at the deadline.
  Status Push(std::span<const uint8_t> bytes, const WaitOptions& options = {});

  // --- Consumer side ---------------------------------------------------
  // Pops the next message into `*out`: true if there was one, false if the
  // ring is empty; INVALID_ARGUMENT for a corrupt slot (which is consumed).
  StatusOr<bool> TryPop(RingMessage* out);
  // Pops the next message, waiting as `options` say: OK, DEADLINE_EXCEEDED,
  // or INVALID_ARGUMENT for a corrupt slot.
  Status Pop(RingMessage* out, const WaitOptions& options = {});
  // Whether a message is waiting (one acquire load).
  bool HasMessage() const { return header_ != nullptr && NextReady(); }
  // Tells the producer that the consumer is going to sleep elsewhere: sets
  // the "sleeping" flag unless a message is already waiting. True = armed
  // (the next push wakes the consumer); false = a message is there, pop it.
  bool ArmSleep();

  // Counters of this process's view (not shared): how often Pop went to
  // sleep on the futex and how often a push issued FUTEX_WAKE.
  uint64_t futex_waits() const { return futex_waits_; }
  uint64_t futex_wakes() const { return futex_wakes_; }

 private:
  Ring(RingHeader* header, uint8_t* slots, uint32_t slot_count,
       uint32_t slot_stride, uint32_t slot_capacity, uint64_t heap_size);

  uint8_t* SlotAt(uint64_t position) const {
    return slots_ + (position & (slot_count_ - 1)) * uint64_t{slot_stride_};
  }
  bool NextReady() const;
  Status TryPushRaw(RingMessageKind kind, const void* data, uint32_t length);
  void WakeConsumer();

  RingHeader* header_ = nullptr;
  uint8_t* slots_ = nullptr;
  uint32_t slot_count_ = 0;
  uint32_t slot_stride_ = 0;
  uint32_t slot_capacity_ = 0;
  uint64_t heap_size_ = 0;
  uint64_t producer_position_ = 0;
  uint64_t consumer_position_ = 0;
  uint64_t futex_waits_ = 0;
  uint64_t futex_wakes_ = 0;
  WakeHook wake_hook_ = nullptr;
  void* wake_context_ = nullptr;
};

}  // namespace jitd::ipc

#endif  // JITD_IPC_RING_H_
