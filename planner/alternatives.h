// The planner's answer inside an admission check: for a job that does not
// fit, the fastest configurations that fit on the same GPUs; for one that
// fits, a clearly faster one (CheckResponse.alternatives). Searched within a
// time budget so that Check stays fast; the job's micro-batch and global
// batch sizes and its sequence are kept, its parallel layout and recompute
// searched.
#ifndef OOMGUARD_PLANNER_ALTERNATIVES_H_
#define OOMGUARD_PLANNER_ALTERNATIVES_H_

#include "absl/time/time.h"
#include "oomguard/v1/admission.pb.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

// Time the search may take inside one check (then no alternatives).
inline constexpr absl::Duration kAlternativesBudget = absl::Milliseconds(50);
inline constexpr int kMaxAlternatives = 3;

// Fills response->alternatives for `job` checked on `gpu` with the check's
// safety margin, searching until `deadline` or `budget` from now, whichever
// comes first. Leaves them empty when the GPU has no speed figures, nothing
// fits or the time runs out.
void AddAlternatives(const v1::JobSpec& job, const v1::GpuSpec& gpu, absl::Time deadline,
                     v1::CheckResponse* response, absl::Duration budget = kAlternativesBudget);

}  // namespace oomguard

#endif  // OOMGUARD_PLANNER_ALTERNATIVES_H_
