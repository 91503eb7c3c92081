#include "ipc/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/interprocess/managed_external_buffer.hpp>
#include <algorithm>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <string>

#include "ipc/internal/errno_status.h"

namespace jitd::ipc {
namespace {

namespace bip = boost::interprocess;

constexpr uint64_t kPage = 4096;
constexpr uint64_t kRegionAlignment = 64;
constexpr unsigned kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

uint64_t RoundUp(uint64_t value, uint64_t to) { return (value + to - 1) / to * to; }

std::string RegionText(const char* name, const SegmentRegion& r) {
  return std::string(name) + " [" + std::to_string(r.offset) + ", +" + std::to_string(r.size) + ")";
}

bool Overlap(const SegmentRegion& a, const SegmentRegion& b) {
  return a.offset < b.offset + b.size && b.offset < a.offset + a.size;
}

// Owns an mmap'ed range until released.
struct Mapping {
  Mapping() = default;
  Mapping(Mapping&& other) noexcept : address(other.address), size(other.size) {
    other.address = MAP_FAILED;
  }
  Mapping& operator=(Mapping&&) = delete;
  void* address = MAP_FAILED;
  uint64_t size = 0;
  ~Mapping() {
    if (address != MAP_FAILED) ::munmap(address, size);
  }
  uint8_t* Release() {
    auto* p = static_cast<uint8_t*>(address);
    address = MAP_FAILED;
    return p;
  }
};

// Maps `size` bytes of `fd` shared, with the first PrefaultBytes(size)
// already in the page tables: a first touch of a fresh page costs ~2 us here
// (FLOORS.md), so the rings and the start of the heap (where the allocator
// places buffers first) must not pay it on the request path.
StatusOr<Mapping> MapPrefaulted(int fd, uint64_t size) {
  Mapping mapping;
  mapping.address = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapping.address == MAP_FAILED) return internal::ErrnoToStatus("mmap of segment", errno);
  mapping.size = size;
  const uint64_t prefault = Segment::PrefaultBytes(size);
  if (prefault > 0 && ::mmap(mapping.address, prefault, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, 0) == MAP_FAILED) {
    return internal::ErrnoToStatus("mmap (populate) of segment", errno);
  }
  return mapping;
}

}  // namespace

uint64_t Segment::PrefaultBytes(uint64_t segment_size) {
  return std::min(segment_size, kPrefaultLimit);
}

struct Segment::HeapAllocator {
  std::optional<bip::managed_external_buffer> buffer;
};

Segment::Segment() : allocator_(std::make_unique<HeapAllocator>()) {}

Segment::~Segment() {
  allocator_.reset();  // touches nothing in the mapping
  if (base_ != nullptr) ::munmap(base_, size_);
}

