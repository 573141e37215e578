// The job file of `oomguard check --job-file`: what the Slurm job_submit hook
// (deploy/slurm/job_submit.lua) writes, so that no job text reaches a shell.
// A header with what the scheduler allocates, then the job script verbatim:
//
//   oomguard-job 1
//   gpus=16
//   gpus_per_node=8
//   gpu=h100
//   partition=gpu
//   <empty line>
//   <the job script, verbatim, to the end of the file>
//
// The first line is exactly "oomguard-job 1". Header lines are key=value,
// each key at most once: gpus, gpus_per_node (whole numbers, 1..1048576),
// gpu, default_gpu, partition (1-128 of [A-Za-z0-9._+:-]), and
// env.PYTORCH_CUDA_ALLOC_CONF / env.NCCL_GRAPH_REGISTER (the submission's
// environment; 0-256 of [A-Za-z0-9._+:,=-]; the script's own exports win).
// Any other line, key or value is an error naming it.
#ifndef OOMGUARD_TOOLS_JOB_ENVELOPE_H_
#define OOMGUARD_TOOLS_JOB_ENVELOPE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oomguard {

struct JobEnvelope {
  uint32_t gpus = 0;                       // 0 = not given.
  uint32_t gpus_per_node = 0;              // 0 = not given.
  std::string gpu;                         // What the scheduler allocates; empty = unknown.
  std::string default_gpu;                 // Used when nothing else names the GPU.
  std::string partition;                   // For messages only.
  std::map<std::string, std::string> env;  // The submission's environment.
  std::string script;
};

// Largest --job-file / --script accepted, in bytes.
inline constexpr size_t kMaxJobFileBytes = (size_t{16} << 20) + (size_t{64} << 10);

// InvalidArgument naming the line and the value for anything unexpected.
absl::StatusOr<JobEnvelope> ParseJobEnvelope(absl::string_view text);

// The text of the file `path` given by `flag` (--script or --job-file):
// InvalidArgument when it cannot be read or is larger than kMaxJobFileBytes.
absl::StatusOr<std::string> ReadJobFile(absl::string_view flag, const std::string& path);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_JOB_ENVELOPE_H_
