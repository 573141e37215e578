// Reads slime's argv (slime/utils/arguments.py: Megatron-LM's flags plus
// slime's own and SGLang's with the --sglang- prefix) into an RlJobSpec.
// slime's flags (SlimeFlags: every flag of its parser at 624b824a8, with its
// arity) and --sglang-* / --router-* flags are taken out; those that change
// memory are read (the colocation and offloads, SGLang's memory fraction and
// TP, the token budgets, the log-prob chunk, PPO's critic, the reference);
// the rest is a Megatron-LM argument line for the actor (megatron_args.h).
// An --sglang-* flag not in the table is noted as not read.
#ifndef OOMGUARD_JOBSPEC_RL_SLIME_ARGS_H_
#define OOMGUARD_JOBSPEC_RL_SLIME_ARGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jobspec/rl_reader.h"
#include "oomguard/v1/rl_job.pb.h"

namespace oomguard {

// slime's own flags and the SGLang flags the reader reads.
absl::Span<const RlArgvFlag> SlimeFlags();

// Whether `name` (canonical) is slime's (SlimeFlags, or --sglang-*).
bool IsSlimeFlag(absl::string_view name);

absl::StatusOr<v1::RlJobSpec> ReadSlimeArgs(const v1::RlJob& job, std::vector<std::string>* notes);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_RL_SLIME_ARGS_H_
