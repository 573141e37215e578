// The cache of plans (see plan_cache.h).
#include "planner/plan_cache.h"

#include "absl/strings/str_format.h"
#include "common/deterministic_bytes.h"

namespace oomguard {

size_t PlanResultBytes::operator()(const std::shared_ptr<const PlanResult>& plan) const {
  size_t bytes = plan->summary.ByteSizeLong();
  for (const v1::PlanCandidate& c : plan->candidates) bytes += c.ByteSizeLong();
  return bytes;
}

std::string PlanCacheKey(const v1::JobSpec& job, const PlanCluster& cluster,
                         const PlanOptions& options) {
  std::string key;
  AppendDeterministic(job, &key);
  AppendDeterministic(cluster.gpu, &key);
  // %a: doubles exactly (hexadecimal), so nearby margins never share a key.
  absl::StrAppendFormat(&key, "%u|%a|%d|%a|%u|%d%d%d%d", cluster.gpus_per_node,
                        options.memory_margin, options.compare_upper_bound,
                        options.upper_bound_coverage, options.limit, options.allow_recompute,
                        options.allow_offload, options.allow_cross_node_expert_parallel,
                        options.allow_expert_parallel_overlap);
  for (const SizeRangeName& n : kSizeRangeNames) {
    const SizeRange& r = options.sizes.*n.range;
    absl::StrAppendFormat(&key, "|%d:%d", r.min, r.max);
  }
  return key;
}

}  // namespace oomguard
