// The admission check (see admission.h): the verdict, the climb of the
// ladder of recommended changes (recommendations.h), the incompatibility
// checks and the summary sentence.
#include "admission/admission.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "admission/check_basis.h"
#include "admission/gpu_catalog.h"
#include "admission/peak_wording.h"
#include "admission/recommendations.h"
#include "common/status_macros.h"
#include "estimator/estimator.h"
#include "estimator/reported_count.h"
#include "estimator/unmodelled_settings.h"

namespace oomguard {
namespace {

// --- The check --------------------------------------------------------------

// The worst rank of an estimate: the one with the largest compared peak
// (`bytes`: its device upper bound, or its point estimate when the policy
// says so), with both of its peaks.
struct Peak {
  uint32_t pp_rank = 0;
  uint64_t bytes = 0;
  uint64_t point = 0, upper = 0;
};

Peak RankPeakOf(uint32_t pp_rank, uint64_t point, uint64_t upper, const AdmissionOptions& options) {
  return Peak{pp_rank, ComparedBytes(point, upper, options), point, upper};
}

absl::StatusOr<Peak> WorstPeak(const v1::EstimateReport& report, const AdmissionOptions& options) {
  if (report.ranks().empty()) return absl::InternalError("the estimate has no ranks");
  std::optional<Peak> worst;
  for (const v1::RankReport& r : report.ranks()) {
    const Peak p =
        RankPeakOf(r.pp_rank(), r.peak_device_bytes(), r.peak_device_upper_bytes(), options);
    if (!worst || p.bytes > worst->bytes) worst = p;
  }
  return *worst;
}

// The widening multiplies every compared bound alike, so the worst rank is
// the estimator's.
Peak WorstPeak(const PeakEstimate& peaks, const AdmissionOptions& options) {
  const int64_t worst = peaks.WorstRank(options.compare_upper_bound);
  const RankPeak& r = peaks.ranks[worst];
  return RankPeakOf(static_cast<uint32_t>(worst), r.peak_device_bytes, r.peak_device_upper_bytes,
                    options);
}

// The job's own estimate: its report (empty without `with_report`), its
// worst peak and the first rank over the limit of reported_count.h.
struct BaseEstimate {
  bool has_report = false;
  v1::EstimateReport report;
  Peak worst;
  std::optional<uint32_t> over_limit;
};

// Runs estimates within the deadline. With `fast_peaks`, a re-estimate that
// needs only the worst peak runs the estimator's peaks-only path
// (EstimatePeaks: the same numbers without building a report).
class BudgetedEstimator {
 public:
  BudgetedEstimator(EstimateFunction estimate, const AdmissionOptions& options, bool fast_peaks)
      : estimate_(estimate),
        options_(options),
        deadline_(options.deadline),
        fast_peaks_(fast_peaks) {}

  absl::StatusOr<v1::EstimateReport> Report(const v1::JobSpec& job) {
    OOMGUARD_RETURN_IF_ERROR(CheckDeadline());
    ++runs_;
    return estimate_(job);
  }

  // The peaks of `job` (only with `fast_peaks`).
  absl::StatusOr<PeakEstimate> Peaks(const v1::JobSpec& job) {
    OOMGUARD_RETURN_IF_ERROR(CheckDeadline());
    ++runs_;
    return EstimatePeaks(job, deadline_, options_.upper_bound_coverage);
  }

  // The worst peak of `job`; nullopt when the estimator refuses it.
  absl::StatusOr<std::optional<Peak>> TryPeak(const v1::JobSpec& job) {
    if (fast_peaks_) {
      const absl::StatusOr<PeakEstimate> peaks = Peaks(job);
      if (Stopped(peaks.status())) return peaks.status();
      if (!peaks.ok()) return std::nullopt;
      return WorstPeak(*peaks, options_);
    }
    absl::StatusOr<v1::EstimateReport> report = Report(job);
    if (Stopped(report.status())) return report.status();
    if (!report.ok()) return std::nullopt;
    OOMGUARD_ASSIGN_OR_RETURN(const Peak peak, WorstPeak(*report, options_));
    return peak;
  }

 private:
  absl::Status CheckDeadline() const {
    if (!deadline_.Passed()) return absl::OkStatus();
    return deadline_.Check(
        absl::StrCat("running the admission check (after ", runs_, " estimates)"));
  }
  // The deadline's errors, which end the check (any other error of a
  // re-estimate only drops that recommendation).
  static bool Stopped(const absl::Status& status) {
    return absl::IsDeadlineExceeded(status) || absl::IsUnavailable(status);
  }

