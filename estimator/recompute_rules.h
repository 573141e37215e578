// Megatron-Core's rules for selective recompute, in one place: which modules
// a selective recompute covers when none are named, and which module needs
// which setting. Validation (validated_job.h) enforces them; admission
// (admission/admission.h) follows them when it recommends a change.
#ifndef OOMGUARD_ESTIMATOR_RECOMPUTE_RULES_H_
#define OOMGUARD_ESTIMATOR_RECOMPUTE_RULES_H_

#include <vector>

#include "oomguard/v1/job.pb.h"

namespace oomguard {

// The modules a job recomputes selectively: `recompute.modules` as given, or
// Megatron-LM's default `--recompute-modules core_attn` when the list is
// empty (megatron/training/arguments.py). Empty unless the granularity is
// SELECTIVE.
std::vector<v1::RecomputeModule> SelectiveRecomputeModules(const v1::RecomputeSpec& recompute);

// Whether recomputing `module` on an MoE model needs
// model.moe_grouped_gemm: Megatron-Core recomputes the expert activation
// (moe_act) only inside the grouped-GEMM experts (TEGroupedMLP's
// activation checkpoint in megatron/core/transformer/moe/experts.py).
bool RecomputeNeedsGroupedGemm(v1::RecomputeModule module);

// Whether `covered` already recomputes what `module` would: `moe`
// recomputes the whole MoE layer, its activation (moe_act) included.
bool RecomputeModuleCovers(v1::RecomputeModule covered, v1::RecomputeModule module);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_RECOMPUTE_RULES_H_
