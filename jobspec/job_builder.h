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

struct JobSource {
  std::string preset;          // Empty = none.
  std::string hf_config_json;  // Empty = none.
  std::vector<std::string> megatron_args;
  std::map<std::string, std::string> env;
  uint32_t num_gpus = 0;
};

// Notes (ignored flags, assumed defaults) are appended to `notes`.
absl::StatusOr<v1::JobSpec> BuildJob(const JobSource& source, std::vector<std::string>* notes);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_JOB_BUILDER_H_