  EstimateFunction estimate_;
  const AdmissionOptions& options_;
  const Deadline& deadline_;
  bool fast_peaks_;
  int runs_ = 0;
};

// A step of the ladder or an incompatibility fix, measured.
v1::Recommendation MakeRecommendation(const RecommendedChange& change, std::string setting,
                                      uint64_t before, uint64_t after, uint64_t usable) {
  return MeasuredRecommendation(change.kind, change.id, std::move(setting), change.reason, before,
                                after, usable);
}

// Climbs the ladder from `job` (peak `peak`), appending the steps taken.
// Returns whether the job fits after the environment steps.
absl::StatusOr<bool> ClimbLadder(v1::JobSpec job, uint64_t peak, const v1::GpuSpec& gpu,
                                 uint64_t usable, BudgetedEstimator& estimator,
                                 v1::CheckResponse* out) {
  bool fits_with_settings = peak <= usable;
  for (const LadderRung& rung : RecommendationLadder()) {
    const bool config = rung.front().kind == v1::Recommendation::KIND_CONFIG_CHANGE;
    if (config && peak <= usable) break;
    for (const RecommendedChange& change : rung) {
      v1::JobSpec candidate = job;
      std::optional<std::string> setting = change.Apply(gpu, &candidate);
      if (!setting) continue;
      OOMGUARD_ASSIGN_OR_RETURN(const std::optional<Peak> after, estimator.TryPeak(candidate));
      if (!after.has_value() || after->bytes >= peak) continue;
      *out->add_recommendations() =
          MakeRecommendation(change, *std::move(setting), peak, after->bytes, usable);
      job = std::move(candidate);
      peak = after->bytes;
      break;
    }
    if (!config) fits_with_settings = peak <= usable;
  }
  return fits_with_settings;
}

absl::Status AddIncompatibilities(const v1::JobSpec& job, const Peak& base, const v1::GpuSpec& gpu,
                                  uint64_t usable, BudgetedEstimator& estimator,
                                  v1::CheckResponse* out) {
  for (const RecommendedChange& change : IncompatibilityFixes()) {
    v1::JobSpec fixed = job;
    std::optional<std::string> setting = change.Apply(gpu, &fixed);
    if (!setting) continue;
    OOMGUARD_ASSIGN_OR_RETURN(const std::optional<Peak> after, estimator.TryPeak(fixed));
    const uint64_t after_bytes = after.has_value() ? after->bytes : base.bytes;
    *out->add_recommendations() =
        MakeRecommendation(change, *std::move(setting), base.bytes, after_bytes, usable);
  }
  return absl::OkStatus();
}

// The first rank whose estimate reached the limit of reported_count.h.
std::optional<uint32_t> RankOverLimit(const v1::EstimateReport& report) {
  for (const v1::RankReport& r : report.ranks()) {
    if (r.exceeds_limit()) return r.pp_rank();
  }
  return std::nullopt;
}

std::optional<uint32_t> RankOverLimit(const PeakEstimate& peaks) {
  for (size_t r = 0; r < peaks.ranks.size(); ++r) {
    if (peaks.ranks[r].exceeds_limit) return static_cast<uint32_t>(r);
  }
  return std::nullopt;
}

absl::StatusOr<BaseEstimate> EstimateBase(const v1::JobSpec& job, const AdmissionOptions& options,
                                          bool fast_peaks, BudgetedEstimator& estimator) {
  BaseEstimate base;
  if (fast_peaks && !options.with_report) {
    OOMGUARD_ASSIGN_OR_RETURN(const PeakEstimate peaks, estimator.Peaks(job));
    base.worst = WorstPeak(peaks, options);
    base.over_limit = RankOverLimit(peaks);
    return base;
  }
  OOMGUARD_ASSIGN_OR_RETURN(base.report, estimator.Report(job));
  base.has_report = true;
  OOMGUARD_ASSIGN_OR_RETURN(base.worst, WorstPeak(base.report, options));
  base.over_limit = RankOverLimit(base.report);
  return base;
}

// `qualifier` follows the verdict's words (", judged without modelling
// --X" or empty).
std::string Summary(const v1::CheckResponse& r, const v1::GpuSpec& gpu,
                    absl::string_view qualifier) {
  const std::string where = absl::StrFormat("PP rank %d peaks at %s of %s", r.worst_pp_rank(),
                                            PeakPhrase(r), UsablePhrase(r, gpu));
  std::vector<const v1::Recommendation*> env, ladder, incompatible;
  for (const v1::Recommendation& rec : r.recommendations()) {
    if (rec.kind() == v1::Recommendation::KIND_INCOMPATIBILITY) {
      incompatible.push_back(&rec);
    } else {
      ladder.push_back(&rec);
      if (rec.kind() == v1::Recommendation::KIND_ENVIRONMENT) env.push_back(&rec);
    }
  }
  std::string s;
  switch (r.verdict()) {
    case v1::VERDICT_FITS:
      s = absl::StrCat("Fits", qualifier, ": ", where, ", ", FormatBytes(r.headroom_bytes()),
                       " headroom");
      break;
    case v1::VERDICT_FITS_WITH_SETTINGS: {
      std::vector<std::string> settings;
      int64_t saved = 0;
      for (const v1::Recommendation* rec : env) {
        settings.push_back(rec->setting());
        saved += rec->saved_bytes();
      }
      s = absl::StrCat("Fits only with ", absl::StrJoin(settings, " and "), qualifier, ": ", where,
                       ", and the setting saves ", FormatBytes(saved));
      break;
    }
    default: {
      s = absl::StrCat("Does not fit", qualifier, ": ", where, ", ",
                       FormatBytes(-r.headroom_bytes()), " over");
      absl::StrAppend(&s, LadderAdvice(ladder, r));
    }
  }
  if (!incompatible.empty()) {
    absl::StrAppend(&s, "; also, as given it will not start: ", incompatible.front()->reason(),
                    " (fix: ", incompatible.front()->setting(), ")");
  }
  return absl::StrCat(s, ".", WideningSentence(r));
}

}  // namespace

namespace {

// The check; `fast_peaks`: re-estimates through EstimatePeaks (only with the
// real estimator, which it shares its numbers with).
absl::StatusOr<v1::CheckResponse> RunCheck(const v1::JobSpec& job_spec, const v1::GpuSpec& gpu,
                                           const AdmissionOptions& options,
                                           EstimateFunction estimate, bool fast_peaks) {
  // The job and every change the ladder tries run on this GPU's architecture.
  const v1::JobSpec job = JobOnGpu(job_spec, gpu);
  OOMGUARD_RETURN_IF_ERROR(ValidateCheckInputs(gpu, options));
  // A job with settings oomguard does not model is judged only when asked,
  // and then says so in its verdict.
  std::string qualifier;
  if (job.unmodelled_settings_size() > 0) {
    if (!options.judge_unmodelled) {
      // A job invalid in what oomguard reads is invalid whatever else it
      // sets: it would not start.
      if (absl::Status estimated = estimate(job).status();
          !estimated.ok() && !absl::IsUnimplemented(estimated)) {
        return estimated;
      }
      return NotJudgedUnmodelled(job);
    }
    qualifier = absl::StrCat(", judged without modelling ", UnmodelledSettingList(job));
  }
  BudgetedEstimator estimator(estimate, options, fast_peaks);
  OOMGUARD_ASSIGN_OR_RETURN(BaseEstimate estimated,
                            EstimateBase(job, options, fast_peaks, estimator));
  const Peak& base = estimated.worst;

  v1::CheckResponse out;
  SetComparedPeak(base.pp_rank, base.point, base.upper, gpu, options, &out);
  const uint64_t usable = out.usable_bytes();
  *out.mutable_unmodelled_settings() = job.unmodelled_settings();
  // The estimate's notes on them, kept when the report is omitted.
  if (!estimated.has_report && job.unmodelled_settings_size() > 0) {
    for (std::string& note : UnmodelledSettingNotes(job)) {
      estimated.report.add_notes(std::move(note));
    }
    estimated.has_report = true;
  }

  if (const std::optional<uint32_t> over = estimated.over_limit) {
    // The estimate stopped at 2^50 bytes: no GPU holds that, and no saving
    // can be measured from a capped number, so there is no ladder.
    out.set_verdict(v1::VERDICT_DOES_NOT_FIT);
    out.set_summary(
        absl::StrCat("Does not fit", qualifier, ": PP rank ", *over, " needs ", kOverLimitWording,
                     ", against ", UsablePhrase(out, gpu),
                     "; no recommended change is measured on an estimate that "
                     "large: make the micro-batch, the sequence or the model smaller."));
    if (estimated.has_report) *out.mutable_report() = std::move(estimated.report);
    return out;
  }
  OOMGUARD_ASSIGN_OR_RETURN(const bool fits_with_settings,
                            ClimbLadder(job, base.bytes, gpu, usable, estimator, &out));
  OOMGUARD_RETURN_IF_ERROR(AddIncompatibilities(job, base, gpu, usable, estimator, &out));
  out.set_verdict(base.bytes <= usable ? v1::VERDICT_FITS
                  : fits_with_settings ? v1::VERDICT_FITS_WITH_SETTINGS
                                       : v1::VERDICT_DOES_NOT_FIT);
  out.set_summary(Summary(out, gpu, qualifier));
  if (estimated.has_report) *out.mutable_report() = std::move(estimated.report);
  return out;
}

}  // namespace

absl::StatusOr<v1::CheckResponse> CheckJob(const v1::JobSpec& job, const v1::GpuSpec& gpu,
                                           const AdmissionOptions& options) {
  return RunCheck(
      job, gpu, options,
      [&options](const v1::JobSpec& j) {
        EstimateOptions brief;
        brief.overhead_basis = false;
        brief.deadline = options.deadline;
        brief.upper_bound_coverage = options.upper_bound_coverage;
        return Estimate(j, brief);
      },
      /*fast_peaks=*/true);
}

absl::StatusOr<v1::CheckResponse> CheckJob(const v1::JobSpec& job, const v1::GpuSpec& gpu,
                                           const AdmissionOptions& options,
                                           EstimateFunction estimate) {
  return RunCheck(job, gpu, options, estimate, /*fast_peaks=*/false);
}

}  // namespace oomguard
