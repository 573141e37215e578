#include "jobspec/job_builder.h"

#include "common/status_macros.h"
#include "jobspec/environment.h"
#include "jobspec/hf_config.h"
#include "jobspec/megatron_args.h"
#include "jobspec/presets.h"

namespace oomguard {

absl::StatusOr<v1::JobSpec> BuildJob(const JobInputs& inputs, std::vector<std::string>* notes) {
  if (!inputs.preset.empty() && !inputs.hf_config_json.empty()) {
    return absl::InvalidArgumentError("give either a preset or a HuggingFace config, not both");
  }
  v1::JobSpec job;
  ArgsMode mode = ArgsMode::kFullCommandLine;
  if (!inputs.preset.empty()) {
    OOMGUARD_ASSIGN_OR_RETURN(*job.mutable_model(), FindPreset(inputs.preset));
    mode = ArgsMode::kOverrides;
  } else if (!inputs.hf_config_json.empty()) {
    OOMGUARD_ASSIGN_OR_RETURN(*job.mutable_model(), ParseHfConfig(inputs.hf_config_json));
    mode = ArgsMode::kOverrides;
  }
  if (mode == ArgsMode::kOverrides) {
    // Presets and HF configs describe bf16 training.
    job.mutable_precision()->set_params_dtype(v1::DTYPE_BF16);
  }
  OOMGUARD_RETURN_IF_ERROR(
      ApplyMegatronArgs(inputs.megatron_args, mode, &job, notes, inputs.megatron_arg_sources));
  OOMGUARD_RETURN_IF_ERROR(ApplyEnvironment(inputs.env, &job));
  job.mutable_parallelism()->set_num_gpus(inputs.num_gpus);
  return job;
}

}  // namespace oomguard
