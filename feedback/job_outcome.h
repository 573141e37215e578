// How a job ended, from what its end leaves behind: the CUDA OOM line of its
// log (training_log_reader.h), its exit status, and Slurm's state for it
// (../shared/design/FEEDBACK_SOURCES.md section 4). One rule for every
// reporter that knows these (`oomguard report`, the Slurm jobcomp script
// through it).
#ifndef OOMGUARD_FEEDBACK_JOB_OUTCOME_H_
#define OOMGUARD_FEEDBACK_JOB_OUTCOME_H_

#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "oomguard/v1/feedback.pb.h"

namespace oomguard::feedback {

// A process's or job's exit status: Slurm writes it "CODE:SIGNAL"
// (jobcomp/script's EXITCODE, sacct's ExitCode).
struct ExitStatus {
  int code = 0;    // 0..255
  int signal = 0;  // 0 when not killed by a signal.
};

// "N" or "N:S" (N, S in 0..255). InvalidArgument saying what it expected.
absl::StatusOr<ExitStatus> ParseExitStatus(absl::string_view text);

// The outcome Slurm's job state says (sacct(1) JOB STATE CODES; the first
// word, any case: "CANCELLED by 1000" is CANCELLED): COMPLETED -> RAN;
// CANCELLED, PREEMPTED -> CANCELLED; FAILED, TIMEOUT, NODE_FAIL, BOOT_FAIL,
// DEADLINE -> FAILED; OUT_OF_MEMORY (the cgroup's kill: host memory) ->
// HOST_OOM; PENDING, RUNNING, SUSPENDED, REQUEUED, RESIZING -> UNSPECIFIED
// (not ended).
// InvalidArgument listing the states for any other word.
absl::StatusOr<v1::JobOutcome> OutcomeOfSlurmState(absl::string_view state);

// What is known of a job's end; each part may be missing.
struct JobEnd {
  bool cuda_oom_line = false;  // The log holds a CUDA OOM line.
  std::optional<ExitStatus> exit_status;
  std::optional<v1::JobOutcome> slurm_outcome;  // OutcomeOfSlurmState.
};

// The job's outcome. A job that ended well (Slurm's COMPLETED; without a
// state, exit 0 and no signal) RAN, whatever its log says (it caught the
// error and went on). Otherwise a CUDA OOM line makes it CUDA_OOM, whatever
// else ended it: when one rank dies of it, the others wait in a collective
// until the time limit, NCCL's timeout, a cancel or a kill. Else Slurm's
// state says; else a non-zero exit status is FAILED; else UNSPECIFIED.
v1::JobOutcome OutcomeOf(const JobEnd& end);

}  // namespace oomguard::feedback

#endif  // OOMGUARD_FEEDBACK_JOB_OUTCOME_H_
