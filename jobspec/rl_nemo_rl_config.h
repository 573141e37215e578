// Reads NeMo-RL's config (GRPO with the Megatron policy, as YAML) into an
// RlJobSpec: the actor from policy.{model_name,megatron_cfg,precision}, the
// training and log-prob budgets from policy.sequence_packing (or
// dynamic_batching), the engine from policy.generation.vllm_cfg, the
// reference from loss_fn.reference_policy_kl_penalty, the world from
// cluster.*. Keys and defaults as NeMo-RL's examples/configs/grpo_math_1B.yaml,
// grpo_math_1B_megatron.yaml, nemo_rl/models/policy/__init__.py and
// nemo_rl/algorithms/grpo.py (7ea279abf) give them; a config that inherits
// (`defaults:`) is read as written, its base's keys taking their defaults
// here. The keys read are NemoRlConfigKeys().
#ifndef OOMGUARD_JOBSPEC_RL_NEMO_RL_CONFIG_H_
#define OOMGUARD_JOBSPEC_RL_NEMO_RL_CONFIG_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jobspec/rl_config_yaml.h"
#include "jobspec/rl_reader.h"
#include "oomguard/v1/rl_job.pb.h"

namespace oomguard {

// Every key the reader reads, with what it sets.
absl::Span<const RlConfigKey> NemoRlConfigKeys();

// Whether `config` is NeMo-RL's: `policy` with `grpo`, `loss_fn` or
// `policy.megatron_cfg`.
bool IsNemoRlConfig(const RlConfigYaml& config);

// The key the reader reads for the actor's Megatron-LM setting `flag` (the
// flag table's name): "policy.megatron_cfg.tensor_model_parallel_size";
// recompute's under activation_checkpointing, full recompute's method and
// layers implied; nullopt when it reads none.
std::optional<RlMegatronKeyWriting> NemoRlMegatronKeyFor(absl::string_view flag);

absl::StatusOr<v1::RlJobSpec> ReadNemoRlConfig(const RlConfigYaml& config, const v1::RlJob& job,
                                               std::vector<std::string>* notes);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_RL_NEMO_RL_CONFIG_H_
