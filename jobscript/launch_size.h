// The world size a Megatron-LM launch starts, read from its launcher words
// the way the launchers compute it:
//   torchrun (or `python -m torch.distributed.run` / `.launch`): --nnodes ×
//     --nproc-per-node (also --nproc_per_node; torchrun's defaults 1 and 1);
//     `--nnodes=MIN:MAX` with MIN != MAX is elastic (noted, not read);
//     --nproc-per-node=gpu|auto is the node's GPUs (SLURM_GPUS_ON_NODE).
//     Under srun, srun starts the torchrun agents; torchrun decides.
//   srun starting the training processes itself: -n/--ntasks, else nodes
//     (-N/--nodes, else the allocation's) × --ntasks-per-node (srun's, else
//     the allocation's), else the allocation's tasks, else one task a node.
//   mpirun / mpiexec: -np / -n / --np.
// A value only known when the job runs, or a word that may be an option
// (`torchrun $DISTRIBUTED_ARGS ...`), leaves the size unknown, with a note.
// Internal to the job script reader.
#ifndef OOMGUARD_JOBSCRIPT_LAUNCH_SIZE_H_
#define OOMGUARD_JOBSCRIPT_LAUNCH_SIZE_H_

#include <cstddef>
#include <string>
#include <vector>

#include "jobscript/expanded_word.h"
#include "jobscript/job_script.h"
#include "jobscript/sbatch_options.h"

namespace oomguard::job_script_internal {

// The size of the launch whose launcher is fields[launcher] and whose
// training script is fields[script]; `allocation` is what the #SBATCH
// lines allocate (srun's defaults). gpus = 0 when not stated or not known;
// why goes to `notes`.
ScriptSize LaunchSize(const std::vector<Field>& fields, size_t launcher, size_t script,
                      const SlurmAllocation& allocation, int line, std::vector<std::string>* notes);

}  // namespace oomguard::job_script_internal

#endif  // OOMGUARD_JOBSCRIPT_LAUNCH_SIZE_H_
