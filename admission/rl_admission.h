// The admission check of an RL step: its binding phase (the largest, by the
// policy's peak) against the GPU's usable memory, the verdict naming that
// phase, its rank, its largest term and the key that moves it, and the
// recommendations: changes of the framework's own keys (rl_knobs.h), each
// re-estimated.
#ifndef OOMGUARD_ADMISSION_RL_ADMISSION_H_
#define OOMGUARD_ADMISSION_RL_ADMISSION_H_

#include "absl/status/statusor.h"
#include "admission/admission.h"
#include "oomguard/v1/admission.pb.h"
#include "oomguard/v1/rl_job.pb.h"

namespace oomguard {

// Checks `job` against `gpu` under `options` (as CheckJob does: margin,
// bound, coverage, deadline, judge_unmodelled). The response's peaks are
// the binding phase's; rl_step holds every phase; report the actor update's
// estimate unless !options.with_report.
absl::StatusOr<v1::CheckResponse> CheckRlJob(const v1::RlJobSpec& job, const v1::GpuSpec& gpu,
                                             const AdmissionOptions& options);

}  // namespace oomguard

#endif  // OOMGUARD_ADMISSION_RL_ADMISSION_H_
