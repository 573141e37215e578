// The per-cluster widening of the upper bound, learned from the cluster's
// own measured jobs (CheckRecord reports): the fraction w by which a
// verdict's compared upper bound is multiplied, x (1 + w), so that the
// widened bound covers the cluster's measured peaks as often as the bound
// means to (its coverage, 95 % by default).
//
// Never below the physics: w >= 0, the widening only ever adds to the
// estimator's bound (a cluster whose jobs use less keeps the bound as it
// is). Bounded: w <= max_widening, since a cluster whose jobs need more has
// something the estimate does not model, which a wider bound would hide.
// Learned only from enough jobs (min_measured_jobs), and applied only where
// the server is told to (`oomguard serve --learned_widening on`, or the
// request's Policy.learned_widening): off by default.
#ifndef OOMGUARD_FEEDBACK_BOUND_WIDENING_H_
#define OOMGUARD_FEEDBACK_BOUND_WIDENING_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "oomguard/v1/feedback.pb.h"

namespace oomguard::feedback {

struct WideningOptions {
  // Fewer measured jobs than this: no widening.
  int min_measured_jobs = 20;
  // The most the bound is widened, in [0, 1].
  double max_widening = 0.25;
  // The fraction of measured jobs the widened bound must cover, in
  // [0.5, 1]: the bound's own default coverage.
  double coverage = 0.95;
};

// InvalidArgument naming the field (as the server's flags:
// learned_widening_max for max_widening) for a value out of its range.
absl::Status ValidateWideningOptions(const WideningOptions& options);

// The widening `record`'s job needed: the least w >= 0 with every measured
// peak (measured_error.h, both measures) at most its stage's upper bound
// x (1 + w). An admitted job that died of a CUDA OOM needed at least
// usable_bytes / (the largest stage's device upper bound) - 1: its peak
// passed the memory the verdict compared with. nullopt when the record has
// nothing measured (no measurement with a bound, no admitted CUDA OOM).
std::optional<double> NeededWidening(const v1::CheckRecord& record);

struct LearnedWidening {
  // What a verdict applies: `needed` capped at max_widening, 0 with fewer
  // than min_measured_jobs measured jobs.
  double widening = 0;
  // The jobs it is learned from, and those of them over the bound.
  int measured_jobs = 0;
  int jobs_over_bound = 0;
  // The needed widening of the job at the coverage quantile (the
  // ceil(coverage x n)-th smallest), before the cap; 0 without jobs.
  double needed = 0;
  bool enough_jobs = false;
};

// The widening from each measured job's NeededWidening.
LearnedWidening LearnWidening(absl::Span<const double> needed_per_job,
                              const WideningOptions& options);

}  // namespace oomguard::feedback

#endif  // OOMGUARD_FEEDBACK_BOUND_WIDENING_H_
