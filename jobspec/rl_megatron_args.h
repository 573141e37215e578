// Reads Megatron-LM's own RL loop (`--perform-rl-step`, megatron/rl) from
// its argv into an RlJobSpec: the RL flags this reader reads
// (MegatronRlFlags: the engine's KV buffer and layout, what the RL loop
// offloads, packing, the KL term) are taken out; the rest is a Megatron-LM
// argument line for the actor (megatron_args.h), whose RL flags that the
// reader does not read are not-modelled or no-memory-effect flags there
// (ignored_flags.h). Flags and defaults as megatron/training/arguments.py
// (_add_rl_args, _add_inference_args) gives them.
//
// The routing rule: an argv with `--perform-rl-step` is an RL job. A caller
// that receives a Megatron-LM argv (MegatronJob) checks LooksLikeRlArgv
// (rl_job_builder.h) and sends it here (RlJob.argv) instead; the plain
// Megatron-LM parser, given such an argv, records every flag this reader
// reads as not modelled, naming the RL job (ignored_flags.h
// UnmodelledFlagReason).
#ifndef OOMGUARD_JOBSPEC_RL_MEGATRON_ARGS_H_
#define OOMGUARD_JOBSPEC_RL_MEGATRON_ARGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "jobspec/rl_reader.h"
#include "oomguard/v1/rl_job.pb.h"

namespace oomguard {

// The RL flags this reader reads (canonical names).
absl::Span<const RlArgvFlag> MegatronRlFlags();

// Whether `name` (canonical) is one of MegatronRlFlags().
bool IsMegatronRlReaderFlag(absl::string_view name);

absl::StatusOr<v1::RlJobSpec> ReadMegatronRlArgs(const v1::RlJob& job,
                                                 std::vector<std::string>* notes);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_RL_MEGATRON_ARGS_H_
