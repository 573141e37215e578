// The memory of one colocated RL step, phase by phase: generate, weight
// sync, log-prob, reference log-prob, critic, actor update. Each phase is
// what stays resident through it (the trainer's states its residency keeps,
// the reference copy, the critic, the sleeping engine) plus its own
// transient; the step's peak is the largest phase. Pure computation.
#ifndef OOMGUARD_ESTIMATOR_RL_STEP_H_
#define OOMGUARD_ESTIMATOR_RL_STEP_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/deadline.h"
#include "estimator/peak_bound.h"
#include "oomguard/v1/rl_job.pb.h"
#include "oomguard/v1/rl_report.pb.h"

namespace oomguard {

struct RlStepOptions {
  // The GPU's total memory (the engine's fraction is of it) and its name
  // for the report (may be empty). Required, > 0 and at most 2^50.
  uint64_t gpu_memory_bytes = 0;
  std::string gpu_name;
  // Coverage of the upper bounds, in [0.5, 0.999].
  double upper_bound_coverage = kDefaultUpperBoundCoverage;
  // Fill the actor update's full report (RlStepReport.actor_update) with
  // its overheads' basis lines.
  bool actor_report = true;
  Deadline deadline{};
};

// Estimates every phase of `job`. InvalidArgument naming the RlJobSpec
// field (e.g. "actor.parallelism.tensor_parallel", "rollout.memory_fraction")
// for a bad value. The report's notes start with one per
// RlJobSpec.unmodelled_settings.
absl::StatusOr<v1::RlStepReport> EstimateRlStep(const v1::RlJobSpec& job,
                                                const RlStepOptions& options);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_RL_STEP_H_
