// The `#SBATCH` lines of a batch script, read as sbatch reads them, and what
// they allocate, computed as Slurm does.
//
// Reading (sbatch's own rules): a line starting with `#SBATCH` in its first
// column; reading stops at the first line that is neither blank nor a
// comment (the first command). The lines' words form one option list: long
// (`--nodes=4`, `--nodes 4`) and short (`-N4`, `-N 4`) forms, several a
// line, quotes removed, an unquoted `#` ending the line. A later option
// overrides an earlier one. Only the options that size the job are kept:
// -N/--nodes, -n/--ntasks, --ntasks-per-node, -G/--gpus,
// --gpus-per-node, --gpus-per-task and the `gpu` entries of --gres; each GPU
// option's value is `[type:]count[,...]` (`--gres`: `gpu[:type][:count]`).
// `hetjob` ends the first component; later ones are not read (noted).
//
// Allocation (sbatch(1)): nodes are -N (a MIN-MAX range with MIN != MAX is
// only known when Slurm allocates), else --ntasks / --ntasks-per-node
// rounded up, else one node when nothing asks for more (no -n, --gpus or
// --gpus-per-task). Tasks are -n, else nodes × --ntasks-per-node. GPUs, in
// the order the Slurm hook reads the job descriptor (deploy/slurm): --gpus
// (the job's total), else GPUs per node (--gpus-per-node, else --gres) ×
// nodes, else --gpus-per-task × tasks. The batch step's SLURM_* variables
// (SLURM_JOB_NUM_NODES, SLURM_NNODES, SLURM_NTASKS, SLURM_NPROCS,
// SLURM_NTASKS_PER_NODE, SLURM_GPUS_ON_NODE, SLURM_GPUS, SLURM_GPUS_PER_NODE,
// SLURM_GPUS_PER_TASK) follow, for the launch line to use. Internal to the
// job script reader.
#ifndef OOMGUARD_JOBSCRIPT_SBATCH_OPTIONS_H_
#define OOMGUARD_JOBSCRIPT_SBATCH_OPTIONS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace oomguard::job_script_internal {

// One counting option as the script gives it.
struct SbatchCount {
  bool given = false;
  // 0 when given but not a single count (a node range, a form oomguard
  // does not read: noted).
  uint32_t value = 0;
  std::string written;  // "--nodes=4", "-N 4": for notes.
  std::string raw;      // The value as written ("h100:8").
  std::string type;     // GPU options: the GPU type; empty = untyped or mixed.
};

// The sizing options of the #SBATCH lines.
struct SbatchOptions {
  SbatchCount nodes, ntasks, ntasks_per_node;
  SbatchCount gpus, gpus_per_node, gres_gpus, gpus_per_task;
};

// What the options allocate; 0 = not known.
struct SlurmAllocation {
  uint32_t nodes = 0;
  uint32_t ntasks = 0;
  uint32_t ntasks_per_node = 0;
  uint32_t gpus = 0;
  uint32_t gpus_per_node = 0;
  std::string gpu_type;  // Empty = untyped or mixed.
  std::string how;       // "--nodes=4 x --gpus-per-node=8": how gpus was counted.
};

// Reads the #SBATCH lines of `script` into `options`; what is not read goes
// to `notes`. InvalidArgument naming the line, the option and the value for
// a value sbatch refuses too (`--nodes=abc`, `--ntasks=0`).
absl::Status ReadSbatchOptions(absl::string_view script, SbatchOptions* options,
                               std::vector<std::string>* notes);

SlurmAllocation Allocate(const SbatchOptions& options);

// The SLURM_* variables the batch step starts with (name, value).
std::vector<std::pair<std::string, std::string>> SlurmEnvironment(
    const SbatchOptions& options, const SlurmAllocation& allocation);

}  // namespace oomguard::job_script_internal

#endif  // OOMGUARD_JOBSCRIPT_SBATCH_OPTIONS_H_
