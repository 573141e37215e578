// The feedback loop's metrics (see feedback_metrics.h).
#include "service/feedback_metrics.h"

#include <map>
#include <vector>

#include "feedback/measured_error.h"
#include "feedback/metric_labels.h"
#include "feedback/model_family.h"
#include "google/protobuf/util/message_differencer.h"
#include "store/record_outcome.h"

namespace oomguard::service {
namespace {

// Around the estimator's calibrated error (a few %) and far from it.
prometheus::Histogram::BucketBoundaries ErrorBuckets() {
  return {-0.5, -0.25, -0.1, -0.05, -0.02, 0, 0.02, 0.05, 0.1, 0.25, 0.5, 1};
}

}  // namespace

v1::CheckRecord RecordBeforeReport(v1::CheckRecord after, const v1::StoredReport& report) {
  auto& reports = *after.mutable_reports();
  for (int i = 0; i < reports.size(); ++i) {
    if (google::protobuf::util::MessageDifferencer::Equals(reports[i], report)) {
      reports.DeleteSubrange(i, reports.size() - i);
      break;
    }
  }
  store::SetRecordOutcome(&after);
  return after;
}

FeedbackMetrics::FeedbackMetrics(prometheus::Registry& registry)
    : reports_(prometheus::BuildCounter()
                   .Name("oomguard_feedback_reports_total")
                   .Help("Reports of measured peaks and outcomes stored, by source and outcome.")
                   .Register(registry)),
      error_ratio_(prometheus::BuildHistogram()
                       .Name("oomguard_estimate_error_ratio")
                       .Help("(estimate - measured) / measured of each measured peak against its "
                             "pipeline stage's estimate, by model family, GPU, source and "
                             "measure (allocated or device).")
                       .Register(registry)),
      measured_peaks_(prometheus::BuildCounter()
                          .Name("oomguard_measured_peaks_total")
                          .Help("Measured peaks compared with their estimate.")
                          .Register(registry)),
      under_bound_(prometheus::BuildCounter()
                       .Name("oomguard_measured_peaks_under_bound_total")
                       .Help("Measured peaks at or under their estimate's upper bound.")
                       .Register(registry)),
      admitted_then_oom_(prometheus::BuildCounter()
                             .Name("oomguard_admitted_then_oom_total")
                             .Help("Checks whose verdict admitted the job (FITS or "
                                   "FITS_WITH_SETTINGS) that then died of a CUDA OOM.")
                             .Register(registry)),
      learned_widening_(prometheus::BuildGauge()
                            .Name("oomguard_learned_bound_widening_ratio")
                            .Help("The widening of the upper bound learned from this cluster's "
                                  "measured jobs (applied with --learned_widening on).")
                            .Register(registry)
                            .Add({})) {}

void FeedbackMetrics::Observe(const v1::CheckRecord& record_before,
                              const v1::StoredReport& report) {
  const std::string source = feedback::SourceLabel(report.source());
  reports_.Add({{"source", source}, {"outcome", feedback::OutcomeLabel(report.outcome())}})
      .Increment();
  const std::string family = feedback::ModelFamily(record_before);
  const std::string gpu =
      record_before.gpu_name().empty() ? std::string("unknown") : record_before.gpu_name();
  for (const feedback::MeasuredError& e : feedback::MeasuredErrors(record_before, report)) {
    const std::map<std::string, std::string> labels = {
        {"family", family},
        {"gpu", gpu},
        {"source", source},
        {"measure", std::string(feedback::MeasureName(e.measure))}};
    error_ratio_.Add(labels, ErrorBuckets()).Observe(e.error);
    measured_peaks_.Add(labels).Increment();
    if (e.under_bound) under_bound_.Add(labels).Increment();
  }
  // Once per check: the first CUDA OOM reported for an admitted job.
  if (report.outcome() == v1::JOB_OUTCOME_CUDA_OOM && feedback::Admitted(record_before) &&
      !feedback::DiedOfCudaOom(record_before)) {
    admitted_then_oom_.Add({{"family", family}, {"gpu", gpu}}).Increment();
  }
}

void FeedbackMetrics::SetLearnedWidening(double widening) { learned_widening_.Set(widening); }

}  // namespace oomguard::service
