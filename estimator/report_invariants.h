// The invariants every EstimateReport satisfies, as report.proto and
// estimator/reported_count.h state them, checked on a report from outside
// the estimator (by tests over many generated jobs and by fuzz targets).
#ifndef OOMGUARD_ESTIMATOR_REPORT_INVARIANTS_H_
#define OOMGUARD_ESTIMATOR_REPORT_INVARIANTS_H_

#include "absl/status/status.h"
#include "oomguard/v1/report.pb.h"

namespace oomguard {

// OK when `report` holds together; else Internal naming the first broken
// invariant, the rank and the numbers:
// - every byte and parameter count is in [0, 2^50] (nothing wrapped, nothing
//   read as negative), and a rank holds a count of exactly 2^50 (in its
//   fields or its module tree) if and only if it is flagged exceeds_limit;
//   the report is flagged if and only if a rank is or total_parameters is
//   2^50;
// - parts sum to totals, each sum stopping at 2^50: parameters = dense +
//   expert, static.total_bytes = the six GPU parts, static_bytes =
//   static.total_bytes, peak_allocated_bytes = static + max(activation +
//   transient, optimizer_step) + the overheads in the allocator,
//   peak_device_bytes = peak_allocated_bytes + the other overheads; a
//   chunk's activation_bytes and the rank's activation_bytes and parameters
//   match in_flight x per-micro-batch and the chunks' sums up to the rounding
//   of each field to whole bytes;
// - peak_device >= peak_allocated >= static; total_parameters >= a rank's
//   parameters; a module tree node holds at least its children;
// - the layout is consistent (one rank per pipeline stage, GPUs = TP x PP x
//   CP x DP = PP x EP x ETP x expert DP) and worst_rank is the first rank
//   with the largest peak_device_bytes.
absl::Status CheckReportInvariants(const v1::EstimateReport& report);

// OK when no rank's activations, transient memory or peaks shrink from
// `smaller` to `larger`: estimates of one job grown in its micro-batch,
// sequence, layers, hidden size or experts (grown_job.h; the number of
// micro-batches per iteration kept). Internal naming the rank and field
// otherwise.
absl::Status CheckGrowsWith(const v1::EstimateReport& smaller, const v1::EstimateReport& larger);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_REPORT_INVARIANTS_H_
