#include "feedback/job_outcome.h"

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace oomguard::feedback {
namespace {

// Slurm's states (src/common/slurm_protocol_defs.c job_state_string, the
// names jobcomp/script's JOBSTATE and sacct print; jobcomp_script.c
// _jobcomp_info_create takes the base state) and what each says.
constexpr std::pair<absl::string_view, v1::JobOutcome> kSlurmStates[] = {
    {"COMPLETED", v1::JOB_OUTCOME_RAN},
    {"CANCELLED", v1::JOB_OUTCOME_CANCELLED},
    {"PREEMPTED", v1::JOB_OUTCOME_CANCELLED},
    {"FAILED", v1::JOB_OUTCOME_FAILED},
    {"TIMEOUT", v1::JOB_OUTCOME_FAILED},
    {"NODE_FAIL", v1::JOB_OUTCOME_FAILED},
    {"BOOT_FAIL", v1::JOB_OUTCOME_FAILED},
    {"DEADLINE", v1::JOB_OUTCOME_FAILED},
    {"OUT_OF_MEMORY", v1::JOB_OUTCOME_HOST_OOM},
    {"PENDING", v1::JOB_OUTCOME_UNSPECIFIED},
    {"RUNNING", v1::JOB_OUTCOME_UNSPECIFIED},
    {"SUSPENDED", v1::JOB_OUTCOME_UNSPECIFIED},
    {"REQUEUED", v1::JOB_OUTCOME_UNSPECIFIED},
    // jobcomp/script's state of a job whose size changed (it goes on).
    {"RESIZING", v1::JOB_OUTCOME_UNSPECIFIED},
};

bool ParseByte(absl::string_view text, int& value) {
  if (text.empty() || text.size() > 3) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return absl::SimpleAtoi(text, &value) && value <= 255;
}

}  // namespace

absl::StatusOr<ExitStatus> ParseExitStatus(absl::string_view text) {
  ExitStatus status;
  const size_t colon = text.find(':');
  if (!ParseByte(text.substr(0, colon), status.code) ||
      (colon != absl::string_view::npos && !ParseByte(text.substr(colon + 1), status.signal))) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", absl::CHexEscape(text.substr(0, 32)),
                     "\" is not an exit status: expected CODE or CODE:SIGNAL, each 0 to 255"));
  }
  return status;
}

absl::StatusOr<v1::JobOutcome> OutcomeOfSlurmState(absl::string_view state) {
  const absl::string_view stripped = absl::StripAsciiWhitespace(state);
  const std::string word = absl::AsciiStrToUpper(stripped.substr(0, stripped.find(' ')));
  std::vector<absl::string_view> names;
  for (const auto& [name, outcome] : kSlurmStates) {
    if (word == name) return outcome;
    names.push_back(name);
  }
  return absl::InvalidArgumentError(absl::StrCat("\"", absl::CHexEscape(state.substr(0, 32)),
                                                 "\" is not a Slurm job state (",
                                                 absl::StrJoin(names, ", "), ")"));
}

v1::JobOutcome OutcomeOf(const JobEnd& end) {
  const bool ended_well = end.slurm_outcome ? *end.slurm_outcome == v1::JOB_OUTCOME_RAN
                                            : end.exit_status && end.exit_status->code == 0 &&
                                                  end.exit_status->signal == 0;
  if (ended_well) return v1::JOB_OUTCOME_RAN;
  if (end.cuda_oom_line) return v1::JOB_OUTCOME_CUDA_OOM;
  if (end.slurm_outcome) return *end.slurm_outcome;
  if (end.exit_status) return v1::JOB_OUTCOME_FAILED;
  return v1::JOB_OUTCOME_UNSPECIFIED;
}

}  // namespace oomguard::feedback
