// The wording of a verdict's peaks (see peak_wording.h).
#include "admission/peak_wording.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace oomguard {

std::string FormatBytes(double bytes) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  if (std::abs(bytes) >= 1024 * kGiB) return absl::StrFormat("%.2f TiB", bytes / (1024 * kGiB));
  return absl::StrFormat("%.1f GiB", bytes / kGiB);
}

std::string ComparedPeakLabel(v1::PeakBound bound, double coverage) {
  if (bound == v1::PEAK_BOUND_POINT) return "point estimate";
  return absl::StrFormat("%g%% bound", 100 * coverage);
}

std::string ComparedPeakLabel(v1::PeakBound bound, double coverage, double widening) {
  std::string label = ComparedPeakLabel(bound, coverage);
  if (bound != v1::PEAK_BOUND_POINT && widening > 0) {
    absl::StrAppend(&label, " + ", WideningPercent(widening), " learned");
  }
  return label;
}

std::string WideningPercent(double widening) { return absl::StrFormat("%.1f%%", 100 * widening); }

std::string LabelledPeak(uint64_t bytes, const v1::CheckResponse& r) {
  return absl::StrCat(FormatBytes(static_cast<double>(bytes)), " (", r.compared_peak_label(), ")");
}

std::string StepOutcome(const v1::Recommendation& rec, const v1::CheckResponse& r) {
  return absl::StrCat(LabelledPeak(rec.peak_device_bytes_after(), r),
                      rec.sufficient() ? ", fits" : ", still over");
}

}  // namespace oomguard
