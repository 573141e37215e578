// The label values of a report's enums, as the feedback metrics
// (service/feedback_metrics.h) and `oomguard calibrate --store` write them:
// the enum's name in lower case without its prefix.
#ifndef OOMGUARD_FEEDBACK_METRIC_LABELS_H_
#define OOMGUARD_FEEDBACK_METRIC_LABELS_H_

#include <string>

#include "oomguard/v1/feedback.pb.h"

namespace oomguard::feedback {

// "megatron_log", "megatron_bridge_log", "dcgm", "client", "slurm", ...
std::string SourceLabel(v1::MeasurementSource source);
// "ran", "cuda_oom", "failed", "host_oom", "cancelled", "unspecified".
std::string OutcomeLabel(v1::JobOutcome outcome);

}  // namespace oomguard::feedback

#endif  // OOMGUARD_FEEDBACK_METRIC_LABELS_H_
