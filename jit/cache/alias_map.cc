#include "jit/cache/alias_map.h"

#include <utility>

namespace jitd::cache {

std::optional<std::string> AliasMap::Find(std::string_view key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(std::string(key));
  if (it == entries_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
  return it->second.value;
}

void AliasMap::Put(std::string key, std::string value) {
  const uint64_t cost = Cost(key, value);
  if (cost > budget_bytes_) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    bytes_ -= Cost(it->first, it->second.value);
    lru_.erase(it->second.lru_pos);
    entries_.erase(it);
  }
  lru_.push_front(key);
  entries_.emplace(std::move(key), Entry{std::move(value), lru_.begin()});
  bytes_ += cost;
  while (bytes_ > budget_bytes_) {
    auto last = entries_.find(lru_.back());
    bytes_ -= Cost(last->first, last->second.value);
    entries_.erase(last);
    lru_.pop_back();
  }
}

size_t AliasMap::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

uint64_t AliasMap::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace jitd::cache
