// The changes admission may recommend (see admission.h): the ladder of
// memory-saving changes in the order of the tuning guides, and the
// incompatibilities that keep a job from starting. Each changes a JobSpec;
// the setting shown is derived from the change: the Megatron-LM flags of the
// changed fields written from the changed job by the writer beside the flag
// table (jobspec/megatron_args_writer.h), or environment settings.
// Megatron-Core's recompute rules are estimator/recompute_rules.h's, the
// defaults of unset sizes estimator/job_defaults.h's.
#ifndef OOMGUARD_ADMISSION_RECOMMENDATIONS_H_
#define OOMGUARD_ADMISSION_RECOMMENDATIONS_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oomguard/v1/admission.pb.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

// What a change did to a job, from which the setting shown is written: the
// environment settings, then the Megatron-LM flags of the JobSpec fields it
// set, written from the changed job by the writer beside the flag table
// (jobspec/megatron_args_writer.h), then the switches it dropped.
struct JobChange {
  struct Dropped {
    std::string_view field;  // A field turned off (a switch) or cleared, by path.
    std::string why;         // Why, in parentheses after it; may be empty.
  };
  // Environment settings ("NCCL_GRAPH_REGISTER=0").
  std::vector<std::string> environment = {};
  // The fields set, by path, in the order shown; each written as the flags
  // that give it its value in the changed job. A field may be named that
  // kept its value, to say the whole setting ("--recompute-granularity
  // selective" with the modules).
  std::vector<std::string_view> fields = {};
  // What would do instead, in parentheses after the fields; may be empty.
  std::string alternative = {};
  std::vector<Dropped> dropped = {};
};

// The setting `change` shows, written from `changed`, the job after it:
// "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, and drop --use-nccl-ub
// (it does not work with them)", "--tensor-model-parallel-size 2
// --sequence-parallel".
std::string SettingText(const v1::JobSpec& changed, const JobChange& change);

// One change to try.
struct RecommendedChange {
  v1::Recommendation::Kind kind;
  const char* id;
  const char* reason;
  // Makes the change in `job` and says what it did; nullopt when the change
  // does not apply to this job.
  std::function<std::optional<JobChange>(const v1::GpuSpec& gpu, v1::JobSpec* job)> make;

  // `make`, and the setting it shows (SettingText of the changed job).
  std::optional<std::string> Apply(const v1::GpuSpec& gpu, v1::JobSpec* job) const;
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
