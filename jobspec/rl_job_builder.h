// Reads an RL job as its framework gives it (RlJob: veRL's or NeMo-RL's
// YAML, slime's or Megatron-LM's RL argv, with an optional model source)
// into one RlJobSpec. A key oomguard does not know becomes a note; a key
// that changes memory and is not modelled becomes one of
// RlJobSpec.unmodelled_settings, as a Megatron flag does.
#ifndef OOMGUARD_JOBSPEC_RL_JOB_BUILDER_H_
#define OOMGUARD_JOBSPEC_RL_JOB_BUILDER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "oomguard/v1/rl_job.pb.h"

namespace oomguard {

// InvalidArgument naming the key (e.g. "actor_rollout_ref.rollout.
// gpu_memory_utilization: expected a number in (0, 1], got \"high\"") or the
// flag for a bad value, for YAML that does not parse (with its line), for a
// config no framework's keys are recognised in, and for a model the config
// does not give (naming --preset / --hf-config). `notes` (may be null) gets
// one line per key that was ignored or defaulted.
absl::StatusOr<v1::RlJobSpec> BuildRlJob(const v1::RlJob& job, std::vector<std::string>* notes);

// The RL framework an argv is written for: Megatron-LM's RL loop when it has
// `--perform-rl-step`, slime when it has one of slime's own flags
// (rl_slime_args.h SlimeFlags, or --sglang-*); UNSPECIFIED for any other
// argv (a pretraining job's).
v1::RlFramework RecognizeRlArgv(const std::vector<std::string>& argv);

// The routing rule for callers that receive a Megatron-LM argv (MegatronJob,
// `oomguard estimate -- ARGS`, job scripts): an argv for which this is true
// is an RL job, to be sent as RlJob.argv (BuildRlJob), not to the
// pretraining parser, which would record its RL flags as not modelled.
bool LooksLikeRlArgv(const std::vector<std::string>& argv);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_RL_JOB_BUILDER_H_
