// The per-cluster widening of the bound (see bound_widening.h).
#include "feedback/bound_widening.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "feedback/measured_error.h"

namespace oomguard::feedback {

absl::Status ValidateWideningOptions(const WideningOptions& options) {
  if (!(options.max_widening >= 0 && options.max_widening <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("learned_widening_max = ", options.max_widening, ": must be in [0, 1]"));
  }
  if (options.min_measured_jobs < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("min_measured_jobs = ", options.min_measured_jobs, ": must be at least 1"));
  }
  if (!(options.coverage >= 0.5 && options.coverage <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("coverage = ", options.coverage, ": must be in [0.5, 1]"));
  }
  return absl::OkStatus();
}

std::optional<double> NeededWidening(const v1::CheckRecord& record) {
  std::optional<double> needed;
  auto need = [&needed](double w) { needed = std::max(needed.value_or(0.0), std::max(w, 0.0)); };
  for (const MeasuredError& e : RecordErrors(record)) {
    if (e.upper_bytes == 0) continue;
    need(static_cast<double>(e.measured_bytes) / static_cast<double>(e.upper_bytes) - 1);
  }
  if (Admitted(record) && DiedOfCudaOom(record)) {
    uint64_t largest_upper = 0;
    for (const v1::RankEstimate& stage : record.estimate()) {
      largest_upper = std::max(largest_upper, stage.peak_device_upper_bytes());
    }
    if (largest_upper > 0) {
      need(static_cast<double>(record.usable_bytes()) / static_cast<double>(largest_upper) - 1);
    }
  }
  return needed;
}

LearnedWidening LearnWidening(absl::Span<const double> needed_per_job,
                              const WideningOptions& options) {
  LearnedWidening learned;
  learned.measured_jobs = static_cast<int>(needed_per_job.size());
  if (needed_per_job.empty()) return learned;
  std::vector<double> sorted(needed_per_job.begin(), needed_per_job.end());
  std::sort(sorted.begin(), sorted.end());
  for (double w : sorted) learned.jobs_over_bound += w > 0 ? 1 : 0;
  // The k-th smallest covers k of n jobs; the epsilon keeps 0.95 x 20 at 19.
  const double n = static_cast<double>(sorted.size());
  const size_t k = static_cast<size_t>(std::max(1.0, std::ceil(options.coverage * n - 1e-9)));
  learned.needed = std::max(0.0, sorted[std::min(k, sorted.size()) - 1]);
  learned.enough_jobs = learned.measured_jobs >= options.min_measured_jobs;
  if (learned.enough_jobs) learned.widening = std::min(learned.needed, options.max_widening);
  return learned;
}

}  // namespace oomguard::feedback
