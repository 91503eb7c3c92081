#include "ipc/ring.h"

#include <sched.h>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "base/cpu_relax.h"

namespace jitd::ipc {
namespace {

constexpr uint32_t kMaxSlotCount = 1u << 20;
constexpr uint32_t kMaxSlotCapacity = 1u << 20;
constexpr uint32_t kMinSlotCapacity = sizeof(RingHeapRef);

template <typename T>
std::atomic_ref<T> Atomic(T& value) {
  return std::atomic_ref<T>(value);
}

uint64_t RoundUp(uint64_t value, uint64_t to) { return (value + to - 1) / to * to; }

Status CheckGeometry(const RingGeometry& g) {
  // Two slots at least: with one, "published at p" (sequence p + 1) would
  // read as "free for p + 1" to the producer.
  if (g.slot_count < 2 || g.slot_count > kMaxSlotCount ||
      (g.slot_count & (g.slot_count - 1)) != 0) {
    return InvalidArgument("ring slot count " + std::to_string(g.slot_count) +
                           " is not a power of two in [2, 2^20]");
  }
  if (g.slot_capacity < kMinSlotCapacity || g.slot_capacity > kMaxSlotCapacity) {
    return InvalidArgument("ring slot capacity " + std::to_string(g.slot_capacity) +
                           " is outside [16, 2^20]");
  }
  return Status::Ok();
}

uint32_t SlotStride(uint32_t capacity) {
  return static_cast<uint32_t>(RoundUp(sizeof(RingSlotHeader) + uint64_t{capacity}, kCacheLine));
}

// FUTEX_WAIT on a word shared between processes (no FUTEX_PRIVATE_FLAG).
// Returns 0 or -1 with errno (EAGAIN: value changed, ETIMEDOUT, EINTR).
long FutexWait(uint32_t* word, uint32_t expected, const timespec* timeout) {
  return syscall(SYS_futex, word, FUTEX_WAIT, expected, timeout, nullptr, 0);
}
long FutexWake(uint32_t* word, int count) {
  return syscall(SYS_futex, word, FUTEX_WAKE, count, nullptr, nullptr, 0);
}

Status DeadlineExceeded(std::string message) {
  return Status(StatusCode::kDeadlineExceeded, std::move(message));
}

}  // namespace

StatusOr<uint64_t> RingRegionSize(const RingGeometry& geometry) {
  JITD_RETURN_IF_ERROR(CheckGeometry(geometry));
  return uint64_t{sizeof(RingHeader)} +
         uint64_t{geometry.slot_count} * SlotStride(geometry.slot_capacity);
}

Ring::Ring(RingHeader* header, uint8_t* slots, uint32_t slot_count,
           uint32_t slot_stride, uint32_t slot_capacity, uint64_t heap_size)
    : header_(header),
      slots_(slots),
      slot_count_(slot_count),
      slot_stride_(slot_stride),
      slot_capacity_(slot_capacity),
      heap_size_(heap_size) {}

StatusOr<Ring> Ring::Create(void* region, uint64_t region_size,
                            const RingGeometry& geometry, uint64_t heap_size) {
  JITD_ASSIGN_OR_RETURN(uint64_t needed, RingRegionSize(geometry));
  if (region == nullptr || reinterpret_cast<uintptr_t>(region) % kCacheLine != 0) {
    return InvalidArgument("ring region is not 64-byte aligned");
  }
  if (region_size < needed) {
    return InvalidArgument("ring region of " + std::to_string(region_size) +
                           " bytes is smaller than the " + std::to_string(needed) +
                           " bytes its geometry needs");
  }
  auto* header = static_cast<RingHeader*>(region);
  std::memset(static_cast<void*>(header), 0, sizeof(RingHeader));
  header->layout_version = kRingLayoutVersion;
  header->slot_count = geometry.slot_count;
  header->slot_stride = SlotStride(geometry.slot_capacity);
  header->slot_capacity = geometry.slot_capacity;
  header->slots_offset = sizeof(RingHeader);
  header->region_size = needed;
  auto* slots = static_cast<uint8_t*>(region) + sizeof(RingHeader);
  for (uint32_t i = 0; i < geometry.slot_count; ++i) {
    auto* slot = reinterpret_cast<RingSlotHeader*>(slots + uint64_t{i} * header->slot_stride);
    slot->kind = 0;
    slot->length = 0;
    Atomic(slot->sequence).store(i, std::memory_order_relaxed);
  }
  // The magic goes last: a ring is valid only once fully formatted.
  Atomic(header->magic).store(kRingMagic, std::memory_order_release);
  return Ring(header, slots, geometry.slot_count, header->slot_stride,
              geometry.slot_capacity, heap_size);
}

StatusOr<Ring> Ring::Attach(void* region, uint64_t region_size, uint64_t heap_size) {
  if (region == nullptr || reinterpret_cast<uintptr_t>(region) % kCacheLine != 0) {
    return InvalidArgument("ring region is not 64-byte aligned");
  }
  if (region_size < sizeof(RingHeader)) {
    return InvalidArgument("ring region of " + std::to_string(region_size) +
                           " bytes cannot hold a ring header");
  }
  auto* header = static_cast<RingHeader*>(region);
  // One private copy of the geometry; the shared header is not read again.
  RingHeader copy;
  copy.magic = Atomic(header->magic).load(std::memory_order_acquire);
  std::memcpy(&copy.layout_version, &header->layout_version,
              offsetof(RingHeader, reserved0) - offsetof(RingHeader, layout_version));
  if (copy.magic != kRingMagic) {
    return InvalidArgument("ring region has a bad magic number (not a jitd ring)");
  }
  if (copy.layout_version != kRingLayoutVersion) {
    return InvalidArgument("ring layout version " + std::to_string(copy.layout_version) +
                           " is not the supported version " +
                           std::to_string(kRingLayoutVersion));
  }
  RingGeometry geometry{copy.slot_count, copy.slot_capacity};
  JITD_ASSIGN_OR_RETURN(uint64_t needed, RingRegionSize(geometry));
  if (copy.slot_stride != SlotStride(copy.slot_capacity) ||
      copy.slots_offset != sizeof(RingHeader) || copy.region_size != needed) {
    return InvalidArgument("ring header geometry is inconsistent");
  }
  if (needed > region_size) {
    return InvalidArgument("ring needs " + std::to_string(needed) +
                           " bytes but its region has only " + std::to_string(region_size));
  }
  return Ring(header, static_cast<uint8_t*>(region) + sizeof(RingHeader),
              copy.slot_count, copy.slot_stride, copy.slot_capacity, heap_size);
}

// --- Producer --------------------------------------------------------------

Status Ring::TryPushRaw(RingMessageKind kind, const void* data, uint32_t length) {
  if (header_ == nullptr) return Status(StatusCode::kFailedPrecondition, "ring not attached");
  auto* slot = reinterpret_cast<RingSlotHeader*>(SlotAt(producer_position_));
  if (Atomic(slot->sequence).load(std::memory_order_acquire) != producer_position_) {
    return ResourceExhausted("ring full");
  }
  Atomic(slot->kind).store(static_cast<uint32_t>(kind), std::memory_order_relaxed);
  Atomic(slot->length).store(length, std::memory_order_relaxed);
  if (length > 0) std::memcpy(reinterpret_cast<uint8_t*>(slot) + sizeof(RingSlotHeader), data, length);
  Atomic(slot->sequence).store(producer_position_ + 1, std::memory_order_release);
  ++producer_position_;
  WakeConsumer();
  return Status::Ok();
}

void Ring::WakeConsumer() {
  // Pairs with the fence in Pop: either the consumer sees the new sequence
  // before it sleeps, or we see its sleeping flag here.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  uint32_t& sleeping = header_->consumer_sleeping;
  if (Atomic(sleeping).load(std::memory_order_relaxed) == 0) return;
  // Take the flag back: one wake per sleep, however many pushes follow.
  if (Atomic(sleeping).exchange(0, std::memory_order_relaxed) == 0) return;
  ++futex_wakes_;
  if (wake_hook_ != nullptr) {
    wake_hook_(wake_context_);
    return;
  }
  Atomic(header_->doorbell).fetch_add(1, std::memory_order_release);
  FutexWake(&header_->doorbell, 1);
}

bool Ring::ConsumerSleeping() const {
  return header_ != nullptr &&
         Atomic(header_->consumer_sleeping).load(std::memory_order_relaxed) != 0;
}

int Ring::SleepingConsumerCpu() const {
  if (!ConsumerSleeping()) return -1;
  const uint32_t cpu = Atomic(header_->consumer_cpu).load(std::memory_order_relaxed);
  return cpu == 0 || cpu > uint32_t{CPU_SETSIZE} ? -1 : static_cast<int>(cpu - 1);
}

void Ring::AskConsumerToMoveOff(int cpu) {
  if (header_ == nullptr || cpu < 0 || cpu >= CPU_SETSIZE) return;
  Atomic(header_->consumer_move_off).store(static_cast<uint32_t>(cpu) + 1,
                                           std::memory_order_relaxed);
}

int Ring::TakeMoveOffRequest() {
  if (header_ == nullptr) return -1;
  uint32_t& word = header_->consumer_move_off;
  // Read first: the line stays shared (no write) while nothing is asked.
  if (Atomic(word).load(std::memory_order_relaxed) == 0) return -1;
  const uint32_t cpu = Atomic(word).exchange(0, std::memory_order_relaxed);
  return cpu == 0 || cpu > uint32_t{CPU_SETSIZE} ? -1 : static_cast<int>(cpu - 1);
}

bool Ring::ArmSleep() {
  if (header_ == nullptr) return false;
  uint32_t& sleeping = header_->consumer_sleeping;
  Atomic(sleeping).store(1, std::memory_order_relaxed);
  // Pairs with the fence in WakeConsumer (as in Pop's phase 2).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!NextReady()) return true;
  Atomic(sleeping).store(0, std::memory_order_relaxed);
  return false;
}

Status Ring::TryPush(std::span<const uint8_t> bytes) {
  if (bytes.size() > slot_capacity_) {
    return InvalidArgument("message of " + std::to_string(bytes.size()) +
                           " bytes exceeds the ring slot capacity of " +
                           std::to_string(slot_capacity_) + "; send it through the heap");
  }
  return TryPushRaw(RingMessageKind::kInline, bytes.data(), static_cast<uint32_t>(bytes.size()));
}

Status Ring::TryPushHeapRef(RingHeapRef ref) {
  return TryPushRaw(RingMessageKind::kHeapRef, &ref, sizeof(ref));
}

Status Ring::Push(std::span<const uint8_t> bytes, const WaitOptions& options) {
  const auto spin_end = std::chrono::steady_clock::now() + options.spin;
  for (;;) {
    Status status = TryPush(bytes);
    if (status.code() != StatusCode::kResourceExhausted) return status;
    const auto now = std::chrono::steady_clock::now();
    if (options.deadline && now >= *options.deadline) {
      return DeadlineExceeded("ring stayed full until the deadline");
    }
    if (now < spin_end) {
      for (int i = 0; i < 16; ++i) CpuRelax();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

// --- Consumer --------------------------------------------------------------

bool Ring::NextReady() const {
  auto* slot = reinterpret_cast<RingSlotHeader*>(SlotAt(consumer_position_));
  return Atomic(slot->sequence).load(std::memory_order_acquire) == consumer_position_ + 1;
}

StatusOr<bool> Ring::TryPop(RingMessage* out) {
  if (header_ == nullptr) return Status(StatusCode::kFailedPrecondition, "ring not attached");
  uint8_t* slot_bytes = SlotAt(consumer_position_);
  auto* slot = reinterpret_cast<RingSlotHeader*>(slot_bytes);
  if (Atomic(slot->sequence).load(std::memory_order_acquire) != consumer_position_ + 1) {
    return false;
  }
  // Read kind and length exactly once; everything below uses these copies.
  const uint32_t kind = Atomic(slot->kind).load(std::memory_order_relaxed);
  const uint32_t length = Atomic(slot->length).load(std::memory_order_relaxed);
  const uint8_t* payload = slot_bytes + sizeof(RingSlotHeader);
  Status status;
  if (length > slot_capacity_) {
    status = InvalidArgument("ring slot " + std::to_string(consumer_position_) +
                             " claims " + std::to_string(length) +
                             " bytes, more than the slot capacity of " +
                             std::to_string(slot_capacity_));
  } else if (kind == static_cast<uint32_t>(RingMessageKind::kInline)) {
    out->kind = RingMessageKind::kInline;
    out->bytes.assign(payload, payload + length);
    out->heap = {};
  } else if (kind == static_cast<uint32_t>(RingMessageKind::kHeapRef)) {
    RingHeapRef ref;
    if (length != sizeof(ref)) {
      status = InvalidArgument("ring slot " + std::to_string(consumer_position_) +
                               ": heap reference of " + std::to_string(length) +
                               " bytes, expected 16");
    } else {
      std::memcpy(&ref, payload, sizeof(ref));
      if (ref.offset > heap_size_ || ref.length > heap_size_ - ref.offset) {
        status = InvalidArgument("ring slot " + std::to_string(consumer_position_) +
                                 ": heap reference [" + std::to_string(ref.offset) + ", +" +
                                 std::to_string(ref.length) + ") lies outside the heap of " +
                                 std::to_string(heap_size_) + " bytes");
      } else {
        out->kind = RingMessageKind::kHeapRef;
        out->bytes.clear();
        out->heap = ref;
      }
    }
  } else {
    status = InvalidArgument("ring slot " + std::to_string(consumer_position_) +
                             ": unknown message kind " + std::to_string(kind));
  }
  // Hand the slot back (corrupt or not) so the ring keeps moving.
  Atomic(slot->sequence).store(consumer_position_ + slot_count_, std::memory_order_release);
  ++consumer_position_;
  if (!status.ok()) return status;
  return true;
}

Status Ring::Pop(RingMessage* out, const WaitOptions& options) {
  using Clock = std::chrono::steady_clock;
  JITD_ASSIGN_OR_RETURN(bool popped, TryPop(out));
  if (popped) return Status::Ok();

  // Phase 1: spin on the next slot's sequence number.
  if (options.spin.count() > 0) {
    const auto spin_start = Clock::now();
    const auto spin_end = spin_start + options.spin;
    const auto yield_from =
        options.yield_after ? spin_start + *options.yield_after : Clock::time_point::max();
    bool yielding = false;
    for (uint32_t i = 1;; ++i) {
      if (NextReady()) {
        JITD_ASSIGN_OR_RETURN(popped, TryPop(out));
        if (popped) return Status::Ok();
      }
      if (yielding) {
        ::sched_yield();
      } else {
        CpuRelax();
      }
      if (yielding || i % 16 == 0) {
        const auto now = Clock::now();
        if (now >= spin_end) break;
        yielding = now >= yield_from;
        if (options.deadline && now >= *options.deadline) {
          return DeadlineExceeded("no message on the ring before the deadline");
        }
      }
    }
  }

  // Phase 2: sleep on the doorbell until the producer rings it (saying on
  // which CPU: SleepingConsumerCpu).
  uint32_t& sleeping = header_->consumer_sleeping;
  const int cpu = ::sched_getcpu();
  Atomic(header_->consumer_cpu).store(cpu >= 0 ? static_cast<uint32_t>(cpu) + 1 : 0,
                                      std::memory_order_relaxed);
  for (;;) {
    const uint32_t bell = Atomic(header_->doorbell).load(std::memory_order_acquire);
    Atomic(sleeping).store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!NextReady()) {
      timespec timeout{};
      const timespec* timeout_ptr = nullptr;
      if (options.deadline) {
        const auto left = *options.deadline - Clock::now();
        if (left <= Clock::duration::zero()) {
          Atomic(sleeping).store(0, std::memory_order_relaxed);
          return DeadlineExceeded("no message on the ring before the deadline");
        }
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
        timeout.tv_sec = ns / 1'000'000'000;
        timeout.tv_nsec = ns % 1'000'000'000;
        timeout_ptr = &timeout;
      }
      ++futex_waits_;
      // EAGAIN (rung meanwhile), EINTR and ETIMEDOUT all loop back to check.
      FutexWait(&header_->doorbell, bell, timeout_ptr);
    }
    Atomic(sleeping).store(0, std::memory_order_relaxed);
    JITD_ASSIGN_OR_RETURN(popped, TryPop(out));
    if (popped) return Status::Ok();
  }
}

}  // namespace jitd::ipc
