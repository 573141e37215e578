// How the job's settings oomguard does not model (JobSpec.
// unmodelled_settings, filled by the argument-line parser) are worded: the
// estimate's note for each, the list a verdict names ("judged without
// modelling --X"), and the refusal of a Check that does not judge such a job.
// One wording for the estimate, the plan and the check.
#ifndef OOMGUARD_ESTIMATOR_UNMODELLED_SETTINGS_H_
#define OOMGUARD_ESTIMATOR_UNMODELLED_SETTINGS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

// The setting as written: "--tp-comm-overlap-cfg", or the flag and its
// choice value, "--fp8-recipe custom".
std::string UnmodelledSettingName(const v1::UnmodelledSetting& setting);

// The note of one setting: "--tp-comm-overlap-cfg is not modelled
// (<reason>): estimated as if it were absent" (an RL job's settings too).
std::string UnmodelledSettingNote(const v1::UnmodelledSetting& setting);

// One note per setting of `job`, in order: "--tp-comm-overlap-cfg is not
// modelled (<reason>): estimated as if it were absent".
std::vector<std::string> UnmodelledSettingNotes(const v1::JobSpec& job);

// The settings' names for a verdict line: "--a", "--a, --b", and past three
// "--a, --b, --c and 2 more"; empty when the job has none.
std::string UnmodelledSettingList(const v1::JobSpec& job);

// Unimplemented: the job is not judged, naming every setting and its reason
// and how to judge it anyway. Only for a job with unmodelled settings.
absl::Status NotJudgedUnmodelled(const v1::JobSpec& job);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_UNMODELLED_SETTINGS_H_
