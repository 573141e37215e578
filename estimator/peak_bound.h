// The upper bound of a rank's peak: the peak the rank will not exceed at a
// stated coverage, built term by term from how far each approximate term of
// the estimate may be off.
//
// Each approximate term declares, where it is defined, one standard
// deviation of its error (an Uncertainty: the overheads in overheads.cc, the
// model's own static, activation and transient terms in peak_bound.cc). The
// terms' errors are taken as independent and normal, so a bound at coverage
// c is the point estimate + z(c) x sqrt(sum of variances), z the standard
// normal quantile (1.645 at 95 %). Terms inside PyTorch's allocator widen
// both bounds; terms outside it (CUDA context, NCCL, allocator slack) only
// the device bound. `oomguard calibrate` checks the coverage reached on the
// measured runs.
#ifndef OOMGUARD_ESTIMATOR_PEAK_BOUND_H_
#define OOMGUARD_ESTIMATOR_PEAK_BOUND_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "oomguard/v1/report.pb.h"

namespace oomguard {

// The coverage used when a request does not say, and the range accepted:
// below 0.5 the "upper" bound would sit under the point estimate; above
// 0.999 the tails of the measured errors are not known well enough.
inline constexpr double kDefaultUpperBoundCoverage = 0.95;
inline constexpr double kMinUpperBoundCoverage = 0.5;
inline constexpr double kMaxUpperBoundCoverage = 0.999;

// InvalidArgument naming `field` unless `coverage` is in
// [kMinUpperBoundCoverage, kMaxUpperBoundCoverage].
absl::Status ValidateUpperBoundCoverage(double coverage, absl::string_view field);

// z with P(Z <= z) = coverage for a standard normal Z (coverage validated).
double CoverageQuantile(double coverage);

// The variances of a rank's approximate terms, summed.
struct PeakVariance {
  double in_allocated = 0;  // Terms inside torch.cuda.max_memory_allocated.
  double device_only = 0;   // Terms outside it.
};

// Sums the uncertainties of one rank and, when `out` is not null, appends
// each one (with its basis when `with_basis`).
class UncertaintyList {
 public:
  UncertaintyList(google::protobuf::RepeatedPtrField<v1::Uncertainty>* out, bool with_basis)
      : out_(out), with_basis_(with_basis) {}
  // A term whose error has standard deviation `sd_bytes`.
  void Add(const char* name, double sd_bytes, bool in_allocated, const char* basis);
  const PeakVariance& variance() const { return variance_; }

 private:
  google::protobuf::RepeatedPtrField<v1::Uncertainty>* out_;
  bool with_basis_;
  PeakVariance variance_;
};

// The model's own approximate terms of one rank (its overheads declare
// theirs in AddOverheads).
struct ModelTerms {
  double static_bytes = 0;
  double held_activation_bytes = 0;
  double transient_bytes = 0;
};
void AddModelUncertainties(const ModelTerms& t, UncertaintyList& list);

// point + z x sqrt(variance), as a count (at least `point`).
uint64_t UpperBound(uint64_t point, double variance, double z);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_PEAK_BOUND_H_
