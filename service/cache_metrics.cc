// The Check caches in the Prometheus metrics (see cache_metrics.h).
#include "service/cache_metrics.h"

#include <string>
#include <vector>

namespace oomguard::service {
namespace {

prometheus::MetricFamily Family(std::string name, std::string help, prometheus::MetricType type) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

prometheus::ClientMetric Sample(std::vector<prometheus::ClientMetric::Label> labels,
                                prometheus::MetricType type, double value) {
  prometheus::ClientMetric sample;
  sample.label = std::move(labels);
  if (type == prometheus::MetricType::Counter) {
    sample.counter.value = value;
  } else {
    sample.gauge.value = value;
  }
  return sample;
}

}  // namespace

std::vector<prometheus::MetricFamily> CacheMetrics::Collect() const {
  using prometheus::MetricType;
  prometheus::MetricFamily lookups = Family(
      "oomguard_cache_lookups_total",
      "Lookups in the Check caches, by cache and result (hit or miss).", MetricType::Counter);
  prometheus::MetricFamily entries =
      Family("oomguard_cache_entries", "Entries held by each Check cache.", MetricType::Gauge);
  prometheus::MetricFamily bytes =
      Family("oomguard_cache_bytes",
             "Bytes of keys and values held by each Check cache, as counted against its bound.",
             MetricType::Gauge);
  for (const WatchedCache& cache : caches_) {
    if (!cache.enabled) continue;
    const LruCacheStats stats = cache.stats();
    lookups.metric.push_back(Sample({{"cache", cache.name}, {"result", "hit"}}, MetricType::Counter,
                                    static_cast<double>(stats.hits)));
    lookups.metric.push_back(Sample({{"cache", cache.name}, {"result", "miss"}},
                                    MetricType::Counter, static_cast<double>(stats.misses)));
    entries.metric.push_back(
        Sample({{"cache", cache.name}}, MetricType::Gauge, static_cast<double>(stats.entries)));
    bytes.metric.push_back(
        Sample({{"cache", cache.name}}, MetricType::Gauge, static_cast<double>(stats.bytes)));
  }
  std::vector<prometheus::MetricFamily> families;
  if (lookups.metric.empty()) return families;
  families.push_back(std::move(lookups));
  families.push_back(std::move(entries));
  families.push_back(std::move(bytes));
  return families;
}

}  // namespace oomguard::service
