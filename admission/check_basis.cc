// What every admission check shares (see check_basis.h).
#include "admission/check_basis.h"

#include <cmath>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "admission/peak_wording.h"
#include "common/status_macros.h"
#include "estimator/reported_count.h"

namespace oomguard {

absl::Status ValidateCheckInputs(const v1::GpuSpec& gpu, const AdmissionOptions& options) {
  const double margin = options.safety_margin;
  if (!(margin >= 0 && margin < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("safety_margin = ", margin, ": must be in [0, 1)"));
  }
  if (gpu.memory_bytes() == 0) {
    return absl::InvalidArgumentError("gpu memory_bytes = 0: must be > 0");
  }
  if (gpu.memory_bytes() > kMaxReportedCount) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpu memory_bytes = ", gpu.memory_bytes(), ": must be at most 2^50 (1 PiB)"));
  }
  if (!(options.learned_widening >= 0 && options.learned_widening <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("learned_widening = ", options.learned_widening, ": must be in [0, 1]"));
  }
  return ValidateUpperBoundCoverage(options.upper_bound_coverage, "upper_bound_coverage");
}

double AppliedWidening(const AdmissionOptions& options) {
  return options.compare_upper_bound ? options.learned_widening : 0.0;
}

uint64_t ComparedBytes(uint64_t point, uint64_t upper, const AdmissionOptions& options) {
  if (!options.compare_upper_bound) return point;
  const double widening = options.learned_widening;
  if (widening <= 0) return upper;
  // Bounds are at most 2^50 and widening at most 1: the product fits.
  return static_cast<uint64_t>(std::ceil(static_cast<double>(upper) * (1.0 + widening)));
}

uint64_t UsableBytes(const v1::GpuSpec& gpu, double safety_margin) {
  return static_cast<uint64_t>(
      std::floor(static_cast<double>(gpu.memory_bytes()) * (1.0 - safety_margin)));
}

void SetComparedPeak(uint32_t pp_rank, uint64_t point, uint64_t upper, const v1::GpuSpec& gpu,
                     const AdmissionOptions& options, v1::CheckResponse* out) {
  const uint64_t usable = UsableBytes(gpu, options.safety_margin);
  const uint64_t compared = ComparedBytes(point, upper, options);
  out->set_worst_pp_rank(pp_rank);
  out->set_peak_device_bytes(point);
  out->set_peak_device_upper_bytes(upper);
  out->set_peak_bound(options.compare_upper_bound ? v1::PEAK_BOUND_UPPER : v1::PEAK_BOUND_POINT);
  out->set_compared_peak_bytes(compared);
  out->set_upper_bound_coverage(options.upper_bound_coverage);
  const double widening = AppliedWidening(options);
  out->set_compared_peak_label(
      ComparedPeakLabel(out->peak_bound(), options.upper_bound_coverage, widening));
  if (widening > 0) {
    out->set_learned_widening(widening);
    out->set_learned_widening_jobs(options.learned_widening_jobs);
    out->set_learned_widening_cluster(options.learned_widening_cluster);
  }
  out->set_capacity_bytes(gpu.memory_bytes());
  out->set_usable_bytes(usable);
  out->set_headroom_bytes(static_cast<int64_t>(usable) - static_cast<int64_t>(compared));
  out->set_safety_margin(options.safety_margin);
  out->set_gpu_name(gpu.name());
}

std::string WideningSentence(const v1::CheckResponse& r) {
  if (r.learned_widening() <= 0) return "";
  return absl::StrFormat(
      " The %s is widened by %s, learned from %d measured jobs of cluster \"%s\".",
      ComparedPeakLabel(v1::PEAK_BOUND_UPPER, r.upper_bound_coverage()),
      WideningPercent(r.learned_widening()), r.learned_widening_jobs(),
      absl::CHexEscape(r.learned_widening_cluster()));
}

v1::Recommendation MeasuredRecommendation(v1::Recommendation::Kind kind, std::string id,
                                          std::string setting, std::string reason, uint64_t before,
                                          uint64_t after, uint64_t usable) {
  v1::Recommendation rec;
  rec.set_kind(kind);
  rec.set_id(std::move(id));
  rec.set_setting(std::move(setting));
  rec.set_reason(std::move(reason));
  rec.set_saved_bytes(static_cast<int64_t>(before) - static_cast<int64_t>(after));
  rec.set_peak_device_bytes_after(after);
  rec.set_sufficient(after <= usable);
  return rec;
}

std::string UsablePhrase(const v1::CheckResponse& r, const v1::GpuSpec& gpu) {
  const std::string on =
      gpu.name().empty() ? absl::StrCat("a ", FormatBytes(r.capacity_bytes()), " GPU") : gpu.name();
  std::string phrase = absl::StrFormat("%s usable on %s", FormatBytes(r.usable_bytes()), on);
  if (r.safety_margin() > 0) {
    absl::StrAppendFormat(&phrase, " (%s less %g%% kept free)", FormatBytes(r.capacity_bytes()),
                          100 * r.safety_margin());
  }
  return phrase;
}

std::string PeakPhrase(const v1::CheckResponse& r) {
  const bool point = r.peak_bound() == v1::PEAK_BOUND_POINT;
  const v1::PeakBound other = point ? v1::PEAK_BOUND_UPPER : v1::PEAK_BOUND_POINT;
  return absl::StrCat(
      FormatBytes(static_cast<double>(r.compared_peak_bytes())), " (", r.compared_peak_label(),
      "; ", ComparedPeakLabel(other, r.upper_bound_coverage()), " ",
      FormatBytes(static_cast<double>(point ? r.peak_device_upper_bytes() : r.peak_device_bytes())),
      ")");
}

std::string LadderAdvice(const std::vector<const v1::Recommendation*>& ladder,
                         const v1::CheckResponse& r) {
  if (ladder.empty()) return "; no recommended change helps: use more GPUs or larger ones";
  std::string s = absl::StrCat("; first try ", ladder.front()->setting(), " (saves ",
                               FormatBytes(ladder.front()->saved_bytes()), ")");
  const v1::Recommendation* last = ladder.back();
  if (!last->sufficient()) {
    absl::StrAppend(&s, "; even with all ", ladder.size(), " recommended changes it needs ",
                    LabelledPeak(last->peak_device_bytes_after(), r),
                    ": use more GPUs or larger ones");
  } else if (ladder.size() > 1) {
    absl::StrAppend(&s, "; it fits once the recommendations up to ", last->setting(),
                    " are applied");
  }
  return s;
}

}  // namespace oomguard
