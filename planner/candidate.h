// One planned configuration as the plan returns it (v1::PlanCandidate): its
// sizes, recompute as text, memory per rank, predicted speed, the reasons for
// its rank, and the Megatron-LM arguments that run it.
#ifndef OOMGUARD_PLANNER_CANDIDATE_H_
#define OOMGUARD_PLANNER_CANDIDATE_H_

#include <string>

#include "estimator/estimator.h"
#include "estimator/validated_job.h"
#include "oomguard/v1/job.pb.h"
#include "oomguard/v1/plan.pb.h"
#include "planner/step_time.h"

namespace oomguard {

// "none", "selective core_attn,layernorm", "full uniform 1", "full block 2".
std::string RecomputeText(const ValidatedJob& j);

// The Megatron-LM arguments that set `j`'s parallel sizes, batch, recompute
// and optimizer, written from `job` (the candidate's JobSpec, which sets its
// sizes and batch; a field it leaves unset is left out) by the writer beside
// the flag table (jobspec/megatron_args_writer.h), with the overlap flags
// the step-time model assumes.
std::string CandidateArgs(const ValidatedJob& j, const v1::JobSpec& job);

// The candidate for `job`: `usable_bytes` is the GPU memory after the margin;
// its worst rank and headroom are by the device upper bound when
// `compare_upper_bound`, else by the point estimate.
v1::PlanCandidate DescribeCandidate(const v1::JobSpec& job, const ValidatedJob& j,
                                    const StepTime& t, const PeakEstimate& peaks,
                                    uint64_t usable_bytes, bool compare_upper_bound);

// Sets the reasons of `c` (two or three, largest effect first), against the
// plan's best throughput `best_tokens_per_gpu_per_second`.
void SetReasons(double best_tokens_per_gpu_per_second, v1::PlanCandidate* c);

}  // namespace oomguard

#endif  // OOMGUARD_PLANNER_CANDIDATE_H_
