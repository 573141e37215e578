// The admission check: does a job fit on a GPU, and if not, what to change.
//
// The verdict compares the worst rank's estimated device peak (its upper
// bound at the stated coverage unless the policy asks for the point
// estimate; estimator/peak_bound.h) with the usable capacity (GPU memory x
// (1 - safety margin)). Recommendations are
// never canned numbers: each is the job re-estimated with the change
// applied. Environment settings come first (zero throughput cost), then the
// config changes in the order of the tuning guides (selective recompute of
// cheap modules, more PP else more TP, distributed optimizer, optimizer CPU
// offload, activation CPU offload where PP = 1, full recompute last), then
// the incompatibilities found in the job. See v1::Recommendation.
//
// A job with a rank over the estimator's limit (RankReport.exceeds_limit:
// 2^50 bytes or more per GPU, estimator/reported_count.h) does not fit, with
// no recommendations: its capped numbers measure no saving.
#ifndef OOMGUARD_ADMISSION_ADMISSION_H_
#define OOMGUARD_ADMISSION_ADMISSION_H_

#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "common/deadline.h"
#include "estimator/peak_bound.h"
#include "oomguard/v1/admission.pb.h"
#include "oomguard/v1/job.pb.h"
#include "oomguard/v1/report.pb.h"

namespace oomguard {

struct AdmissionOptions {
  // Fraction of the GPU's memory kept free, in [0, 1).
  double safety_margin = 0.0;
  // Compare each rank's device upper bound (true) or its point estimate.
  bool compare_upper_bound = true;
  // Coverage of the upper bounds, in [0.5, 0.999].
  double upper_bound_coverage = kDefaultUpperBoundCoverage;
  // Work stops with the deadline's error once it passes (checked before
  // every estimate, of which a check runs up to about a dozen, and inside
  // each).
  Deadline deadline{};
  // Fill CheckResponse.report. Without it the job's own estimate runs the
  // estimator's peaks-only path too (EstimatePeaks: the same numbers), and
  // everything else in the response is the same. The CheckJob that takes an
  // estimator (a model of it, in tests) always fills the report.
  bool with_report = true;
  // Judge a job with JobSpec.unmodelled_settings as if they were absent (the
  // summary says "judged without modelling --X"); false: such a job is not
  // judged (Unimplemented, naming each setting; NotJudgedUnmodelled in
  // estimator/unmodelled_settings.h).
  bool judge_unmodelled = false;
  // The cluster's widening of the bound learned from its own measured jobs
  // (feedback/bound_widening.h), in [0, 1]: with compare_upper_bound, every
  // compared upper bound is x (1 + learned_widening), rounded up (never
  // below the estimator's bound); a compared point estimate is not widened.
  // 0: none. The response states it and its basis (CheckResponse.
  // learned_widening*), and so does the summary.
  double learned_widening = 0;
  // Its basis: the measured jobs it was learned from, the cluster.
  uint32_t learned_widening_jobs = 0;
  std::string learned_widening_cluster = {};
};

// The estimator a check calls (Estimate() without the module tree, within
// the check's deadline).
using EstimateFunction = absl::FunctionRef<absl::StatusOr<v1::EstimateReport>(const v1::JobSpec&)>;

// Checks `job` against `gpu` (a catalog entry, or just memory_bytes).
// Errors: InvalidArgument for a bad job (from the estimator, naming the
// JobSpec field), a safety margin outside [0, 1), a coverage outside
// [0.5, 0.999], GPU memory of zero or over 2^50 bytes; DeadlineExceeded;
// Unimplemented for a job with unmodelled settings unless
// options.judge_unmodelled (then the response lists them in
// unmodelled_settings and its summary's verdict says "judged without
// modelling --X", and its report's notes hold one per setting, the report
// omitted or not).
absl::StatusOr<v1::CheckResponse> CheckJob(const v1::JobSpec& job, const v1::GpuSpec& gpu,
                                           const AdmissionOptions& options);

// Same, with the estimator given (tests use a model of it).
absl::StatusOr<v1::CheckResponse> CheckJob(const v1::JobSpec& job, const v1::GpuSpec& gpu,
                                           const AdmissionOptions& options,
                                           EstimateFunction estimate);

}  // namespace oomguard

#endif  // OOMGUARD_ADMISSION_ADMISSION_H_
