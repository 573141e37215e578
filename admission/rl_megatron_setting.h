// A Megatron-Core change of an RL job's actor (or critic), one of the
// recommendation ladder's (recommendations.h), written as the RL framework's
// own setting: veRL's and NeMo-RL's config keys, from the same tables their
// readers read (jobspec/rl_verl_config.h, rl_nemo_rl_config.h); slime's and
// Megatron-LM's RL loop's Megatron-LM flags, as the writer beside the flag
// table writes them (jobspec/megatron_args_writer.h).
#ifndef OOMGUARD_ADMISSION_RL_MEGATRON_SETTING_H_
#define OOMGUARD_ADMISSION_RL_MEGATRON_SETTING_H_

#include <optional>
#include <string>

#include "admission/recommendations.h"
#include "oomguard/v1/job.pb.h"
#include "oomguard/v1/rl_job.pb.h"

namespace oomguard {

// Whose Megatron job a change is of.
enum class RlTrainer { kActor, kCritic };

// The setting `change` shows in `framework`, written from `changed`, the
// actor's (or critic's) JobSpec after it: Hydra overrides "key=value" for
// veRL and NeMo-RL ("actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4",
// "policy.megatron_cfg.activation_checkpointing=true
// policy.megatron_cfg.recompute_granularity=full"), SettingText for slime
// and Megatron-LM's RL loop. nullopt when the framework has no key for one
// of the change's settings (the change is then not recommended), or for an
// environment setting.
std::optional<std::string> RlMegatronSetting(v1::RlFramework framework, RlTrainer trainer,
                                             const v1::JobSpec& changed, const JobChange& change);

}  // namespace oomguard

#endif  // OOMGUARD_ADMISSION_RL_MEGATRON_SETTING_H_
