// Finds the Megatron-LM training launch in a job script (Slurm batch script,
// container command) and reads its arguments, without running anything.
//
// Used by admission hooks: the Slurm job_submit hook hands the batch script to
// `oomguard check`, the Kubernetes webhook hands a pod's command and args. The
// text is controlled by whoever submits the job, so it is only ever read:
// `$(...)`, backticks, arithmetic and variables not assigned literally in the
// same script are never evaluated; a word that depends on them is dropped
// (with the flag it is the value of) and a note says so.
//
// What counts as a launch: a command whose first word (after `exec`, `env`,
// `nohup`, `time`, prefix assignments, `then`/`do`/`{`) is `torchrun`,
// `python*`, `srun`, `mpirun` or `mpiexec`, followed somewhere by a
// Megatron-LM training script oomguard models: a file whose basename matches
// `pretrain_gpt*.py`, `pretrain_llama*.py`, `pretrain_hybrid*.py` or
// `pretrain_mamba*.py` (hybrid Mamba models, read from the same flags), or
// `-m MODULE` whose last component is such a name
// (`-m megatron.training.pretrain_gpt`). Other Megatron-LM entry points
// (pretrain_bert.py, pretrain_t5.py, pretrain_vlm.py, ...) are not modelled:
// not found, with a note. `srun bash -c "<script>"` / `sh -c` is read as a script. The first
// launch wins; later ones are noted.
//
// Variables: `NAME=value`, `export NAME=value`, `declare/local/readonly/
// typeset [-a|-x] NAME=value`, `NAME+=value`, arrays `NAME=(a b c)` and
// `NAME+=(d)`, `unset NAME`, in the order they appear (control flow is not
// followed). `$NAME`, `${NAME}`, `${NAME[@]}`, `${NAME[*]}`, `${NAME[N]}` and
// `${NAME:-default}` (also `-`, `:=`, `=`, `:+`, `+`) are substituted with
// bash's quoting and word-splitting rules. Redirections, heredocs and
// comments are skipped.
//
// The job's size, from the script's own lines: the launch's world size
// (launch_size.h: torchrun --nnodes x --nproc-per-node, srun's tasks,
// mpirun -np) and what the `#SBATCH` lines allocate (sbatch_options.h:
// nodes x GPUs a node, --gpus, tasks x GPUs a task, the GRES type). The
// batch step's SLURM_* variables (SLURM_NNODES, SLURM_GPUS_ON_NODE, ...)
// are known from the #SBATCH lines, so the launch line may use them. When
// the two sizes differ a note says so; the launch's is the one Megatron-LM
// sees (its world size is the number of processes the launcher starts,
// whatever Slurm allocated), so `oomguard check` judges that one.
//
// Directives: lines starting with `#OOMGUARD` (leading blanks allowed), then
// blank-separated `key=value` items: preset=NAME, gpu=NAME, gpus=N,
// gpus-per-node=N, safety-margin=F (in [0, 1)), skip (or skip=true|false).
// A later directive overrides an earlier one.
#ifndef OOMGUARD_JOBSCRIPT_JOB_SCRIPT_H_
#define OOMGUARD_JOBSCRIPT_JOB_SCRIPT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/deadline.h"

