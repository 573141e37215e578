// The settings of an RL step that a recommendation changes, and how each
// framework spells them: the one table of RL config keys (the readers in
// jobspec/ and the report's terms name keys from it).
#ifndef OOMGUARD_ESTIMATOR_RL_KNOBS_H_
#define OOMGUARD_ESTIMATOR_RL_KNOBS_H_

#include <string>
#include <string_view>

#include "oomguard/v1/rl_job.pb.h"

namespace oomguard {

enum class RlKnob {
  kTrainTokens,             // actor.training.seq_length (packed tokens per micro-batch).
  kLogProbTokens,           // log_prob.max_tokens_per_microbatch.
  kLogProbChunk,            // log_prob.chunk_tokens.
  kRefLogProbTokens,        // reference.log_prob.max_tokens_per_microbatch.
  kParamOffload,            // actor_residency.param_offload.
  kGradOffload,             // actor_residency.grad_offload.
  kOptimizerOffload,        // actor_residency.optimizer_offload.
  kRefParamOffload,         // reference.placement GPU_COPY -> OFFLOADED_COPY.
  kCriticParamOffload,      // critic.residency.param_offload.
  kCriticGradOffload,       // critic.residency.grad_offload.
  kCriticOptimizerOffload,  // critic.residency.optimizer_offload.
  kCriticTrainTokens,       // critic.job.training.seq_length.
  kEngineMemoryFraction,    // rollout.memory_fraction.
  kEngineKvBuffer,          // rollout.kv_buffer_bytes.
  kEngineTensorParallel,    // rollout.tensor_parallel.
  kEngineCudaGraphs,        // rollout.cuda_graphs.
  kEngineSleep,             // rollout.sleep.
  kWeightSyncBucket,        // weight_sync.bucket_bytes.
};

// The key or flag as `framework` spells it, e.g.
// "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu" (veRL),
// "policy.logprob_chunk_size" (NeMo-RL), "--log-probs-max-tokens-per-gpu"
// (slime). Empty when the framework has none.
std::string_view RlKnobKey(v1::RlFramework framework, RlKnob knob);

// The setting as a user writes it in that framework's config, with the
// value `job` holds: "key=value" for YAML keys (Hydra's override syntax),
// "--flag value" (or "--flag" for a switch) for argv. Empty when the
// framework has no key for it.
std::string RlKnobSetting(const v1::RlJobSpec& job, RlKnob knob);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_RL_KNOBS_H_
