// The Check caches in the Prometheus metrics: read from the caches' own
// counts (common/lru_cache.h) each time /metrics is scraped, so a lookup
// costs no more than it did. Only enabled caches are exported; `cache` is
// "response" (response_cache.h), "check_result" (check_result_cache.h) or
// "plan" (planner/plan_cache.h), as in their --*_cache_mb flags.
//
//   oomguard_cache_lookups_total{cache,result}   counter; result "hit" | "miss"
//   oomguard_cache_entries{cache}                gauge
//   oomguard_cache_bytes{cache}                  gauge: keys and values, as
//                                                counted against the bound
#ifndef OOMGUARD_SERVICE_CACHE_METRICS_H_
#define OOMGUARD_SERVICE_CACHE_METRICS_H_

#include <functional>
#include <string>
#include <vector>

#include "common/lru_cache.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace oomguard::service {

// One cache as the metrics see it.
struct WatchedCache {
  std::string name;  // The `cache` label.
  bool enabled = false;
  std::function<LruCacheStats()> stats;  // Thread-safe.
};

// A Collectable over a fixed set of caches, which must outlive it (the
// server registers it with its exposer, which it destroys first).
class CacheMetrics : public prometheus::Collectable {
 public:
  explicit CacheMetrics(std::vector<WatchedCache> caches) : caches_(std::move(caches)) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const std::vector<WatchedCache> caches_;
};

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_CACHE_METRICS_H_
