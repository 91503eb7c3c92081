// Plain-data layout of a per-client shared-memory segment (see segment.h).
//
// A segment is one memfd, mapped by the daemon and by one client:
//
//   offset 0            SegmentHeader (128 bytes; its page is reserved)
//   request_ring        ring region (ring_data.h), client -> daemon
//   reply_ring          ring region, daemon -> client
//   heap                Boost.Interprocess managed buffer; large messages and
//                       argument/result buffers live here, named by
//                       (offset, length) from the start of this region
//
// Trivially copyable, fixed-width, offsets only (never pointers). The header
// starts with a magic number and a layout version that Attach checks before
// it trusts anything else; any change to this layout bumps the version.
#ifndef JITD_IPC_SEGMENT_DATA_H_
#define JITD_IPC_SEGMENT_DATA_H_

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace jitd::ipc {

inline constexpr uint64_t kSegmentMagic = 0x31474553'44544a49ull;  // "IJTDSEG1"
inline constexpr uint32_t kSegmentLayoutVersion = 1;

// A byte range of the segment, from the segment's first byte.
struct SegmentRegion {
  uint64_t offset;
  uint64_t size;
};
static_assert(std::is_trivially_copyable_v<SegmentRegion>);
static_assert(sizeof(SegmentRegion) == 16);

struct alignas(64) SegmentHeader {
  uint64_t magic;            // kSegmentMagic
  uint32_t layout_version;   // kSegmentLayoutVersion
  uint32_t header_size;      // sizeof(SegmentHeader)
  uint64_t total_size;       // bytes of the whole memfd
  SegmentRegion request_ring;
  SegmentRegion reply_ring;
  SegmentRegion heap;
  uint8_t reserved[56];      // zero; room to grow within layout version 1
};
static_assert(std::is_trivially_copyable_v<SegmentHeader>);
static_assert(std::is_standard_layout_v<SegmentHeader>);
static_assert(sizeof(SegmentHeader) == 128);
static_assert(offsetof(SegmentHeader, layout_version) == 8);
static_assert(offsetof(SegmentHeader, header_size) == 12);
static_assert(offsetof(SegmentHeader, total_size) == 16);
static_assert(offsetof(SegmentHeader, request_ring) == 24);
static_assert(offsetof(SegmentHeader, reply_ring) == 40);
static_assert(offsetof(SegmentHeader, heap) == 56);

}  // namespace jitd::ipc

#endif  // JITD_IPC_SEGMENT_DATA_H_
