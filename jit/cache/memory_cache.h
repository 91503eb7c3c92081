// jit/cache in-memory LRU: compiled executables of this process, by key.
//
// MemoryCache<T> maps a Fingerprint to a std::shared_ptr<const T>, bounded by
// a byte budget that the caller measures (each Put says how many bytes its
// entry holds). Get refreshes recency; Put evicts least-recently-used entries
// until the total is within budget (an entry larger than the whole budget is
// not kept). GetOrCompute adds single flight: N threads asking for the same
// missing key at once cause one compute call, and all of them receive its
// result, or its error (errors are never cached; the next caller retries).
//
// Thread safety: every method may be called from any thread. Compute
// functions run outside the cache's lock, so they may use the cache (other
// keys) themselves. Lifetime: values are shared; an evicted value lives on
// while a caller holds it. The cache must outlive calls in progress.
//
// The logic lives in the type-erased ErasedMemoryCache; MemoryCache<T> is a
// typed face on it.
#ifndef JITD_JIT_CACHE_MEMORY_CACHE_H_
#define JITD_JIT_CACHE_MEMORY_CACHE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "jit/cache/fingerprint.h"

namespace jitd::cache {

// Counters of a memory cache, a snapshot. Plain value.
struct MemoryCacheStats {
  uint64_t hits = 0;         // lookups that found the key
  uint64_t misses = 0;       // lookups that did not (GetOrCompute joiners too)
  uint64_t computes = 0;     // compute functions GetOrCompute ran
  uint64_t joined = 0;       // GetOrCompute callers that waited on another's compute
  uint64_t evictions = 0;    // entries dropped to stay within budget
  uint64_t rejected = 0;     // Puts larger than the whole budget (not kept)
  uint64_t bytes = 0;        // bytes held now
  uint64_t entries = 0;      // entries held now
  uint64_t budget_bytes = 0;

  // One line, e.g. "3 entries, 1024/4096 bytes, 10 hits, 3 misses, ...".
  std::string ToString() const;
};

// One cached entry, for `jitd stats --keys`. Plain value.
struct MemoryCacheEntryInfo {
  Fingerprint key;
  uint64_t bytes = 0;
  std::chrono::system_clock::time_point last_use;
  uint64_t hits = 0;                   // lookups that found this entry
  std::shared_ptr<const void> value;   // the cached value (MemoryCache<T>: a const T)
};

// How GetOrCompute obtained its value.
enum class CacheSource { kHit, kComputed, kJoined };
std::string_view CacheSourceName(CacheSource source);  // "hit", "computed", "joined"

// The type-erased cache behind MemoryCache<T>. See the file comment.
class ErasedMemoryCache {
 public:
  using Value = std::shared_ptr<const void>;
  struct Sized {
    Value value;     // must not be null
    uint64_t bytes;  // what the entry counts against the budget
  };
  struct Lookup {
    Value value;
    CacheSource source;
  };
  using ComputeFn = std::function<StatusOr<Sized>()>;

  explicit ErasedMemoryCache(uint64_t budget_bytes);
  ErasedMemoryCache(const ErasedMemoryCache&) = delete;
  ErasedMemoryCache& operator=(const ErasedMemoryCache&) = delete;

  // The value, refreshed to most recently used; nullptr on a miss.
  Value Get(const Fingerprint& key);
  // Get for a caller that follows a miss with GetOrCompute: a hit counts as
  // a hit, a miss counts nothing (GetOrCompute will count it).
  Value Probe(const Fingerprint& key);
  // Inserts or replaces; false (and nothing changes) when `bytes` exceeds the
  // budget or `value` is null.
  bool Put(const Fingerprint& key, Value value, uint64_t bytes);
  // True when the key was present.
  bool Erase(const Fingerprint& key);
  void Clear();
  // Get, or on a miss run `compute` once for all concurrent callers of `key`.
  // A successful result is Put (subject to the budget) and returned to all;
  // an error is returned to all and not cached. A compute function that
  // throws is reported as INTERNAL; one that returns a null value too.
  StatusOr<Lookup> GetOrCompute(const Fingerprint& key, const ComputeFn& compute);

  MemoryCacheStats stats() const;
  // Every entry, most recently used first.
  std::vector<MemoryCacheEntryInfo> Entries() const;

 private:
  struct Entry {
    Value value;
    uint64_t bytes;
    std::chrono::system_clock::time_point last_use;
    std::list<Fingerprint>::iterator lru_pos;
    uint64_t hits = 0;
  };
  using Flight = std::shared_future<StatusOr<Value>>;

  bool PutLocked(const Fingerprint& key, Value value, uint64_t bytes);
  void TouchLocked(Entry& entry);
  void RemoveLocked(std::unordered_map<Fingerprint, Entry, FingerprintHash>::iterator it);

  mutable std::mutex mu_;
  const uint64_t budget_bytes_;
  std::unordered_map<Fingerprint, Entry, FingerprintHash> entries_;
  std::list<Fingerprint> lru_;  // front = most recently used
  std::unordered_map<Fingerprint, Flight, FingerprintHash> in_flight_;
  MemoryCacheStats stats_;
};

// A typed memory cache of std::shared_ptr<const T>. Same contract as
// ErasedMemoryCache.
template <typename T>
class MemoryCache {
 public:
  using Value = std::shared_ptr<const T>;
  struct Sized {
    Value value;
    uint64_t bytes;
  };
  struct Lookup {
    Value value;
    CacheSource source;
  };

  explicit MemoryCache(uint64_t budget_bytes) : impl_(budget_bytes) {}

  Value Get(const Fingerprint& key) { return Cast(impl_.Get(key)); }
  Value Probe(const Fingerprint& key) { return Cast(impl_.Probe(key)); }
  bool Put(const Fingerprint& key, Value value, uint64_t bytes) {
    return impl_.Put(key, std::move(value), bytes);
  }
  bool Erase(const Fingerprint& key) { return impl_.Erase(key); }
  void Clear() { impl_.Clear(); }

  // `compute` is any callable returning StatusOr<Sized>.
  template <typename ComputeFn>
  StatusOr<Lookup> GetOrCompute(const Fingerprint& key, ComputeFn&& compute) {
    StatusOr<ErasedMemoryCache::Lookup> r = impl_.GetOrCompute(
        key, [&compute]() -> StatusOr<ErasedMemoryCache::Sized> {
          StatusOr<Sized> typed = compute();
          if (!typed.ok()) return typed.status();
          return ErasedMemoryCache::Sized{std::move(typed->value), typed->bytes};
        });
    if (!r.ok()) return r.status();
    return Lookup{Cast(r->value), r->source};
  }

  MemoryCacheStats stats() const { return impl_.stats(); }
  std::vector<MemoryCacheEntryInfo> Entries() const { return impl_.Entries(); }

 private:
  static Value Cast(std::shared_ptr<const void> v) {
    return std::static_pointer_cast<const T>(std::move(v));
  }
  ErasedMemoryCache impl_;
};

}  // namespace jitd::cache

#endif  // JITD_JIT_CACHE_MEMORY_CACHE_H_
