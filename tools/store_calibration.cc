// A cluster's own calibration table (see store_calibration.h).
#include "tools/store_calibration.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "feedback/bound_widening.h"
#include "feedback/measured_error.h"
#include "feedback/metric_labels.h"
#include "feedback/model_family.h"
#include "tools/calibration.h"

namespace oomguard {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// What the summary says of one measure's peaks.
struct MeasureSummary {
  std::vector<double> abs_errors;
  double worst_underestimate = 0;  // The most negative error (<= 0).
  int under_bound = 0;
};

std::string MeasureLine(feedback::Measure measure, const MeasureSummary& s) {
  const size_t n = s.abs_errors.size();
  if (n == 0) return absl::StrCat(feedback::MeasureName(measure), ": none measured\n");
  return absl::StrFormat(
      "%s (%d peaks): point |err| median %.1f%%, worst %.1f%%; worst underestimate %.1f%%; "
      "upper bound covers %.1f%%\n",
      feedback::MeasureName(measure), n, 100 * Median(s.abs_errors),
      100 * *std::max_element(s.abs_errors.begin(), s.abs_errors.end()),
      100 * s.worst_underestimate, 100.0 * s.under_bound / static_cast<double>(n));
}

}  // namespace

absl::StatusOr<std::string> FormatStoreCalibration(store::CheckStore& store,
                                                   absl::string_view cluster) {
  std::string out = absl::StrFormat("%-32s %-9s %-16s %5s %-9s %9s %9s %7s %9s %-5s  %s\n", "check",
                                    "family", "gpu", "stage", "measure", "measured", "est", "err%",
                                    "upper", "bound", "source");
  MeasureSummary measures[2];
  std::vector<double> needed;
  int records = 0, admitted = 0, admitted_then_oom = 0;
  store::RecordFilter filter;
  filter.cluster = std::string(cluster);
  filter.with_reports = true;
  const absl::Status read = store.ForEachRecord(filter, [&](const v1::CheckRecord& record) {
    ++records;
    const std::string family = feedback::ModelFamily(record);
    for (const v1::StoredReport& report : record.reports()) {
      for (const feedback::MeasuredError& e : feedback::MeasuredErrors(record, report)) {
        absl::StrAppendFormat(
            &out, "%-32s %-9s %-16s %5d %-9s %9.3f %9.3f %+7.1f %9.3f %-5s  %s\n",
            record.check_id(), family, record.gpu_name().empty() ? "-" : record.gpu_name(),
            e.pp_rank, feedback::MeasureName(e.measure), e.measured_bytes / kGiB,
            e.estimate_bytes / kGiB, 100 * e.error, e.upper_bytes / kGiB,
            e.under_bound ? "under" : "OVER", feedback::SourceLabel(report.source()));
        MeasureSummary& s = measures[static_cast<int>(e.measure)];
        s.abs_errors.push_back(std::abs(e.error));
        s.worst_underestimate = std::min(s.worst_underestimate, e.error);
        s.under_bound += e.under_bound ? 1 : 0;
      }
    }
    if (feedback::Admitted(record)) {
      ++admitted;
      admitted_then_oom += feedback::DiedOfCudaOom(record) ? 1 : 0;
    }
    if (std::optional<double> w = feedback::NeededWidening(record)) needed.push_back(*w);
  });
  if (!read.ok()) return read;

  const feedback::WideningOptions options;
  const feedback::LearnedWidening learned = feedback::LearnWidening(needed, options);
  const std::string whose = cluster.empty()
                                ? "every cluster"
                                : absl::StrCat("cluster \"", absl::CHexEscape(cluster), "\"");
  absl::StrAppendFormat(&out,
                        "\n%s: %d checks with reports, %d measured (GiB; err = "
                        "estimate/measured - 1)\n",
                        whose, records, learned.measured_jobs);
  absl::StrAppend(&out, MeasureLine(feedback::Measure::kAllocated, measures[0]),
                  MeasureLine(feedback::Measure::kDevice, measures[1]));
  absl::StrAppendFormat(&out, "admitted then CUDA OOM: %d of %d admitted checks\n",
                        admitted_then_oom, admitted);
  if (learned.enough_jobs) {
    absl::StrAppendFormat(&out,
                          "learned widening: %.1f%% (%d of %d measured jobs over the bound; "
                          "needed %.1f%%, at most %.1f%%), applied with `oomguard serve "
                          "--learned_widening on`\n",
                          100 * learned.widening, learned.jobs_over_bound, learned.measured_jobs,
                          100 * learned.needed, 100 * options.max_widening);
  } else {
    absl::StrAppendFormat(&out, "learned widening: none (%d of the %d measured jobs it needs)\n",
                          learned.measured_jobs, options.min_measured_jobs);
  }
  return out;
}

}  // namespace oomguard
