// Megatron-Core's rule for `--overlap-moe-expert-parallel-comm` (the MoE
// all-to-all of one micro-batch hidden behind another's compute, in the
// combined 1F1B schedule), in one place: admission flags a job that sets it
// where Megatron-Core refuses it, and the planner turns it on only where
// Megatron-Core accepts it. The estimate itself takes the flag as given (its
// memory: combined forward-backward steps, and with virtual stages one more
// warm-up forward, pipeline_schedule.h).
#ifndef OOMGUARD_ESTIMATOR_EXPERT_PARALLEL_OVERLAP_H_
#define OOMGUARD_ESTIMATOR_EXPERT_PARALLEL_OVERLAP_H_

#include <optional>
#include <string>

#include "estimator/software_versions.h"
#include "estimator/validated_job.h"

namespace oomguard {

// The first release with the flag (Megatron-LM merge request 3470, "Support
// EP A2A overlap at PP=1", first tagged in core_v0.14.0).
inline constexpr SoftwareVersion kFirstMegatronCoreWithExpertParallelOverlap{0, 14};

// Why Megatron-Core would refuse the overlap for `j` (whether or not `j` sets
// it), or nullopt when it accepts it: a release before
// kFirstMegatronCoreWithExpertParallelOverlap, or one of the assertions of
// TransformerConfig.__post_init__ (megatron/core/transformer/
// transformer_config.py). The job's own conditions come first: a model with
// experts; the alltoall or flex token dispatcher; bf16 or fp16 parameters; no
// `--moe-shared-expert-overlap`; at most one MTP layer. Then the setting's:
// expert parallelism (EP > 1); with PP > 1, virtual pipeline stages (the
// interleaved schedule; Megatron-LM turns a VPP of 1 into None); no full
// recompute and no `moe` among the recomputed modules.
std::optional<std::string> ExpertParallelOverlapConflict(const ValidatedJob& j);

// The job's own conditions alone: why Megatron-Core refuses the overlap for
// `j` whatever its parallel sizes, micro-batch and recompute (the planner
// refuses a plan of a job that sets the flag with one of these), or nullopt.
std::optional<std::string> ExpertParallelOverlapJobConflict(const ValidatedJob& j);

// Whether Megatron-Core accepts the overlap for `j`: the same rule without
// the sentence (the planner asks it of every setting it tries).
bool ExpertParallelOverlapAccepted(const ValidatedJob& j);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_EXPERT_PARALLEL_OVERLAP_H_
