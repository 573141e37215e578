#include "jobspec/rl_job_builder.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "jobspec/megatron_flags.h"
#include "jobspec/rl_config_yaml.h"
#include "jobspec/rl_megatron_args.h"
#include "jobspec/rl_nemo_rl_config.h"
#include "jobspec/rl_slime_args.h"
#include "jobspec/rl_verl_config.h"

namespace oomguard {
namespace {

// The canonical name of an argv word that is a flag ("--x=1" -> "x"); empty
// for a value.
std::string FlagName(absl::string_view word) {
  if (word.size() < 3 || word.substr(0, 2) != "--") return "";
  absl::string_view body = word.substr(2);
  body = body.substr(0, body.find('='));
  return CanonicalFlagName(std::string(body));
}

}  // namespace

v1::RlFramework RecognizeRlArgv(const std::vector<std::string>& argv) {
  bool slime = false;
  for (const std::string& word : argv) {
    const std::string name = FlagName(word);
    if (name.empty()) continue;
    if (name == "perform-rl-step") return v1::RL_FRAMEWORK_MEGATRON_RL;
    slime = slime || IsSlimeFlag(name);
  }
  return slime ? v1::RL_FRAMEWORK_SLIME : v1::RL_FRAMEWORK_UNSPECIFIED;
}

bool LooksLikeRlArgv(const std::vector<std::string>& argv) {
  return RecognizeRlArgv(argv) != v1::RL_FRAMEWORK_UNSPECIFIED;
}

absl::StatusOr<v1::RlJobSpec> BuildRlJob(const v1::RlJob& job, std::vector<std::string>* notes) {
  const bool yaml = !job.config_yaml().empty();
  const bool argv = job.argv_size() > 0;
  if (yaml == argv) {
    return absl::InvalidArgumentError(
        yaml ? "give either the RL config's YAML or an argv, not both"
             : "no RL job: give veRL's or NeMo-RL's YAML config, or slime's or Megatron-LM's RL "
               "argv");
  }
  v1::RlFramework framework = job.framework();
  if (argv) {
    if (framework == v1::RL_FRAMEWORK_UNSPECIFIED) {
      framework = RecognizeRlArgv({job.argv().begin(), job.argv().end()});
    }
    switch (framework) {
      case v1::RL_FRAMEWORK_SLIME:
        return ReadSlimeArgs(job, notes);
      case v1::RL_FRAMEWORK_MEGATRON_RL:
        return ReadMegatronRlArgs(job, notes);
      case v1::RL_FRAMEWORK_UNSPECIFIED:
        return absl::InvalidArgumentError(
            "the argv is no RL job's: Megatron-LM's RL loop has --perform-rl-step, slime's "
            "argv its own flags (--rollout-num-gpus-per-engine, --colocate, --sglang-*, ...)");
      default:
        return absl::InvalidArgumentError(
            absl::StrCat(v1::RlFramework_Name(framework), " is read from YAML, not an argv"));
    }
  }
  OOMGUARD_ASSIGN_OR_RETURN(const RlConfigYaml config, RlConfigYaml::Parse(job.config_yaml()));
  if (framework == v1::RL_FRAMEWORK_UNSPECIFIED) {
    if (IsVerlConfig(config)) {
      framework = v1::RL_FRAMEWORK_VERL;
    } else if (IsNemoRlConfig(config)) {
      framework = v1::RL_FRAMEWORK_NEMO_RL;
    }
  }
  switch (framework) {
    case v1::RL_FRAMEWORK_VERL:
      return ReadVerlConfig(config, job, notes);
    case v1::RL_FRAMEWORK_NEMO_RL:
      return ReadNemoRlConfig(config, job, notes);
    case v1::RL_FRAMEWORK_UNSPECIFIED:
      return absl::InvalidArgumentError(
          "the YAML is no RL config oomguard reads: veRL's has actor_rollout_ref, NeMo-RL's "
          "policy with grpo, loss_fn or policy.megatron_cfg");
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(v1::RlFramework_Name(framework), " is read from an argv, not YAML"));
  }
}

}  // namespace oomguard
