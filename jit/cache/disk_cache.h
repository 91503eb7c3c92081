// jit/cache on-disk store: compiled payloads that survive restarts and are
// shared by every daemon (or process) on the machine using the same dir.
//
// One file per entry, named by the entry's fingerprint (32 hex chars).
// File format (little-endian), version kDiskFormatVersion:
//
//   offset  size  field
//        0     8  magic "JITDCACH"
//        8     4  format version (u32)
//       12     4  key section length K (u32): the bytes at offset 40..40+K
//       16     8  payload length P (u64)
//       24     8  XXH3-64 of the payload (u64)
//       32     8  reserved, zero
//       40     K  the six CacheKeyParts, each as u32 length + bytes
//     40+K     8  XXH3-64 of bytes [0, 40+K) (header checksum)
//     48+K     P  payload
//
// and the file is exactly 48+K+P bytes long. A reader checks all of it (no
// allocation beyond the file's actual size) and that the key parts hash to
// the file's name; a corrupt, truncated, foreign-version or misnamed file is
// reported as a miss, deleted and counted — never loaded.
//
// Writes are atomic: a unique temp file in the same directory (O_EXCL, name
// with pid + random), fsync, rename over the final name. Two writers of one
// key (threads or processes) never produce a torn file; the last rename wins.
// A hit updates the file's mtime, and eviction removes the least recently
// used files (oldest mtime) until the total is within the byte bound.
//
// Payloads are opaque bytes: the device decides what it serializes.
//
// Thread safety: all methods may be called concurrently, from any number of
// threads and processes sharing the directory. Lifetime: a DiskCache holds
// only its options and counters; files outlive it.
#ifndef JITD_JIT_CACHE_DISK_CACHE_H_
#define JITD_JIT_CACHE_DISK_CACHE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "jit/cache/fingerprint.h"

namespace jitd::cache {

inline constexpr uint32_t kDiskFormatVersion = 1;
inline constexpr char kDiskMagic[8] = {'J', 'I', 'T', 'D', 'C', 'A', 'C', 'H'};
// Bound on the key section of one file (all six parts with their lengths).
inline constexpr uint32_t kMaxKeySectionBytes = 1 << 20;

// $XDG_CACHE_HOME/jitd when XDG_CACHE_HOME is set to an absolute path, else
// $HOME/.cache/jitd; FAILED_PRECONDITION when neither is usable.
StatusOr<std::string> DefaultDiskCacheDir();

// Options for DiskCache::Open. Plain value.
struct DiskCacheOptions {
  // The directory; created (with missing parents) with mode 0700.
  std::string dir;
  // Bound on the total size of entry files, header included.
  uint64_t max_bytes = uint64_t{1} << 30;
  // Whether Put fsyncs the file and the directory (durable across power
  // loss). Atomicity against other processes holds either way.
  bool fsync = true;
};

// A cached entry read back. Plain value.
struct DiskEntry {
  CacheKeyParts parts;
  std::string payload;
};

// One entry as listed (header only, payload not read). Plain value.
struct DiskEntryInfo {
  Fingerprint fingerprint;
  CacheKeyParts parts;
  uint64_t file_bytes = 0;
  uint64_t payload_bytes = 0;
  std::chrono::system_clock::time_point last_use;  // the file's mtime
};

// Counters of this DiskCache object (not of other processes). Plain value.
struct DiskCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t corrupt_dropped = 0;  // invalid files found and deleted
  uint64_t writes = 0;
  uint64_t rejected = 0;         // Puts larger than max_bytes (not written)
  uint64_t evictions = 0;

  std::string ToString() const;
};

// The on-disk store. See the file comment.
class DiskCache {
 public:
  // Creates the directory if missing. INVALID_ARGUMENT for an empty dir,
  // an I/O error status when it cannot be created or is not a directory.
  static StatusOr<std::unique_ptr<DiskCache>> Open(DiskCacheOptions options);

  // The entry, with its mtime refreshed; nullopt on a miss (including a
  // corrupt file, which is deleted). An error status only for I/O failures
  // other than "not there" (e.g. permission denied).
  StatusOr<std::optional<DiskEntry>> Get(const Fingerprint& key);
  // Like Get(Fingerprint::Of(parts)), and a miss unless the stored parts
  // equal `parts` (a guard against fingerprint collisions).
  StatusOr<std::optional<DiskEntry>> Get(const CacheKeyParts& parts);

  // Writes the entry for `parts` atomically, then evicts least recently used
  // entries until the directory is within max_bytes. RESOURCE_EXHAUSTED when
  // the entry alone exceeds max_bytes (nothing is written). Returns the
  // entry's fingerprint.
  StatusOr<Fingerprint> Put(const CacheKeyParts& parts, std::string_view payload);

  // Removes the entry; OK whether or not it existed.
  Status Erase(const Fingerprint& key);

  // Every valid entry (headers are checked, payload checksums are not; files
  // with a bad header are deleted and counted), least recently used first.
  StatusOr<std::vector<DiskEntryInfo>> List();

  // The listed entry nearest to `want` (not equal to it): most components
  // equal, a shared program_hash counting first; nullopt when there is none.
  // Explain(want, nearest->parts) says what differs.
  StatusOr<std::optional<DiskEntryInfo>> FindNearest(const CacheKeyParts& want);
  // The nearest entry among those `accept` accepts (e.g. the same program
  // identity and owner), ranked as above.
  StatusOr<std::optional<DiskEntryInfo>> FindNearest(
      const CacheKeyParts& want, const std::function<bool(const CacheKeyParts&)>& accept);

  // Removes least recently used entries until the total is within
  // max_bytes; also removes temp files abandoned over an hour ago.
  Status Evict();

  const std::string& dir() const { return options_.dir; }
  uint64_t max_bytes() const { return options_.max_bytes; }
  DiskCacheStats stats() const;

  // The path of the entry file for `key`.
  std::string PathFor(const Fingerprint& key) const;

 private:
  explicit DiskCache(DiskCacheOptions options) : options_(std::move(options)) {}

  // Reads and validates the file of `key`. want_payload=false stops after
  // the header. nullopt = missing or invalid (invalid files are deleted).
  StatusOr<std::optional<DiskEntryInfo>> ReadEntry(const Fingerprint& key, bool want_payload,
                                                   bool touch, std::string* payload);

  DiskCacheOptions options_;
  std::atomic<uint64_t> hits_{0}, misses_{0}, corrupt_dropped_{0}, writes_{0}, rejected_{0},
      evictions_{0};
};

}  // namespace jitd::cache

#endif  // JITD_JIT_CACHE_DISK_CACHE_H_