StatusOr<std::unique_ptr<Segment>> Segment::Create(uint64_t size, const SegmentLayout& layout) {
  JITD_ASSIGN_OR_RETURN(uint64_t request_bytes, RingRegionSize(layout.request_ring));
  JITD_ASSIGN_OR_RETURN(uint64_t reply_bytes, RingRegionSize(layout.reply_ring));
  SegmentHeader header{};
  header.magic = kSegmentMagic;
  header.layout_version = kSegmentLayoutVersion;
  header.header_size = sizeof(SegmentHeader);
  header.request_ring = {kPage, RoundUp(request_bytes, kPage)};
  header.reply_ring = {header.request_ring.offset + header.request_ring.size,
                       RoundUp(reply_bytes, kPage)};
  header.heap.offset = header.reply_ring.offset + header.reply_ring.size;
  if (size > kMaxSize) {
    return InvalidArgument("segment size " + std::to_string(size) + " exceeds the limit of " +
                           std::to_string(kMaxSize) + " bytes");
  }
  const uint64_t total = RoundUp(size, kPage);
  if (total < header.heap.offset + kMinHeapSize) {
    return InvalidArgument("segment size " + std::to_string(size) + " is too small: its rings take " +
                           std::to_string(header.heap.offset) + " bytes and the heap needs at least " +
                           std::to_string(kMinHeapSize));
  }
  header.total_size = total;
  header.heap.size = total - header.heap.offset;

  UniqueFd fd(::memfd_create("jitd-segment", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return internal::ErrnoToStatus("memfd_create", errno);
  JITD_RETURN_IF_ERRNO(::ftruncate(fd.get(), static_cast<off_t>(total)), "ftruncate of segment memfd");
  JITD_RETURN_IF_ERRNO(::fcntl(fd.get(), F_ADD_SEALS, kSeals), "sealing segment memfd");
  // Allocate (and zero) the pre-faulted part now, so a machine out of
  // shared memory says so here instead of SIGBUS at a first touch later.
  if (const int err = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(PrefaultBytes(total)));
      err != 0) {
    return ResourceExhausted("cannot reserve " + std::to_string(PrefaultBytes(total)) +
                             " bytes of shared memory for a client segment: " +
                             std::strerror(err));
  }
  JITD_ASSIGN_OR_RETURN(Mapping mapping, MapPrefaulted(fd.get(), total));
  auto* base = static_cast<uint8_t*>(mapping.address);

  std::unique_ptr<Segment> segment(new Segment());
  JITD_ASSIGN_OR_RETURN(segment->request_ring_,
                        Ring::Create(base + header.request_ring.offset, header.request_ring.size,
                                     layout.request_ring, header.heap.size));
  JITD_ASSIGN_OR_RETURN(segment->reply_ring_,
                        Ring::Create(base + header.reply_ring.offset, header.reply_ring.size,
                                     layout.reply_ring, header.heap.size));
  try {
    segment->allocator_->buffer.emplace(bip::create_only, base + header.heap.offset,
                                        header.heap.size);
  } catch (const std::exception& e) {
    return Internal(std::string("formatting the segment heap failed: ") + e.what());
  }
  std::memcpy(base, &header, sizeof(header));
  segment->fd_ = std::move(fd);
  segment->base_ = mapping.Release();
  segment->size_ = total;
  segment->heap_ = header.heap;
  return segment;
}

StatusOr<std::unique_ptr<Segment>> Segment::Attach(UniqueFd fd) {
  if (!fd.valid()) return InvalidArgument("segment attach: no file descriptor");
  struct stat st;
  JITD_RETURN_IF_ERRNO(::fstat(fd.get(), &st), "fstat of segment fd");
  if (!S_ISREG(st.st_mode)) return InvalidArgument("segment fd is not a memfd (not a regular file)");
  const int seals = ::fcntl(fd.get(), F_GET_SEALS);
  if (seals < 0) return InvalidArgument("segment fd is not a sealable memfd");
  if ((seals & F_SEAL_SHRINK) == 0) {
    return InvalidArgument("segment memfd is not sealed against shrinking; refusing to map it");
  }
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < sizeof(SegmentHeader)) {
    return InvalidArgument("segment is truncated: " + std::to_string(file_size) +
                           " bytes cannot hold its 128-byte header");
  }
  JITD_ASSIGN_OR_RETURN(Mapping mapping, MapPrefaulted(fd.get(), file_size));
  auto* base = static_cast<uint8_t*>(mapping.address);

  // Validate a private copy of the header, never the shared one.
  SegmentHeader header;
  std::memcpy(&header, base, sizeof(header));
  if (header.magic != kSegmentMagic) {
    return InvalidArgument("segment has a bad magic number (not a jitd segment)");
  }
  if (header.layout_version != kSegmentLayoutVersion) {
    return InvalidArgument("segment layout version " + std::to_string(header.layout_version) +
                           " is not the supported version " +
                           std::to_string(kSegmentLayoutVersion));
  }
  if (header.header_size != sizeof(SegmentHeader)) {
    return InvalidArgument("segment header size " + std::to_string(header.header_size) +
                           " is not " + std::to_string(sizeof(SegmentHeader)));
  }
  if (header.total_size != file_size) {
    return InvalidArgument("segment size mismatch: the header says " +
                           std::to_string(header.total_size) + " bytes, the memfd has " +
                           std::to_string(file_size) +
                           (header.total_size > file_size ? " (truncated)" : ""));
  }
  const std::pair<const char*, SegmentRegion> regions[] = {
      {"request ring", header.request_ring},
      {"reply ring", header.reply_ring},
      {"heap", header.heap},
  };
  for (const auto& [name, r] : regions) {
    if (r.offset < sizeof(SegmentHeader) || r.offset % kRegionAlignment != 0 || r.size == 0 ||
        r.offset > file_size || r.size > file_size - r.offset) {
      return InvalidArgument("segment " + RegionText(name, r) +
                             " is misaligned, empty or outside the " + std::to_string(file_size) +
                             "-byte segment");
    }
  }
  for (int i = 0; i < 3; ++i) {
    for (int j = i + 1; j < 3; ++j) {
      if (Overlap(regions[i].second, regions[j].second)) {
        return InvalidArgument("segment " + RegionText(regions[i].first, regions[i].second) +
                               " overlaps " + RegionText(regions[j].first, regions[j].second));
      }
    }
  }

  std::unique_ptr<Segment> segment(new Segment());
  auto request = Ring::Attach(base + header.request_ring.offset, header.request_ring.size,
                              header.heap.size);
  if (!request.ok()) return InvalidArgument("segment request ring: " + request.status().message());
  auto reply = Ring::Attach(base + header.reply_ring.offset, header.reply_ring.size,
                            header.heap.size);
  if (!reply.ok()) return InvalidArgument("segment reply ring: " + reply.status().message());
  segment->request_ring_ = std::move(request).value();
  segment->reply_ring_ = std::move(reply).value();
  try {
    segment->allocator_->buffer.emplace(bip::open_only, base + header.heap.offset,
                                        header.heap.size);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("segment heap cannot be opened: ") + e.what());
  }
  segment->fd_ = std::move(fd);
  segment->base_ = mapping.Release();
  segment->size_ = file_size;
  segment->heap_ = header.heap;
  return segment;
}

