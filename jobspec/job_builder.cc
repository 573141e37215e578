#include "jobspec/job_builder.h"

#include "jobspec/hf_config.h"
#include "jobspec/megatron_args.h"
#include "jobspec/presets.h"

namespace oomguard {

absl::StatusOr<v1::JobSpec> BuildJob(const JobSource& source, std::vector<std::string>* notes) {
  if (!source.preset.empty() && !source.hf_config_json.empty()) {
    return absl::InvalidArgumentError("give either a preset or a HuggingFace config, not both");
  }
  v1::JobSpec job;
  ArgsMode mode = ArgsMode::kFullCommandLine;
  if (!source.preset.empty()) {
    absl::StatusOr<v1::ModelSpec> model = FindPreset(source.preset);
    if (!model.ok()) return model.status();
    *job.mutable_model() = *std::move(model);
    mode = ArgsMode::kOverrides;
  } else if (!source.hf_config_json.empty()) {
    absl::StatusOr<v1::ModelSpec> model = ParseHfConfig(source.hf_config_json);
    if (!model.ok()) return model.status();
    *job.mutable_model() = *std::move(model);
    mode = ArgsMode::kOverrides;
  }
  if (mode == ArgsMode::kOverrides) {
    // Presets and HF configs describe bf16 training.
    job.mutable_precision()->set_params_dtype(v1::DTYPE_BF16);
  }
  if (absl::Status s = ApplyMegatronArgs(source.megatron_args, mode, &job, notes); !s.ok()) {
    return s;
  }
  ApplyEnvironment(source.env, &job);
  job.mutable_parallelism()->set_num_gpus(source.num_gpus);
  return job;
}

}  // namespace oomguard
