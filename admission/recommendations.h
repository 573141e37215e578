// The changes admission may recommend (see admission.h): the ladder of
// memory-saving changes in the order of the tuning guides, and the
// incompatibilities that keep a job from starting. Each changes a JobSpec
// and says how to make the change: as the Megatron-LM flags that set the
// changed fields, spelled by the flag table (jobspec/megatron_flags.h), or
// as environment settings. Megatron-Core's recompute rules are
// estimator/recompute_rules.h's.
#ifndef OOMGUARD_ADMISSION_RECOMMENDATIONS_H_
#define OOMGUARD_ADMISSION_RECOMMENDATIONS_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "oomguard/v1/admission.pb.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

// One change to try. `apply` makes the change in `job` and returns the
// setting to show, or nullopt when the change does not apply to this job.
struct RecommendedChange {
  v1::Recommendation::Kind kind;
  const char* id;
  const char* reason;
  std::function<std::optional<std::string>(const v1::GpuSpec& gpu, v1::JobSpec* job)> apply;
};

// A ladder rung: alternatives in order of preference; the first that applies
// and lowers the peak is taken.
using LadderRung = std::vector<RecommendedChange>;

// The ladder: environment settings first (zero throughput cost), then the
// config changes (selective recompute of cheap modules, more PP else more
// TP, distributed optimizer, optimizer CPU offload, activation CPU offload
// where PP = 1, full recompute last).
const std::vector<LadderRung>& RecommendationLadder();

// The incompatibilities to look for: each applies when the job has one,
// and makes its fix.
const std::vector<RecommendedChange>& IncompatibilityFixes();

}  // namespace oomguard

#endif  // OOMGUARD_ADMISSION_RECOMMENDATIONS_H_
