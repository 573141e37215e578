// The feedback loop's Prometheus metrics: what came back for the checks a
// server kept (RPC Report) against what the verdict estimated. Observed by
// the Report handler once per stored report, from the check's record as it
// was before the report and the report as stored. Labels are bounded:
// `family` (feedback/model_family.h), `gpu` (the record's catalog name,
// "unknown" for a GPU given by bytes), `source` and `outcome`
// (feedback/metric_labels.h: "megatron_log", "dcgm", "cuda_oom", ...), `measure` ("allocated" |
// "device", feedback/measured_error.h).
//
//   oomguard_feedback_reports_total{source,outcome}                     counter
//   oomguard_estimate_error_ratio{family,gpu,source,measure}            histogram of
//       (estimate - measured) / measured, each measured peak against its stage
//   oomguard_measured_peaks_total{family,gpu,source,measure}            counter
//   oomguard_measured_peaks_under_bound_total{family,gpu,source,measure} counter
//       (the fraction of measured peaks under the upper bound: their ratio)
//   oomguard_admitted_then_oom_total{family,gpu}                        counter:
//       checks the verdict admitted (FITS, FITS_WITH_SETTINGS) whose job then
//       reported JOB_OUTCOME_CUDA_OOM, each check once
//   oomguard_learned_bound_widening_ratio                               gauge: the
//       widening learned for the server's cluster (service/learned_widening.h),
//       what a verdict applies when the widening is on; 0 until enough jobs
//       are measured
#ifndef OOMGUARD_SERVICE_FEEDBACK_METRICS_H_
#define OOMGUARD_SERVICE_FEEDBACK_METRICS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "oomguard/v1/feedback.pb.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace oomguard::service {

// The record as it was before `report` was added, from the record read
// after it (`after`: its reports in the order received): its reports before
// the first one equal to `report` (all when none is), its outcome theirs.
// Read after the write, so that of two reports of one check stored at once
// exactly one sees the other before it (an admitted job's CUDA OOM counts
// once).
v1::CheckRecord RecordBeforeReport(v1::CheckRecord after, const v1::StoredReport& report);

// Thread-safe (prometheus-cpp's families and series are).
class FeedbackMetrics {
 public:
  // Registers the series above in `registry` (the server's, which /metrics
  // serves), which must outlive this.
  explicit FeedbackMetrics(prometheus::Registry& registry);

  // One report stored for the check of `record_before` (the record as it was
  // before `report` was added: its estimate, verdict, GPU and earlier
  // outcome).
  void Observe(const v1::CheckRecord& record_before, const v1::StoredReport& report);

  // The widening learned for the server's cluster.
  void SetLearnedWidening(double widening);

 private:
  prometheus::Family<prometheus::Counter>& reports_;
  prometheus::Family<prometheus::Histogram>& error_ratio_;
  prometheus::Family<prometheus::Counter>& measured_peaks_;
  prometheus::Family<prometheus::Counter>& under_bound_;
  prometheus::Family<prometheus::Counter>& admitted_then_oom_;
  prometheus::Gauge& learned_widening_;
};

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_FEEDBACK_METRICS_H_
