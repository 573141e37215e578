// The LRU cache of Check responses (see response_cache.h).
#include "service/response_cache.h"

#include <utility>

namespace oomguard::service {

std::optional<ResponseCache::Entry> ResponseCache::Find(absl::string_view request) {
  if (!enabled()) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = index_.find(std::string_view(request.data(), request.size()));
  if (it == index_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void ResponseCache::Insert(absl::string_view request, Entry entry) {
  const size_t size = request.size() + entry.response.size();
  if (!enabled() || size > max_bytes_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (index_.contains(std::string_view(request.data(), request.size()))) {
    return;  // Another worker was first.
  }
  lru_.emplace_front(std::string(request), std::move(entry));
  index_.emplace(lru_.front().first, lru_.begin());
  bytes_ += size;
  while (bytes_ > max_bytes_) {
    const auto& [key, old] = lru_.back();
    bytes_ -= key.size() + old.response.size();
    index_.erase(key);
    lru_.pop_back();
  }
}

}  // namespace oomguard::service
