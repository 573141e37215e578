// Reads a Megatron-LM `pretrain_gpt.py` argument line into a JobSpec.
//
// Job scripts and admission hooks carry the exact flags a job will run
// with; this is how they become a JobSpec. Flags that do not change memory
// (logging, data paths, learning rates, ...) are accepted silently; flags
// oomguard does not know are skipped with a note, never an error. Malformed
// values (non-numbers, negative sizes, unknown enum words) are
// InvalidArgument errors naming the flag and the value.
#ifndef OOMGUARD_JOBSPEC_MEGATRON_ARGS_H_
#define OOMGUARD_JOBSPEC_MEGATRON_ARGS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
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
// Appends human-readable notes (ignored unknown flags, assumed defaults) to
// `notes` when it is not null.
//
// Accepts `--flag value`, `--flag=value`, switches, multi-value flags (values
// run to the next "--" token) and underscore spellings
// (`--use_distributed_optimizer`); a later flag overrides an earlier one.
// Does not set parallelism.num_gpus (not a Megatron-LM flag).
// Errors: InvalidArgument naming the flag and the value for malformed
// values, missing values and stray tokens; Unimplemented for FSDP
// (`--use-torch-fsdp2`, `--use-megatron-fsdp`, `--use-custom-fsdp`).
absl::Status ApplyMegatronArgs(absl::Span<const std::string> args, ArgsMode mode, v1::JobSpec* job,
                               std::vector<std::string>* notes);

// Applies the environment variables that change memory:
// PYTORCH_CUDA_ALLOC_CONF (expandable_segments:True) and
// NCCL_GRAPH_REGISTER (=0).
void ApplyEnvironment(const std::map<std::string, std::string>& env, v1::JobSpec* job);

// Splits an argument line the way a POSIX shell splits words, without
// expanding anything: single and double quotes, backslash escapes and
// backslash-newline continuations. Never executes or substitutes
// ($(...), backticks and ${...} stay literal text). InvalidArgument on an
// unterminated quote.
absl::StatusOr<std::vector<std::string>> SplitArgumentLine(std::string_view line);

// Whether a launch word the script reader left out (ScriptJob::unresolved:
// "--flag VALUE", "--flag=VALUE" or a bare word) may change the estimate: a
// word that is an expansion ("$EXTRA_ARGS") may expand to any flags; a flag
// may when the Megatron-LM argument parser reads it (a sample value changes
// the job or is refused). Data paths, logging, learning rates, unknown flags
// and words starting with literal text (values) do not.
bool MayChangeMemory(std::string_view unresolved);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_MEGATRON_ARGS_H_
