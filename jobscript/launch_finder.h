// Finding the Megatron-LM launch among a job script's commands, once their
// words are expanded: wrappers (`exec`, `env NAME=value`, `nohup`,
// `command`, `time`, `numactl ...`), then a launcher (`torchrun`,
// `python*`, `srun`, `mpirun`, `mpiexec`), then somewhere a training script
// oomguard models (`pretrain_gpt*.py`, `pretrain_llama*.py`,
// `pretrain_hybrid*.py`, `pretrain_mamba*.py`, or `-m` of a module so
// named). The words after the script become the Megatron-LM
// flags, a word only known when the job runs being dropped together with
// the flag it is the value of. A shell running a script from a word (`srun
// bash -c "<script>"`) is handed back for the reader to read. The first
// launch wins. Internal to the job script reader.
#ifndef OOMGUARD_JOBSCRIPT_LAUNCH_FINDER_H_
#define OOMGUARD_JOBSCRIPT_LAUNCH_FINDER_H_

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "jobscript/expanded_word.h"
#include "jobscript/job_script.h"
#include "jobscript/sbatch_options.h"
#include "jobscript/shell_variables.h"

namespace oomguard::job_script_internal {

// Deepest nesting of `bash -c` scripts read.
inline constexpr int kMaxScriptDepth = 4;

// The last component of `path`.
std::string Basename(absl::string_view path);

// The basename of a field when it is literal (a path whose directory came
// from an unknown variable still has a literal basename); nullopt if not.
std::optional<std::string> LiteralBasename(const Field& field);

// `bash` or `sh`.
bool IsShell(absl::string_view name);

// `-c`, `-lc`, `-ec`, `-xec`...: a shell option cluster that takes a script.
bool IsDashC(absl::string_view word);

// Whether a command named `name` (a basename) may be or lead to a launch:
// a launcher, a shell or a wrapper. Only those commands are expanded.
bool MayLaunch(absl::string_view name);

// The script of a `bash -c SCRIPT` command.
struct ShellScript {
  std::string shell;  // "bash" or "sh".
  std::string script;
};

// Looks for the launch one command at a time, filling a ScriptJob.
class LaunchFinder {
 public:
  // The launch goes into `job` (found, launch_line, megatron_args, env,
  // launch_size, unresolved, notes); `variables` tell what the script
  // exported, `allocation` what its #SBATCH lines allocate (srun's
  // defaults).
  LaunchFinder(ScriptJob* job, const ShellVariables* variables, const SlurmAllocation* allocation)
      : job_(job), variables_(variables), allocation_(allocation) {}

  // Reads one command's expanded words `fields`, on `line`; `env` holds its
  // prefix assignments, `depth` counts the `bash -c` scripts it is in. A
  // Megatron-LM launch is taken into the job (a later one is only noted).
  // A `bash -c SCRIPT` (readable, at depth < kMaxScriptDepth) is returned
  // for the caller to read at depth + 1.
  std::optional<ShellScript> Find(const std::vector<Field>& fields,
                                  std::map<std::string, std::string> env, int line, int depth);

 private:
  void Note(std::string note);
  // Takes the launch whose launcher is fields[launcher] and whose training
  // script is fields[script].
  void TakeLaunch(const std::vector<Field>& fields, size_t launcher, size_t script, int line,
                  const std::map<std::string, std::string>& env);

  ScriptJob* job_;
  const ShellVariables* variables_;
  const SlurmAllocation* allocation_;
  int other_launches_ = 0;
};

}  // namespace oomguard::job_script_internal

#endif  // OOMGUARD_JOBSCRIPT_LAUNCH_FINDER_H_
