// Which source of a job's size, GPU, preset, safety margin and environment
// wins: the one precedence rule that `oomguard check` (tools/check_plan.h),
// POST /v1/check_script (http/script_check.h) and the Kubernetes webhook
// (webhook/webhook_workload.h) apply to a launch read out of a job script or
// a container command. The callers gather what each source says; this
// chooses, notes every value that a different one overrides, and makes the
// LaunchCheck (check_request.h).
//
// For each of the world size, GPUs per node, the GPU, the preset and the
// safety margin, the first source that says it wins:
//   1. the caller: what the one asking for this check states: `oomguard
//      check`'s flags, CheckScriptRequest's fields (the page's form), the
//      workload's oomguard.io/* annotations;
//   2. the scheduler's allocation: the Slurm job descriptor the job_submit
//      hook hands over (`oomguard check --job-file`); it already holds the
//      #SBATCH lines with sbatch's command-line overrides, so with it (even
//      one without a GPU count) source 5 is not read;
//   3. the script's `#OOMGUARD` directives;
//   4. the launch line's world size (torchrun --nnodes x --nproc-per-node,
//      srun's tasks, mpirun -np): the number of processes the launcher
//      starts, which is what Megatron-LM sees, whatever was allocated;
//   5. what the job requests for itself: the #SBATCH lines (nodes x GPUs a
//      node, --gpus, the GRES type), or a Kubernetes object's
//      nvidia.com/gpu resources, per-pod GPUs and GPU product label; its
//      sizes count only when the launch line states no world size (4);
//   6. for the GPU only: the scheduler's default GPU.
// The environment (PYTORCH_CUDA_ALLOC_CONF, NCCL_GRAPH_REGISTER) is
// layered instead, a later layer overriding an earlier one per variable:
// the environment the job starts with (the submission's, a container's
// `env`), then the script's own exports, then the caller's.
//
// A caller's GPU memory (`oomguard check --gpu-memory-gib`) stands for the
// GPU itself and outranks every GPU name.
#ifndef OOMGUARD_JOBSCRIPT_JOB_SOURCES_H_
#define OOMGUARD_JOBSCRIPT_JOB_SOURCES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "jobscript/check_request.h"
#include "jobscript/job_script.h"

namespace oomguard {

// What one source says about a job; 0, empty or unset = it does not say.
struct StatedValues {
  uint32_t gpus = 0;
  uint32_t gpus_per_node = 0;
  // A catalog name or alias, or a scheduler's GPU type ("h100").
  std::string gpu = {};
  std::string preset = {};
  std::optional<double> safety_margin = {};
  // PYTORCH_CUDA_ALLOC_CONF / NCCL_GRAPH_REGISTER.
  std::map<std::string, std::string> env = {};
};

// The sources of the precedence rule, in the order they win (see above).
enum class JobValueSource {
  kNone,  // No source says it.
  kCaller,
  kScheduler,
  kDirective,
  kLaunch,
  kRequest,
  kDefault,
};

// What each source says about one job, as its caller gathers it.
struct JobSources {
  // 1. The caller, and how notes name it ("the command line").
  StatedValues caller;
  std::string caller_name = "the caller";
  // The GPU's memory in bytes instead of a name (0 = not given).
  uint64_t caller_gpu_memory_bytes = 0;
  // 2. The scheduler's allocation; unset = no scheduler descriptor.
  std::optional<StatedValues> scheduler;
  // 3. The #OOMGUARD directives.
  StatedValues directives;
  // 4. The launch line's world size.
  ScriptSize launch;
  // 5. What the job requests (sizes, GPU type, the environment it starts
  // with), and how notes name its GPU type ("#SBATCH").
  ScriptSize request;
  std::string request_gpu;
  std::string request_name = "#SBATCH";
  std::map<std::string, std::string> start_env;
  // The script's own exports.
  std::map<std::string, std::string> script_env;
  // 6. The GPU when no other source names one.
  std::string default_gpu;
};

// The sources a job script states itself (ParseJobScript /
// ParseCommandWords): its #OOMGUARD directives (3), the launch line's world
// size (4), what its #SBATCH lines allocate (5) and its exports. The caller
// adds its own.
JobSources ScriptSources(const ScriptJob& job);

// The launch with every value chosen.
struct ChosenLaunch {
  // Its world size is 0 and its GPU name and memory are empty when no
  // source says them: the caller says why the job cannot be judged.
  LaunchCheck launch;
  JobValueSource gpus_from = JobValueSource::kNone;
  JobValueSource gpu_from = JobValueSource::kNone;
  // One line for every value overridden by a different one, e.g.
  // "#OOMGUARD gpus=16 ignored: the command line says 32".
  std::vector<std::string> notes;
};

// Applies the rule to `sources`; `megatron_args` are the launch's flags
// (ScriptJob::megatron_args).
// `megatron_arg_sources`: ScriptJob::megatron_arg_sources (empty: every word
// literal), kept with the words.
ChosenLaunch ChooseLaunch(const JobSources& sources, std::vector<std::string> megatron_args,
                          std::vector<std::string> megatron_arg_sources = {});

}  // namespace oomguard

#endif  // OOMGUARD_JOBSCRIPT_JOB_SOURCES_H_
