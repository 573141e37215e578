// The memory of one colocated RL step, phase by phase: generate, weight
// sync, log-prob, reference log-prob, critic, actor update. Each phase is
// what stays resident through it (the trainer's states its residency keeps,
// the reference copy, the critic, the sleeping engine) plus its own
// transient; the step's peak is the largest phase. Pure computation.
//
// Per trainer PP rank r, each phase's terms (RlTerm, summing to its peak):
//  - generate: the actor's states its residency keeps (bf16 weights, main
//    gradients, optimizer states; release_all keeps none), the reference's
//    GPU copy, the critic's kept states, the CUDA context and NCCL buffers
//    (the actor estimate's overheads outside PyTorch's allocator, allocator
//    slack left out), and the engine generating (rollout_engine_memory.h,
//    sized beside the most any rank keeps); the engine's failure is the
//    phase's.
//  - weight_sync: the same with the actor's weights loaded (veRL's
//    rollout_mode loads them), the engine's weights, its asleep part other
//    than its weights (KV not resumed yet), and the bucket: bucket_bytes,
//    else free_fraction x what the other terms leave free (none if neither,
//    nor for Megatron's engine on the trainer's own weights).
//  - log_prob / ref_log_prob: the resident set with the weights on the GPU,
//    the engine asleep, and the forward-only pass (forward_only_memory.h) at
//    LogProbSpec's tokens (0 = actor.training.seq_length), with the
//    allocator's slack for that churn (overheads.h AllocatorSlackOf). The
//    reference's pass: GPU_COPY resident all along, OFFLOADED_COPY loaded
//    for it, SWAPPED_IN in place of the actor's weights; its LogProbSpec's
//    unset fields follow log_prob's, its entropy is its own.
//  - critic: the critic's training peak (its JobSpec with model.value_head
//    and untied embeddings, its own CUDA context and NCCL) beside the
//    actor's kept states and NCCL buffers, the reference copy and the
//    engine asleep. The critic's rank sharing actor rank r's GPUs is rank r
//    when both pipelines are as deep, else the critic's largest (a note).
//  - actor_update: the actor's Megatron-Core estimate of rank r (its parts)
//    beside the engine asleep, the reference copy and the critic's kept
//    states. Its pipeline holds RlJobSpec.train_microbatches per step (the
//    actor's global batch is set to that x DP), 0 = full: 2 x PP x VPP (more
//    than any schedule's warm-up), 1 without a pipeline.
//
// Upper bounds: as peak_bound.h, point + z(coverage) x sqrt(sum of
// variances). Each term here carries one standard deviation as a fraction
// of it: trainer, reference and critic states 1 % (the estimator's static
// spread), the CUDA context and NCCL 35 % (as overheads.cc), the
// forward-only working set 25 % (a bound, like the backward working set),
// logits 5 % (exact shapes), the bucket 0, allocator slack its own rule's.
// The engine's terms carry the engine model's own spreads: generate_sd_bytes
// for its parts while generating (taken together: inside its budget an
// error moves the KV pool the other way), asleep_sd_bytes for what stays
// asleep, its weights exact. The actor update's and the critic's own
// estimates enter with their own variance, ((upper - point) / z)^2, so
// their part of the bound is theirs.
//
// Host bytes per node: what the residencies move off the GPU (actor and
// critic), --optimizer-cpu-offload's share, the engine's level-1 weights
// and the reference's host copy (OFFLOADED_COPY, SWAPPED_IN), on the rank
// that needs the most, times min(actor.runtime.gpus_per_node, GPUs).
//
// colocated = false (trainer and engine on separate GPUs) is not modelled:
// the readers record it as an unmodelled setting (so a Check does not judge
// it unless told to) and the estimate is of the colocated step, which holds
// more, with a note; it is not refused, since a reader can produce it.
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
