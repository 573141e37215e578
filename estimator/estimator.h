// The estimator core's entry point: JobSpec in, per-rank memory report out.
//
// Pure computation: no I/O, no globals, deterministic (same JobSpec, same
// report, bit for bit). Every invalid input is an InvalidArgument status
// whose message names the JobSpec field and the bad value.
#ifndef OOMGUARD_ESTIMATOR_ESTIMATOR_H_
#define OOMGUARD_ESTIMATOR_ESTIMATOR_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/deadline.h"
#include "estimator/peak_bound.h"
#include "estimator/validated_job.h"
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
  Deadline deadline{};
  // Coverage of the ranks' upper bounds (peak_bound.h), in [0.5, 0.999];
  // outside it, Estimate() fails naming `upper_bound_coverage`.
  double upper_bound_coverage = kDefaultUpperBoundCoverage;
};

// Estimates the per-rank GPU memory of `job`. The report's notes start with
// one per JobSpec.unmodelled_settings (unmodelled_settings.h): the estimate
// is of the job without them.
absl::StatusOr<v1::EstimateReport> Estimate(const v1::JobSpec& job,
                                            const EstimateOptions& options = {});

// One PP rank's totals, as the report's RankReport has them.
struct RankPeak {
  uint64_t static_bytes = 0;
  uint64_t activation_bytes = 0;
  uint64_t peak_allocated_bytes = 0;
  uint64_t peak_device_bytes = 0;
  uint64_t peak_allocated_upper_bytes = 0;
  uint64_t peak_device_upper_bytes = 0;
  // A count of the rank reached 2^50 (RankReport.exceeds_limit; its peaks
  // then read 2^50 or more).
  bool exceeds_limit = false;
};

struct PeakEstimate {
  std::vector<RankPeak> ranks;   // One per PP rank.
  int64_t worst_rank = 0;        // The first rank with the largest peak_device_bytes.
  int64_t worst_upper_rank = 0;  // The first with the largest peak_device_upper_bytes.

  // The worst rank by the device upper bound (`upper`) or by the point
  // estimate, and that rank's peak of the same kind: what a fit test
  // compares with the usable memory.
  int64_t WorstRank(bool upper) const { return upper ? worst_upper_rank : worst_rank; }
  uint64_t WorstPeak(bool upper) const {
    const RankPeak& r = ranks[WorstRank(upper)];
    return upper ? r.peak_device_upper_bytes : r.peak_device_bytes;
  }
};

// The per-rank totals of `job` without building a report (no module tree, no
// overhead items, no notes): the same computation as Estimate(), so every
// number equals the report's field of the same name. For callers that
// estimate many jobs (the planner, the admission check's re-estimates).
// Stops with the deadline's error once `deadline` passes. The upper bounds
// are at `coverage` (refused outside [0.5, 0.999], naming
// `upper_bound_coverage`).
absl::StatusOr<PeakEstimate> EstimatePeaks(const v1::JobSpec& job,
                                           const Deadline& deadline = Deadline(),
                                           double coverage = kDefaultUpperBoundCoverage);

// Same, for a job already validated (ValidateJob, validated_job.h) and a
// coverage already validated (ValidateUpperBoundCoverage).
PeakEstimate EstimatePeaks(const ValidatedJob& job, double coverage = kDefaultUpperBoundCoverage);

// Whether every rank of `job` peaks at most `usable` bytes on the device, by
// its upper bound at `coverage` (`upper`) or its point estimate: the same
// as EstimatePeaks(job, coverage).WorstPeak(upper) <= usable, but it stops
// at the first rank over (the first and last PP ranks, which hold the most
// activations and the embedding or output layer, are tried first). For the
// planner, whose settings mostly do not fit.
bool FitsWithin(const ValidatedJob& job, double coverage, bool upper, uint64_t usable);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_ESTIMATOR_H_
