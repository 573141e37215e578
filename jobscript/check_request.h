// The one conversion from a launch read out of a job script (the Slurm
// path, tools/check_command.h) or a Kubernetes workload (webhook/) to the
// CheckRequest the service judges. job_sources.h chooses between the
// sources (the caller, the scheduler, #OOMGUARD directives, the launch,
// #SBATCH); this turns what it chose into the request, words kept as words.
#ifndef OOMGUARD_JOBSCRIPT_CHECK_REQUEST_H_
#define OOMGUARD_JOBSCRIPT_CHECK_REQUEST_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "oomguard/v1/admission.pb.h"

namespace oomguard {

// A Megatron-LM launch with everything a check needs.
struct LaunchCheck {
  // The flags after pretrain_gpt.py, one word per element
  // (ScriptJob::megatron_args): sent as MegatronJob.argv.
  std::vector<std::string> megatron_args;
  // Empty, or one per megatron_args word: the variables it holds the values
  // of (ScriptJob::megatron_arg_sources): sent as MegatronJob.argv_sources.
  std::vector<std::string> megatron_arg_sources;
  // A preset the flags override; empty = the flags are the whole command
  // line.
  std::string preset;
  // World size, > 0.
  uint32_t num_gpus = 0;
  // GPUs per node; 0 = the JobSpec default.
  uint32_t gpus_per_node = 0;
  // PYTORCH_CUDA_ALLOC_CONF / NCCL_GRAPH_REGISTER as the launch sees them.
  std::map<std::string, std::string> env;
  // The GPU: a catalog name, or (when the name is empty) its memory in
  // bytes.
  std::string gpu_name;
  uint64_t gpu_memory_bytes = 0;
  // Fraction of the GPU kept free; unset = the server's default.
  std::optional<double> safety_margin;
};

// The request of `launch`. Its words may be any bytes (a path is bytes): the
// request's strings are made valid UTF-8 by common/valid_utf8.h's rule
// (each invalid byte becomes U+FFFD), so it can be sent and is judged.
v1::CheckRequest BuildCheckRequest(const LaunchCheck& launch);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSCRIPT_CHECK_REQUEST_H_
