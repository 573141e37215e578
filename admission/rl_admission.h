// The admission check of an RL step: its binding phase (the largest, by the
// policy's peak) against the GPU's usable memory, the verdict naming that
// phase, its rank, its largest term and the key that moves it, and the
// recommendations: changes of the framework's own keys (rl_knobs.h), each
// re-estimated.
#ifndef OOMGUARD_ADMISSION_RL_ADMISSION_H_
#define OOMGUARD_ADMISSION_RL_ADMISSION_H_

#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "admission/admission.h"
#include "admission/gpu_catalog.h"
#include "estimator/rl_step.h"
#include "oomguard/v1/admission.pb.h"
#include "oomguard/v1/rl_job.pb.h"

namespace oomguard {

// Checks `job` against `gpu` under `options` (as CheckJob does: margin,
// bound, coverage, deadline, judge_unmodelled). The response's peaks are
// the binding phase's; rl_step holds every phase; report the actor update's
// estimate unless !options.with_report.
//
// The binding phase and rank are those of the largest compared peak (each
// rank's upper bound, or its point estimate when the policy says so; ties:
// the earlier phase, the lower rank). A phase with a `failure` (an engine
// that cannot start) makes the job DOES_NOT_FIT, naming it. There is no
// FITS_WITH_SETTINGS: an RL job's recommendations are config changes of its
// framework's own keys (RlKnobSetting), climbed like the ladder of
// recommendations.h (each rung's first change that helps is kept, and the
// next is tried on top of it, while the job does not fit), each
// re-estimated. A change helps when it lets a failing phase run, or lowers
// the compared peak without making a phase fail; it is sufficient when
// every phase runs and the peak fits. Then, while every phase runs but the
// step does not fit and the actor's update (or the critic's) binds, the
// config changes of recommendations.h's ladder of that Megatron job are
// climbed the same way, each written in the framework's keys
// (rl_megatron_setting.h) and the whole step re-estimated.
// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True is never recommended (the Megatron ladder's
// first rung is not climbed): colocated engines that sleep break with it (RL_MEMORY.md §3.3); where
// the job sets it and its engine cannot take it, an incompatibility says to unset it.
absl::StatusOr<v1::CheckResponse> CheckRlJob(const v1::RlJobSpec& job, const v1::GpuSpec& gpu,
                                             const AdmissionOptions& options);

// The step estimator a check calls (EstimateRlStep, or a model of it in
// tests).
using RlEstimateFunction =
    absl::FunctionRef<absl::StatusOr<v1::RlStepReport>(const v1::RlJobSpec&, const RlStepOptions&)>;

// Same, with the estimator given.
absl::StatusOr<v1::CheckResponse> CheckRlJob(const v1::RlJobSpec& job, const v1::GpuSpec& gpu,
                                             const AdmissionOptions& options,
                                             RlEstimateFunction estimate);

// `job` as it runs on `gpu`: its actor's and critic's runtime.gpu_architecture
// from the GPU where they leave it unspecified (JobOnGpu). A check runs the
// job this way, and so does an RL estimate on a named GPU.
v1::RlJobSpec RlJobOnGpu(const v1::RlJobSpec& job, const v1::GpuSpec& gpu);

// The GPU an RL job's estimate assumes when its caller names none (the
// engine takes a fraction of the GPU's memory): kDefaultRlGpu from
// `catalog` (its memory, 80 GiB, when a site's catalog lacks it), with a
// note in `notes` saying so.
inline constexpr char kDefaultRlGpu[] = "H100-SXM-80GB";
v1::GpuSpec AssumedRlGpu(const GpuCatalog& catalog, std::vector<std::string>* notes);

}  // namespace oomguard

#endif  // OOMGUARD_ADMISSION_RL_ADMISSION_H_
