// How a verdict words its memory figures: one rule for every surface. Each
// peak a verdict states is the one it compares (CheckResponse.peak_bound)
// and carries its label, "95% bound" or "point estimate"
// (CheckResponse.compared_peak_label): "272.2 GiB (95% bound)". The summary,
// `oomguard check`'s steps (and so the Slurm hook's message), the webhook's
// warnings and the page all print peaks this way.
#ifndef OOMGUARD_ADMISSION_PEAK_WORDING_H_
#define OOMGUARD_ADMISSION_PEAK_WORDING_H_

#include <cstdint>
#include <string>

#include "oomguard/v1/admission.pb.h"

namespace oomguard {

// "261.7 GiB"; "1.02 TiB" from 1 TiB on.
std::string FormatBytes(double bytes);

// "95% bound" for PEAK_BOUND_UPPER at `coverage` 0.95, else "point
// estimate".
std::string ComparedPeakLabel(v1::PeakBound bound, double coverage);

// The same with the bound widened by a cluster's learned `widening`
// (AdmissionOptions.learned_widening): "95% bound + 5.2% learned" when
// widening > 0 and the bound is compared.
std::string ComparedPeakLabel(v1::PeakBound bound, double coverage, double widening);

// A widening as the verdict words it: 0.052 -> "5.2%".
std::string WideningPercent(double widening);

// `bytes` of a peak compared as in `r`: "272.2 GiB (95% bound)".
std::string LabelledPeak(uint64_t bytes, const v1::CheckResponse& r);

// Where a ladder step `rec` of `r` leaves the worst rank:
// "264.7 GiB (95% bound), still over" or "..., fits".
std::string StepOutcome(const v1::Recommendation& rec, const v1::CheckResponse& r);

}  // namespace oomguard

#endif  // OOMGUARD_ADMISSION_PEAK_WORDING_H_
