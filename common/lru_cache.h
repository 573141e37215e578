// A bounded, thread-safe LRU map from byte-string keys to values: the
// memory of a pure function's answers (the Check responses of the service,
// the plans of the admission check's alternatives). Each entry counts its
// key's bytes plus SizeOf()(value); past `max_bytes` the least recently used
// entries go. Values are returned by copy, so keep them cheap to copy
// (shared slices, small messages). Counts its lookups for the metrics.
#ifndef OOMGUARD_COMMON_LRU_CACHE_H_
#define OOMGUARD_COMMON_LRU_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "absl/strings/string_view.h"

namespace oomguard {

// What a cache holds and how its lookups went, since it was made.
struct LruCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  size_t entries = 0;
  size_t bytes = 0;  // Keys and values, as counted against the bound.
};

template <typename Value, typename SizeOf>
class LruCache {
 public:
  // Holds at most `max_bytes` of keys and values; 0 disables it.
  explicit LruCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  bool enabled() const { return max_bytes_ > 0; }

  // A disabled cache counts no lookups.
  std::optional<Value> Find(absl::string_view key) {
    if (!enabled()) return std::nullopt;
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = index_.find(std::string_view(key.data(), key.size()));
    if (it == index_.end()) {
      ++stats_.misses;
      return std::nullopt;
    }
    ++stats_.hits;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }

  LruCacheStats Stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    LruCacheStats stats = stats_;
    stats.entries = index_.size();
    return stats;
  }

  // Stores `value` for `key` (unless it is there already, or alone larger
  // than the bound), evicting the least recently used entries beyond it.
  void Insert(absl::string_view key, Value value) {
    const size_t size = key.size() + SizeOf()(value);
    if (!enabled() || size > max_bytes_) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (index_.contains(std::string_view(key.data(), key.size()))) return;  // Another was first.
    lru_.emplace_front(std::string(key), std::move(value));
    index_.emplace(lru_.front().first, lru_.begin());
    stats_.bytes += size;
    while (stats_.bytes > max_bytes_) {
      const auto& [old_key, old] = lru_.back();
      stats_.bytes -= old_key.size() + SizeOf()(old);
      index_.erase(old_key);
      lru_.pop_back();
    }
  }

 private:
  using Lru = std::list<std::pair<std::string, Value>>;  // Most recent first.

  const size_t max_bytes_;
  mutable std::mutex mu_;
  Lru lru_;
  std::unordered_map<std::string_view, typename Lru::iterator> index_;  // Keys live in lru_.
  LruCacheStats stats_;  // Its entries are index_.size().
};

}  // namespace oomguard

#endif  // OOMGUARD_COMMON_LRU_CACHE_H_