StatusOr<RingHeapRef> Segment::Allocate(uint64_t bytes) {
  if (bytes == 0 || bytes > heap_.size) {
    return ResourceExhausted("cannot allocate " + std::to_string(bytes) +
                             " bytes in a heap of " + std::to_string(heap_.size));
  }
  void* p = allocator_->buffer->allocate(bytes, std::nothrow);
  if (p == nullptr) {
    return ResourceExhausted("segment heap has no room for " + std::to_string(bytes) +
                             " bytes (" + std::to_string(heap_free_bytes()) + " free)");
  }
  return RingHeapRef{static_cast<uint64_t>(static_cast<uint8_t*>(p) - (base_ + heap_.offset)),
                     bytes};
}

Status Segment::Deallocate(RingHeapRef ref) {
  if (ref.offset == 0 || ref.offset >= heap_.size) {
    return InvalidArgument("heap offset " + std::to_string(ref.offset) +
                           " is not an allocated block");
  }
  allocator_->buffer->deallocate(base_ + heap_.offset + ref.offset);
  return Status::Ok();
}

uint64_t Segment::heap_free_bytes() const { return allocator_->buffer->get_free_memory(); }

StatusOr<std::span<uint8_t>> Segment::HeapBytes(RingHeapRef ref) {
  if (ref.offset > heap_.size || ref.length > heap_.size - ref.offset) {
    return InvalidArgument("heap range [" + std::to_string(ref.offset) + ", +" +
                           std::to_string(ref.length) + ") lies outside the heap of " +
                           std::to_string(heap_.size) + " bytes");
  }
  return std::span<uint8_t>(base_ + heap_.offset + ref.offset, ref.length);
}

StatusOr<std::vector<uint8_t>> Segment::CopyFromHeap(RingHeapRef ref) const {
  JITD_ASSIGN_OR_RETURN(std::span<uint8_t> bytes, const_cast<Segment*>(this)->HeapBytes(ref));
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

Status Segment::TryPushMessage(Ring& ring, std::span<const uint8_t> bytes, RingHeapRef* out_ref) {
  *out_ref = {0, 0};
  if (bytes.size() <= ring.slot_capacity()) return ring.TryPush(bytes);
  JITD_ASSIGN_OR_RETURN(RingHeapRef ref, Allocate(bytes.size()));
  std::memcpy(base_ + heap_.offset + ref.offset, bytes.data(), bytes.size());
  Status status = ring.TryPushHeapRef(ref);
  if (!status.ok()) {
    (void)Deallocate(ref);
    return status;
  }
  *out_ref = ref;
  return Status::Ok();
}

}  // namespace jitd::ipc
