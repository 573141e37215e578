// Megatron-Core's rule for the EP all-to-all overlap (see
// expert_parallel_overlap.h).
#include "estimator/expert_parallel_overlap.h"

#include "absl/strings/str_cat.h"

namespace oomguard {
namespace {

constexpr char kTooManyMtpLayers[] = "it supports at most one MTP layer";

// The first condition of the job's own that `j` breaks (no parallel size,
// micro-batch or recompute setting changes it), as a constant sentence, or
// null: no allocation, for the planner's every setting.
const char* JobRefusal(const ValidatedJob& j) {
  if (j.runtime.megatron_core < kFirstMegatronCoreWithExpertParallelOverlap) {
    return "it needs Megatron-Core 0.14 or newer";
  }
  if (j.moe.experts == 0) return "it needs a model with experts (MoE)";
  if (j.moe.allgather_dispatcher) return "it needs the alltoall or flex token dispatcher";
  if (j.precision.param_bytes >= 4) return "it needs bf16 or fp16 parameters";
  if (j.parallelism.shared_expert_overlap) return "it cannot run with --moe-shared-expert-overlap";
  if (j.model.mtp_layers > 1) return kTooManyMtpLayers;
  return nullptr;
}

// The first condition `j` breaks, the job's own before its setting's.
const char* Refusal(const ValidatedJob& j) {
  if (const char* why = JobRefusal(j)) return why;
  const Parallelism& par = j.parallelism;
  if (par.ep <= 1) return "it needs expert parallelism (EP > 1)";
  if (par.pp > 1 && par.vpp <= 1) {
    return "with pipeline parallelism it needs virtual pipeline stages (VPP > 1)";
  }
  if (j.recompute.granularity == v1::RECOMPUTE_GRANULARITY_FULL) {
    return "it cannot run with full recompute";
  }
  if (j.recompute.HasModule(v1::RECOMPUTE_MODULE_MOE)) {
    return "it cannot run with the moe module recomputed";
  }
  return nullptr;
}

// The sentence for `why`, with the model's MTP depth where that is the reason.
std::optional<std::string> Sentence(const ValidatedJob& j, const char* why) {
  if (why == nullptr) return std::nullopt;
  if (why == kTooManyMtpLayers) {
    return absl::StrCat(why, " (the model has ", j.model.mtp_layers, ")");
  }
  return why;
}

}  // namespace

bool ExpertParallelOverlapAccepted(const ValidatedJob& j) { return Refusal(j) == nullptr; }

std::optional<std::string> ExpertParallelOverlapConflict(const ValidatedJob& j) {
  return Sentence(j, Refusal(j));
}

std::optional<std::string> ExpertParallelOverlapJobConflict(const ValidatedJob& j) {
  return Sentence(j, JobRefusal(j));
}

}  // namespace oomguard
