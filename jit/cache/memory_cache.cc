#include "jit/cache/memory_cache.h"

#include <exception>
#include <utility>

namespace jitd::cache {

std::string MemoryCacheStats::ToString() const {
  return std::to_string(entries) + " entries, " + std::to_string(bytes) + "/" +
         std::to_string(budget_bytes) + " bytes, " + std::to_string(hits) + " hits, " +
         std::to_string(misses) + " misses, " + std::to_string(computes) + " computes, " +
         std::to_string(joined) + " joined, " + std::to_string(evictions) + " evictions, " +
         std::to_string(rejected) + " rejected";
}

std::string_view CacheSourceName(CacheSource source) {
  switch (source) {
    case CacheSource::kHit: return "hit";
    case CacheSource::kComputed: return "computed";
    case CacheSource::kJoined: return "joined";
  }
  return "unknown";
}

ErasedMemoryCache::ErasedMemoryCache(uint64_t budget_bytes) : budget_bytes_(budget_bytes) {
  stats_.budget_bytes = budget_bytes;
}

void ErasedMemoryCache::TouchLocked(Entry& entry) {
  lru_.splice(lru_.begin(), lru_, entry.lru_pos);
  entry.last_use = std::chrono::system_clock::now();
}

void ErasedMemoryCache::RemoveLocked(
    std::unordered_map<Fingerprint, Entry, FingerprintHash>::iterator it) {
  stats_.bytes -= it->second.bytes;
  lru_.erase(it->second.lru_pos);
  entries_.erase(it);
}

ErasedMemoryCache::Value ErasedMemoryCache::Get(const Fingerprint& key) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    ++stats_.misses;
    return nullptr;
  }
  ++stats_.hits;
  ++it->second.hits;
  TouchLocked(it->second);
  return it->second.value;
}

ErasedMemoryCache::Value ErasedMemoryCache::Probe(const Fingerprint& key) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return nullptr;
  ++stats_.hits;
  ++it->second.hits;
  TouchLocked(it->second);
  return it->second.value;
}

bool ErasedMemoryCache::PutLocked(const Fingerprint& key, Value value, uint64_t bytes) {
  if (value == nullptr) return false;
  if (bytes > budget_bytes_) {
    ++stats_.rejected;
    return false;
  }
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    stats_.bytes -= it->second.bytes;
    it->second.value = std::move(value);
    it->second.bytes = bytes;
    TouchLocked(it->second);
  } else {
    lru_.push_front(key);
    entries_.emplace(key, Entry{std::move(value), bytes, std::chrono::system_clock::now(),
                                lru_.begin(), 0});
  }
  stats_.bytes += bytes;
  // The new entry is at the front and fits alone, so this stops before it.
  while (stats_.bytes > budget_bytes_) {
    RemoveLocked(entries_.find(lru_.back()));
    ++stats_.evictions;
  }
  return true;
}

bool ErasedMemoryCache::Put(const Fingerprint& key, Value value, uint64_t bytes) {
  std::lock_guard lock(mu_);
  return PutLocked(key, std::move(value), bytes);
}

bool ErasedMemoryCache::Erase(const Fingerprint& key) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  RemoveLocked(it);
  return true;
}

void ErasedMemoryCache::Clear() {
  std::lock_guard lock(mu_);
  entries_.clear();
  lru_.clear();
  stats_.bytes = 0;
}

StatusOr<ErasedMemoryCache::Lookup> ErasedMemoryCache::GetOrCompute(const Fingerprint& key,
                                                                    const ComputeFn& compute) {
  std::unique_lock lock(mu_);
  if (auto it = entries_.find(key); it != entries_.end()) {
    ++stats_.hits;
    ++it->second.hits;
    TouchLocked(it->second);
    return Lookup{it->second.value, CacheSource::kHit};
  }
  ++stats_.misses;
  if (auto f = in_flight_.find(key); f != in_flight_.end()) {
    Flight flight = f->second;
    ++stats_.joined;
    lock.unlock();
    const StatusOr<Value>& result = flight.get();
    if (!result.ok()) return result.status();
    return Lookup{result.value(), CacheSource::kJoined};
  }
  // This caller leads the flight.
  std::promise<StatusOr<Value>> promise;
  in_flight_.emplace(key, promise.get_future().share());
  ++stats_.computes;
  lock.unlock();

  StatusOr<Sized> computed = Internal("compute function did not run");
  try {
    computed = compute();
  } catch (const std::exception& e) {
    computed = Internal(std::string("compute function threw: ") + e.what());
  } catch (...) {
    computed = Internal("compute function threw a non-standard exception");
  }
  if (computed.ok() && computed->value == nullptr) {
    computed = Internal("compute function returned a null value");
  }

  lock.lock();
  if (computed.ok()) PutLocked(key, computed->value, computed->bytes);
  in_flight_.erase(key);
  lock.unlock();

  if (!computed.ok()) {
    promise.set_value(computed.status());
    return computed.status();
  }
  promise.set_value(computed->value);
  return Lookup{computed->value, CacheSource::kComputed};
}

MemoryCacheStats ErasedMemoryCache::stats() const {
  std::lock_guard lock(mu_);
  MemoryCacheStats s = stats_;
  s.entries = entries_.size();
  return s;
}

std::vector<MemoryCacheEntryInfo> ErasedMemoryCache::Entries() const {
  std::lock_guard lock(mu_);
  std::vector<MemoryCacheEntryInfo> out;
  out.reserve(lru_.size());
  for (const Fingerprint& key : lru_) {
    const Entry& e = entries_.at(key);
    out.push_back({key, e.bytes, e.last_use, e.hits, e.value});
  }
  return out;
}

}  // namespace jitd::cache
