#include "estimator/peak_bound.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "estimator/reported_count.h"

namespace oomguard {
namespace {

// One standard deviation of the error of each model term, as a fraction of
// the term (see AddModelUncertainties for the evidence behind each).
constexpr double kStaticSpread = 0.01;
constexpr double kActivationSpread = 0.03;
constexpr double kTransientSpread = 0.25;

}  // namespace

absl::Status ValidateUpperBoundCoverage(double coverage, absl::string_view field) {
  if (coverage >= kMinUpperBoundCoverage && coverage <= kMaxUpperBoundCoverage) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(field, " = ", coverage, ": must be in [",
                                                 kMinUpperBoundCoverage, ", ",
                                                 kMaxUpperBoundCoverage, "]"));
}

double CoverageQuantile(double coverage) {
  // Newton's method on the normal CDF, 0.5 * erfc(-z / sqrt(2)) = coverage,
  // from z = 0. The CDF rises and is concave for z >= 0, so the iterates
  // climb to the root without overshooting: 7 steps at 0.95, 11 at 0.999
  // (every estimate computes it; the planner runs hundreds).
  const double inv_sqrt_2pi = 1 / std::sqrt(2 * M_PI);
  double z = 0;
  for (int i = 0; i < 64; ++i) {
    const double step =
        (coverage - 0.5 * std::erfc(-z / std::sqrt(2.0))) / (inv_sqrt_2pi * std::exp(-0.5 * z * z));
    z += step;
    if (step < 1e-12) break;
  }
  return z;
}

void UncertaintyList::Add(const char* name, double sd_bytes, bool in_allocated, const char* basis) {
  if (!(sd_bytes > 0)) return;
  (in_allocated ? variance_.in_allocated : variance_.device_only) += sd_bytes * sd_bytes;
  if (out_ == nullptr) return;
  v1::Uncertainty* u = out_->Add();
  u->set_name(name);
  u->set_sd_bytes(RoundedCount(sd_bytes));
  u->set_in_allocated(in_allocated);
  if (with_basis_) u->set_basis(basis);
}

void AddModelUncertainties(const ModelTerms& t, UncertaintyList& list) {
  list.Add("static_buffers", kStaticSpread * t.static_bytes, true,
           "parameters, gradients and optimizer state follow Megatron's buffers exactly, but "
           "bucket and chunk padding and library-held buffers vary with the version: "
           "sd 1% of static (measured static errors on the shared calibration)");
  list.Add("held_activations", kActivationSpread * t.held_activation_bytes, true,
           "tensors saved for backward, derived module by module from Megatron-Core and "
           "Transformer Engine and measured on 1-8 GPU runs: sd 3% of held activations");
  list.Add("backward_transient", kTransientSpread * t.transient_bytes, true,
           "the backward working set (activation gradients, weight-gradient temporaries, "
           "recomputed layer) depends on when the allocator frees each tensor: sd 25%");
}

uint64_t UpperBound(uint64_t point, double variance, double z) {
  return AddCounts(point, RoundedCount(z * std::sqrt(variance)));
}

}  // namespace oomguard
