// Megatron-Core's rule for `--moe-shared-expert-overlap` (the shared experts
// run beside the token dispatcher's communication), in one place: admission
// flags a job that sets it where Megatron-Core refuses it, and the planner
// refuses to plan such a job. The estimate takes the flag as given (it has no
// memory effect).
#ifndef OOMGUARD_ESTIMATOR_SHARED_EXPERT_OVERLAP_H_
#define OOMGUARD_ESTIMATOR_SHARED_EXPERT_OVERLAP_H_

#include <optional>
#include <string>

#include "estimator/validated_job.h"

namespace oomguard {

// Why Megatron-Core refuses `--moe-shared-expert-overlap` for `j`, or nullopt
// when `j` does not set it or Megatron-Core accepts it. The ValueErrors of
// TransformerConfig.__post_init__ (megatron/core/transformer/
// transformer_config.py), both only for a model with shared experts
// (moe_shared_expert_intermediate_size set; without them the flag does
// nothing): the alltoall or flex token dispatcher, and no `shared_experts`
// among the recomputed modules.
std::optional<std::string> SharedExpertOverlapConflict(const ValidatedJob& j);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_SHARED_EXPERT_OVERLAP_H_
