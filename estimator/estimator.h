// The estimator core's entry point: JobSpec in, per-rank memory report out.
//
// Pure computation: no I/O, no globals, deterministic (same JobSpec, same
// report, bit for bit). Every invalid input is an InvalidArgument status
// whose message names the JobSpec field and the bad value.
#ifndef OOMGUARD_ESTIMATOR_ESTIMATOR_H_
#define OOMGUARD_ESTIMATOR_ESTIMATOR_H_

#include "absl/status/statusor.h"
#include "common/deadline.h"
#include "oomguard/v1/job.pb.h"
#include "oomguard/v1/report.pb.h"

namespace oomguard {

struct EstimateOptions {
  // Fill EstimateReport.rank_trees with the module tree of every PP rank.
  bool module_tree = false;
  // Fill Overhead.basis (one line per overhead saying where its number
  // comes from). Off for the admission check's many re-estimates.
  bool overhead_basis = true;
  // Work stops with the deadline's error (DEADLINE_EXCEEDED or UNAVAILABLE)
  // once it passes: checked per pipeline rank and inside the schedule walk.
  Deadline deadline;
};

// Estimates the per-rank GPU memory of `job`.
absl::StatusOr<v1::EstimateReport> Estimate(const v1::JobSpec& job,
                                            const EstimateOptions& options = {});

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_ESTIMATOR_H_
