// Megatron-Core's rule for the shared-expert overlap (see
// shared_expert_overlap.h).
#include "estimator/shared_expert_overlap.h"

namespace oomguard {

std::optional<std::string> SharedExpertOverlapConflict(const ValidatedJob& j) {
  if (!j.parallelism.shared_expert_overlap || j.moe.shared_ffn == 0) return std::nullopt;
  if (j.moe.allgather_dispatcher) return "it needs the alltoall or flex token dispatcher";
  if (j.recompute.HasModule(v1::RECOMPUTE_MODULE_SHARED_EXPERTS)) {
    return "it cannot run with the shared_experts module recomputed";
  }
  return std::nullopt;
}

}  // namespace oomguard
