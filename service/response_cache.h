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

#include "common/lru_cache.h"
#include "grpcpp/support/slice.h"
#include "oomguard/v1/admission.pb.h"

namespace oomguard::service {

struct CachedResponse {
  grpc::Slice response;  // Shared, not copied, by every hit.
  v1::Verdict verdict = v1::VERDICT_UNSPECIFIED;
  uint64_t peak_bytes = 0;
};

struct CachedResponseBytes {
  size_t operator()(const CachedResponse& entry) const { return entry.response.size(); }
};

class ResponseCache : public LruCache<CachedResponse, CachedResponseBytes> {
 public:
  using Entry = CachedResponse;
  using LruCache::LruCache;
};

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_RESPONSE_CACHE_H_
