// Megatron-Core's rules for the micro-batch groups of its interleaved 1F1B
// schedule, in one place: the settings it refuses when the first step
// starts. Validation (validated_job.h) enforces them; the planner and
// admission's recommendations skip what validation refuses.
#ifndef OOMGUARD_ESTIMATOR_INTERLEAVED_SCHEDULE_RULES_H_
#define OOMGUARD_ESTIMATOR_INTERLEAVED_SCHEDULE_RULES_H_

#include "absl/status/status.h"
#include "estimator/validated_job.h"

namespace oomguard {

// With virtual pipeline stages (parallelism.vpp > 1), Megatron-Core's
// forward_backward_pipelining_with_interleaving
// (megatron/core/pipeline_parallel/schedules.py) raises unless the group
// size g (--microbatch-group-size-per-virtual-pipeline-stage, default PP:
// ModelParallelConfig.__post_init__ in megatron/core/model_parallel_config.py)
// is at least PP and at most the micro-batches per iteration n, and the last
// group, n mod g, is empty or holds at least PP. INVALID_ARGUMENT naming
// the flags and their values otherwise; `group_size_given` says whether g
// was given or is the default. OK without virtual stages.
absl::Status CheckMicroBatchGroups(const Parallelism& parallelism, const TrainingSettings& training,
                                   bool group_size_given);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_INTERLEAVED_SCHEDULE_RULES_H_
