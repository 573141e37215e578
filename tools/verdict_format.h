// What `oomguard check` prints for the service's answer: the verdict lines
// (the one-line summary, for an RL step one line per phase, then for
// FITS_WITH_SETTINGS the settings to add, for
// DOES_NOT_FIT the recommended steps, the planner's alternatives (what fits
// instead, or what runs clearly faster), and the incompatibilities), or the
// CheckResponse as protobuf JSON for --json.
#ifndef OOMGUARD_TOOLS_VERDICT_FORMAT_H_
#define OOMGUARD_TOOLS_VERDICT_FORMAT_H_

#include <string>

#include "absl/status/statusor.h"
#include "oomguard/v1/admission.pb.h"

namespace oomguard {

// "oomguard: <summary>\n", then one "oomguard: ..." line per thing to do.
std::string FormatVerdict(const v1::CheckResponse& response);

// One line of JSON (proto field names, default values printed), "\n" ended.
absl::StatusOr<std::string> FormatCheckResponseJson(const v1::CheckResponse& response);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_VERDICT_FORMAT_H_
