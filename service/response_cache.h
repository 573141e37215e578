// A bounded LRU cache of serialized Check responses keyed by the serialized
// request. Sound because a Check is a pure function of its request for the
// life of a server: the estimator is deterministic, and the GPU catalog and
// the default safety margin are fixed at start. Admission hooks send the
// same job again and again (retries, array jobs, re-submissions); a hit
// answers with the stored bytes, without resolving or estimating.
// Only successful responses are stored. Thread-safe.
#ifndef OOMGUARD_SERVICE_RESPONSE_CACHE_H_
#define OOMGUARD_SERVICE_RESPONSE_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/strings/string_view.h"
#include "grpcpp/support/slice.h"
#include "oomguard/v1/admission.pb.h"

namespace oomguard::service {

class ResponseCache {
 public:
  struct Entry {
    grpc::Slice response;  // Shared, not copied, by every hit.
    v1::Verdict verdict = v1::VERDICT_UNSPECIFIED;
    uint64_t peak_bytes = 0;
  };

  // Holds at most `max_bytes` of requests and responses; 0 disables it.
  explicit ResponseCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  bool enabled() const { return max_bytes_ > 0; }

  std::optional<Entry> Find(absl::string_view request);
  // Stores `entry` for `request`, evicting the least recently used entries
  // beyond the size bound.
  void Insert(absl::string_view request, Entry entry);

 private:
  using Lru = std::list<std::pair<std::string, Entry>>;  // Most recent first.

  const size_t max_bytes_;
  std::mutex mu_;
  Lru lru_;
  std::unordered_map<std::string_view, Lru::iterator> index_;  // Keys live in lru_.
  size_t bytes_ = 0;
};

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_RESPONSE_CACHE_H_
