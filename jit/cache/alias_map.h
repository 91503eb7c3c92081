// jit/cache alias map: remembered answers to "which program are these
// bytes?", so a program sent again verbatim is looked up without parsing.
//
// The daemon keys its cache on a canonical form of each program (one entry
// however it is spelled); computing that form needs a parse and a print. An
// AliasMap maps a key made from the raw bytes (their hash, plus whatever else
// the caller folds in) to the canonical program part of the cache key, so
// the memory-hit path stays a hash of the raw bytes and two lookups.
//
// Bounded by bytes (keys + values + a per-entry overhead); least recently
// used entries go first. A forgotten alias costs only a parse.
//
// Thread safety: every method may be called from any thread. Lifetime: plain
// owner of its strings.
#ifndef JITD_JIT_CACHE_ALIAS_MAP_H_
#define JITD_JIT_CACHE_ALIAS_MAP_H_

#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace jitd::cache {

class AliasMap {
 public:
  // Bytes charged per entry besides its key and value.
  static constexpr uint64_t kEntryOverhead = 96;

  explicit AliasMap(uint64_t budget_bytes) : budget_bytes_(budget_bytes) {}
  AliasMap(const AliasMap&) = delete;
  AliasMap& operator=(const AliasMap&) = delete;

  // The value for `key` (refreshed to most recently used), or nullopt.
  std::optional<std::string> Find(std::string_view key);
  // Inserts or replaces; evicts least recently used entries to stay within
  // budget (an entry larger than the whole budget is not kept).
  void Put(std::string key, std::string value);

  size_t size() const;
  uint64_t bytes() const;

 private:
  struct Entry {
    std::string value;
    std::list<std::string>::iterator lru_pos;
  };
  static uint64_t Cost(std::string_view key, std::string_view value) {
    return key.size() + value.size() + kEntryOverhead;
  }

  mutable std::mutex mu_;
  const uint64_t budget_bytes_;
  uint64_t bytes_ = 0;
  std::unordered_map<std::string, Entry> entries_;
  std::list<std::string> lru_;  // front = most recently used
};

}  // namespace jitd::cache

#endif  // JITD_JIT_CACHE_ALIAS_MAP_H_
