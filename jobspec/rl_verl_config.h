// Reads veRL's resolved Hydra config (Megatron workers, as YAML) into an
// RlJobSpec: the actor from actor_rollout_ref.{model,actor}, the engine from
// actor_rollout_ref.rollout, the reference from actor_rollout_ref.ref, the
// critic from critic.* (adv_estimator gae), lengths from data.*, the world
// from trainer.*. Keys and defaults as veRL's
// verl/trainer/config/_generated_ppo_megatron_trainer.yaml (b178a3cd5) and
// verl/workers/config/rollout.py give them; the keys read are
// VerlConfigKeys().
#ifndef OOMGUARD_JOBSPEC_RL_VERL_CONFIG_H_
#define OOMGUARD_JOBSPEC_RL_VERL_CONFIG_H_

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
absl::Span<const RlConfigKey> VerlConfigKeys();

// Whether `config` is veRL's: it has `actor_rollout_ref`.
bool IsVerlConfig(const RlConfigYaml& config);

// The key the reader reads for the Megatron-LM setting `flag` (the flag
// table's name, "tensor-model-parallel-size") of the actor, or of the critic:
// "actor_rollout_ref.actor.megatron.tensor_model_parallel_size",
// "critic.optim.override_optimizer_config.optimizer_cpu_offload"; nullopt
// when it reads none.
std::optional<RlMegatronKeyWriting> VerlMegatronKeyFor(absl::string_view flag, bool critic);

absl::StatusOr<v1::RlJobSpec> ReadVerlConfig(const RlConfigYaml& config, const v1::RlJob& job,
                                             std::vector<std::string>* notes);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_RL_VERL_CONFIG_H_
