// The model family of a checked job: the `family` label of the feedback
// metrics (service/feedback_metrics.h) and CheckRecord.family. A small fixed
// set, so that a label never grows with the jobs a cluster runs.
#ifndef OOMGUARD_FEEDBACK_MODEL_FAMILY_H_
#define OOMGUARD_FEEDBACK_MODEL_FAMILY_H_

#include <string>

#include "oomguard/v1/feedback.pb.h"
#include "oomguard/v1/job.pb.h"
#include "oomguard/v1/rl_job.pb.h"

namespace oomguard::feedback {

// "hybrid" (a --hybrid-layer-pattern: Mamba or mixed layers), else "moe"
// (num_experts > 0), else "dense".
std::string ModelFamily(const v1::JobSpec& job);

// An RL step's family: "rl-" and its actor's ("rl-dense", "rl-moe",
// "rl-hybrid").
std::string ModelFamily(const v1::RlJobSpec& job);

// The family of the job a record holds; "unknown" for a record without one.
std::string ModelFamily(const v1::CheckRecord& record);

}  // namespace oomguard::feedback

#endif  // OOMGUARD_FEEDBACK_MODEL_FAMILY_H_