namespace oomguard {

// Largest script ParseJobScript reads, in bytes.
inline constexpr size_t kMaxJobScriptBytes = size_t{16} << 20;

// Most words, and bytes of words (each counted with one separator), of one
// command the reader expands (a possible launch) or of a container's
// command + args. A launch past either is one oomguard cannot read
// (ResourceExhausted naming the one passed), e.g. a data blend of 32,768
// weight/path pairs (65,537 words with its flag).
inline constexpr size_t kMaxCommandWords = size_t{1} << 16;
inline constexpr size_t kMaxCommandBytes = size_t{1} << 20;

// A job size a script states; gpus = 0: not stated or not known.
struct ScriptSize {
  uint32_t gpus = 0;
  uint32_t gpus_per_node = 0;  // 0 = not known.
  // How it was counted, for notes: "torchrun --nnodes 4 x --nproc-per-node 8".
  std::string how;
};

// What a job script or a container command says about a Megatron-LM job.
struct ScriptJob {
  // A Megatron-LM training launch was found.
  bool found = false;
  // The flags after pretrain_gpt.py (or equivalent), variables substituted
  // textually; one word per element.
  std::vector<std::string> megatron_args;
  // One per megatron_args word: the variables whose values it holds, as
  // written ("$MBS", "$(WANDB_API_KEY)"; several joined by ", "), empty for
  // a literal word. Sent as MegatronJob.argv_sources: errors name them and
  // never show the value, which may be a secret from the environment.
  std::vector<std::string> megatron_arg_sources;
  // From "#OOMGUARD preset=NAME" (empty = none).
  std::string preset;
  // From "#OOMGUARD gpu=NAME" (empty = none).
  std::string gpu;
  // From "#OOMGUARD gpus=N" (0 = none).
  uint32_t num_gpus = 0;
  // From "#OOMGUARD gpus-per-node=N" (0 = none).
  uint32_t gpus_per_node = 0;
  // From "#OOMGUARD safety-margin=F" (unset = none).
  std::optional<double> safety_margin;
  // The world size the launch starts (torchrun, srun, mpirun).
  ScriptSize launch_size;
  // What the #SBATCH lines allocate, and the GPU type they name (a GRES
  // type such as "h100" of gpu:h100:8; empty = none or several).
  ScriptSize allocated;
  std::string allocated_gpu_type;
  // "#OOMGUARD skip": the script asks not to be judged.
  bool skip = false;
  // PYTORCH_CUDA_ALLOC_CONF / NCCL_GRAPH_REGISTER as the launch sees them:
  // exported by the script, or assigned on the launch command itself.
  std::map<std::string, std::string> env;
  // Words of the launch left out because they are only known when the job
  // runs (as written, e.g. "--micro-batch-size $MBS"; a flag whose value is
  // unknown is left out with it). When they are not empty, a job the
  // estimator refuses may just be missing them.
  std::vector<std::string> unresolved;
  // 1-based line of the launch command (0 = not found).
  int launch_line = 0;
  // What was skipped or assumed, for people.
  std::vector<std::string> notes;
};

// Reads a bash job script. Errors: InvalidArgument for a script larger than
// kMaxJobScriptBytes (naming the size), a malformed or unknown `#OOMGUARD`
// item (naming the line and the item), an `#SBATCH` sizing option with a
// value sbatch refuses too (naming the line, the option and the value), and an unterminated quote
// or substitution on the launch command (naming the line). An unterminated quote elsewhere ends the
// reading with a note (bash would stop there too). A script oomguard cannot read within its bounds:
// ResourceExhausted (naming the line and the bound) once its variable expansions pass
// kMaxExpansionWork (jobscript/shell_variables.h), DeadlineExceeded (or Unavailable, the server
// shutting down) once `deadline` passes; both stop the reading, so its work is linear in the
// script's bytes plus that fixed bound. Callers treat them as "could not check" (the hooks' and
// the webhook's failure policy), not as an invalid job.
absl::StatusOr<ScriptJob> ParseJobScript(absl::string_view script,
                                         const Deadline& deadline = Deadline());

// Whether an error of ParseJobScript / ParseCommandWords says the script is
// one oomguard cannot read (its bound or the deadline passed), rather than an
// invalid one: the callers' failure policy decides, not their answer to
// invalid jobs.
bool IsUnreadableScript(const absl::Status& status);

// Reads a container's command + args (argv, nothing expanded). `bash -c
// SCRIPT` / `sh -c SCRIPT` (also `-lc`, `-ec`, ...) delegates to
// ParseJobScript, the script starting with `environment` exported (the
// container's env; names that are not shell identifiers are left out). A word still holding a
// Kubernetes `$(NAME)` reference is dropped like an unknown variable. `word_sources` (empty, or
// one per word): the variables a word holds the values of, as written ("$(WANDB_API_KEY)" for
// a reference Kubernetes expanded), kept with the word (ScriptJob::megatron_arg_sources).
// Errors: as ParseJobScript, and ResourceExhausted for more than kMaxCommandWords words or
// kMaxCommandBytes bytes of them.
absl::StatusOr<ScriptJob> ParseCommandWords(
    absl::Span<const std::string> words, const std::map<std::string, std::string>& environment = {},
    const Deadline& deadline = Deadline(), absl::Span<const std::string> word_sources = {});

}  // namespace oomguard

#endif  // OOMGUARD_JOBSCRIPT_JOB_SCRIPT_H_
