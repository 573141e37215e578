// Builds a JobSpec from the ways a job reaches oomguard: a preset name or a
// HuggingFace config.json for the model, then a Megatron-LM argument line
// (a whole command line, or overrides on top of the preset/config), the
// environment, and the GPU count. Shared by the CLI and the service.
#ifndef OOMGUARD_JOBSPEC_JOB_BUILDER_H_
#define OOMGUARD_JOBSPEC_JOB_BUILDER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

// What a job is built from (the C++ side of the request's v1::JobSource,
// once a hook or the CLI has read it).
struct JobInputs {
  // A preset name (jobspec/presets.h); empty = none.
  std::string preset;
  // The text of a HuggingFace config.json; empty = none.
  std::string hf_config_json;
  // The Megatron-LM arguments, one word per element: the whole command line
  // without a preset or config, else overrides on top of it.
  std::vector<std::string> megatron_args;
  // Empty, or one per megatron_args word: the variable it holds the value of
  // (MegatronJob.argv_sources), named in errors instead of the value.
  std::vector<std::string> megatron_arg_sources;
  // The job's environment (PYTORCH_CUDA_ALLOC_CONF, NCCL_GRAPH_REGISTER).
  std::map<std::string, std::string> env;
  // World size, > 0.
  uint32_t num_gpus = 0;
};

// Notes (assumed defaults) are appended to `notes`; the settings oomguard
// does not model go into JobSpec.unmodelled_settings.
absl::StatusOr<v1::JobSpec> BuildJob(const JobInputs& inputs, std::vector<std::string>* notes);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_JOB_BUILDER_H_
