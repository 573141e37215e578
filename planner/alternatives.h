// The planner's answer inside an admission check: for a job that does not
// fit, the fastest configurations that fit on the same GPUs; for one that
// fits, a clearly faster one (CheckResponse.alternatives). The search is the
// planner's, bounded in work (planner.h) and stopped only by the check's
// deadline, so the answer is a function of the request alone; the job's
// micro-batch and global batch sizes and its sequence are kept, its parallel
// layout and recompute searched.
#ifndef OOMGUARD_PLANNER_ALTERNATIVES_H_
#define OOMGUARD_PLANNER_ALTERNATIVES_H_

#include "absl/status/status.h"
#include "common/deadline.h"
#include "oomguard/v1/admission.pb.h"
#include "oomguard/v1/job.pb.h"
#include "planner/plan_cache.h"

namespace oomguard {

inline constexpr int kMaxAlternatives = 3;

// Fills response->alternatives for `job` checked on `gpu` with the check's
// safety margin. Leaves them empty when the GPU has no speed figures or
// nothing fits; the deadline's error when it passes first (never a partial
// answer). The plan is taken from `cache` when it holds it, and stored
// there when computed (nullptr: no cache); the answer is the same.
absl::Status AddAlternatives(const v1::JobSpec& job, const v1::GpuSpec& gpu,
                             const Deadline& deadline, PlanCache* cache,
                             v1::CheckResponse* response);

}  // namespace oomguard

#endif  // OOMGUARD_PLANNER_ALTERNATIVES_H_
