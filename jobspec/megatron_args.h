// Reads a Megatron-LM `pretrain_gpt.py` argument line into a JobSpec: the
// argv grammar (`--flag value`, `--flag=value`, lists, underscore
// spellings) over the flag table (megatron_flags.h), then the resolution of
// the flags that depend on each other (flag_resolution.h).
//
// Job scripts and admission hooks carry the exact flags a job will run
// with; this is how they become a JobSpec. Flags that do not change memory
// (logging, data paths, learning rates, ...) are accepted silently; flags
// oomguard does not model or does not know, and choice values it does not
// model, are skipped and recorded in JobSpec.unmodelled_settings with the
// reason, never an error (ignored_flags.h). Malformed values (non-numbers, negative sizes, unknown
// enum words) are InvalidArgument errors naming the flag and the value.
//
// Includes shell_words.h (SplitArgumentLine) and environment.h
// (ApplyEnvironment), the other two ways a launch reaches a JobSpec.
#ifndef OOMGUARD_JOBSPEC_MEGATRON_ARGS_H_
#define OOMGUARD_JOBSPEC_MEGATRON_ARGS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "jobspec/environment.h"
#include "jobspec/shell_words.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

enum class ArgsMode {
  // The arguments are a job's whole command line: flags that are absent take
  // Megatron-LM's defaults (fp32 parameters without --bf16/--fp16, GPT-2
  // vocabulary without --vocab-size/tokenizer, ...).
  kFullCommandLine,
  // The arguments override a JobSpec that is already filled (a preset or a
  // HF config): only the flags given change anything.
  kOverrides,
};

// Applies `args` (one token per element, flags with "--") to `job`.
// Appends human-readable notes (assumed defaults) to `notes` when it is not
// null; the settings oomguard does not model go into
// job->unmodelled_settings (at most 64, each once), the job being read as
// if they were absent.
//
// Accepts `--flag value`, `--flag=value`, switches, multi-value flags (values
// run to the next "--" token) and underscore spellings
// (`--use_distributed_optimizer`); a later flag overrides an earlier one.
// Does not set parallelism.num_gpus (not a Megatron-LM flag).
// Errors: InvalidArgument naming the flag and the value for malformed
// values, missing values and stray tokens; Unimplemented for the flags
// oomguard refuses (ignored_flags.h UnimplementedFlags: `--use-custom-fsdp`,
// the spelling of Megatron-FSDP Megatron-LM removed).
// `arg_sources` (empty, or one per arg): the variable an argument holds the
// value of, as the hook read it (MegatronJob.argv_sources); an error about
// such an argument names the variable instead of showing the value
// (ShownWord in flag_values.h).
absl::Status ApplyMegatronArgs(absl::Span<const std::string> args, ArgsMode mode, v1::JobSpec* job,
                               std::vector<std::string>* notes,
                               absl::Span<const std::string> arg_sources = {});

// Whether a launch word the script reader left out (ScriptJob::unresolved:
// "--flag VALUE", "--flag=VALUE" or a bare word) may change the estimate: a
// word that is an expansion ("$EXTRA_ARGS") may expand to any flags; a flag
// may when the flag table says it sets a JobSpec field or is refused
// (FindMegatronFlag), and when it is not in the table and not silent (a flag
// oomguard does not model or does not know: the job would not be judged).
// Data paths, logging, learning rates, flags the table reads without a field
// and words starting with literal text (values) do not.
bool MayChangeMemory(std::string_view unresolved);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_MEGATRON_ARGS_H_
