// A bounded LRU cache of serialized Check responses keyed by the serialized
// request. Sound because a Check is a pure function of its request for the
// life of a server: the estimator is deterministic, and the GPU catalog and
// the default safety margin are fixed at start. Admission hooks send the
// same job again and again (retries, array jobs, re-submissions); a hit
// answers with the stored bytes, without resolving or estimating.
// Only successful responses are stored. A server with a store gives each
// answer a check id of its own: the bytes stored hold none, and each call
// appends its id's field (request_handlers.cc). Thread-safe.
#ifndef OOMGUARD_SERVICE_RESPONSE_CACHE_H_
#define OOMGUARD_SERVICE_RESPONSE_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/lru_cache.h"
#include "grpcpp/support/slice.h"
#include "oomguard/v1/admission.pb.h"
#include "oomguard/v1/feedback.pb.h"

namespace oomguard::service {

struct CachedResponse {
  grpc::Slice response;  // Shared, not copied, by every hit.
  v1::Verdict verdict = v1::VERDICT_UNSPECIFIED;
  uint64_t peak_bytes = 0;
  // With a store: the check's record without its id, time or handle
  // (check_record.h), which each answer's call stamps and stores; the
  // response's bytes hold no check id.
  std::shared_ptr<const v1::CheckRecord> record = nullptr;
};

struct CachedResponseBytes {
  size_t operator()(const CachedResponse& entry) const {
    return entry.response.size() + (entry.record ? entry.record->SpaceUsedLong() : 0);
  }
};

class ResponseCache : public LruCache<CachedResponse, CachedResponseBytes> {
 public:
  using Entry = CachedResponse;
  using LruCache::LruCache;
};

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_RESPONSE_CACHE_H_
