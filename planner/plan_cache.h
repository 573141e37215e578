// The plans behind the admission check's alternatives (alternatives.h),
// kept between checks. The search keeps a job's model, batch, sequence,
// precision, runtime and GPU count and leaves its layout and recompute
// open, so the checks of one model and shape share one plan whatever
// layout each job runs: a hook fleet pays for a plan once per shape, and
// every later check only compares its own configuration with it. Sound
// because Plan() is a pure function of its key (PlanCacheKey).
#ifndef OOMGUARD_PLANNER_PLAN_CACHE_H_
#define OOMGUARD_PLANNER_PLAN_CACHE_H_

#include <cstddef>
#include <memory>
#include <string>

#include "common/lru_cache.h"
#include "oomguard/v1/job.pb.h"
#include "planner/planner.h"

namespace oomguard {

struct PlanResultBytes {
  size_t operator()(const std::shared_ptr<const PlanResult>& plan) const;
};

// Holds at most its bound's bytes of plans (serialized size); 0 disables it.
// A hit shares the plan (never null) instead of copying it.
using PlanCache = LruCache<std::shared_ptr<const PlanResult>, PlanResultBytes>;

// What Plan(job, cluster, options) depends on, as bytes: the job and the
// GPU (deterministically serialized), the NVLink domain and every option
// but the deadline.
std::string PlanCacheKey(const v1::JobSpec& job, const PlanCluster& cluster,
                         const PlanOptions& options);

}  // namespace oomguard

#endif  // OOMGUARD_PLANNER_PLAN_CACHE_H_
