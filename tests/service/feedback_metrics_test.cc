// Tests of the feedback loop's metrics (service/feedback_metrics.h): each
// series against a report whose errors are worked out by hand on the shared
// two-stage record (tests/feedback/feedback_test_records.h).
#include "service/feedback_metrics.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "feedback/metric_labels.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"
#include "tests/feedback/feedback_test_records.h"

namespace oomguard::service {
namespace {

using feedback::testing::Allocated;
using feedback::testing::DeviceUsed;
using feedback::testing::Report;
using feedback::testing::TwoStageRecord;

// "<family>{<label>=<value>,...}" -> the counter's or gauge's value, or for
// a histogram its sample count, and "<family>_sum{...}" its sum.
std::map<std::string, double> Samples(prometheus::Registry& registry) {
  std::map<std::string, double> out;
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    for (const prometheus::ClientMetric& m : family.metric) {
      std::string labels = "{";
      for (const auto& label : m.label) absl::StrAppend(&labels, label.name, "=", label.value, ",");
      labels += "}";
      switch (family.type) {
        case prometheus::MetricType::Counter:
          out[family.name + labels] = m.counter.value;
          break;
        case prometheus::MetricType::Gauge:
          out[family.name + labels] = m.gauge.value;
          break;
        case prometheus::MetricType::Histogram:
          out[family.name + labels] = static_cast<double>(m.histogram.sample_count);
          out[family.name + "_sum" + labels] = m.histogram.sample_sum;
          break;
        default:
          break;
      }
    }
  }
  return out;
}

TEST(FeedbackMetricsTest, LabelsAreTheEnumsInLowerCase) {
  using feedback::OutcomeLabel;
  using feedback::SourceLabel;
  EXPECT_EQ(SourceLabel(v1::MEASUREMENT_SOURCE_MEGATRON_LOG), "megatron_log");
  EXPECT_EQ(SourceLabel(v1::MEASUREMENT_SOURCE_MEGATRON_BRIDGE_LOG), "megatron_bridge_log");
  EXPECT_EQ(SourceLabel(v1::MEASUREMENT_SOURCE_DCGM), "dcgm");
  EXPECT_EQ(OutcomeLabel(v1::JOB_OUTCOME_CUDA_OOM), "cuda_oom");
  EXPECT_EQ(OutcomeLabel(v1::JOB_OUTCOME_UNSPECIFIED), "unspecified");
}

TEST(FeedbackMetricsTest, EachMeasuredPeakAgainstItsStage) {
  prometheus::Registry registry;
  FeedbackMetrics metrics(registry);
  v1::CheckRecord record = TwoStageRecord();
  record.mutable_job_spec()->mutable_model()->set_num_experts(8);
  // Rank 0 (stage 0): 40 against 50, error +0.25, under 55. Rank 4 (stage
  // 1): 46 against 40, error -6/46, over 44.
  metrics.Observe(record, Report({Allocated(0, 40), Allocated(4, 46)}, v1::JOB_OUTCOME_RAN));
  const std::map<std::string, double> s = Samples(registry);
  const std::string labels =
      "{family=moe,gpu=H100-SXM-80GB,measure=allocated,source=megatron_log,}";
  EXPECT_EQ(s.at("oomguard_feedback_reports_total{outcome=ran,source=megatron_log,}"), 1);
  EXPECT_EQ(s.at("oomguard_measured_peaks_total" + labels), 2);
  EXPECT_EQ(s.at("oomguard_measured_peaks_under_bound_total" + labels), 1);
  EXPECT_EQ(s.at("oomguard_estimate_error_ratio" + labels), 2);
  EXPECT_NEAR(s.at("oomguard_estimate_error_ratio_sum" + labels), 0.25 - 6.0 / 46, 1e-12);
  EXPECT_EQ(s.count("oomguard_admitted_then_oom_total{family=moe,gpu=H100-SXM-80GB,}"), 0u);
}

TEST(FeedbackMetricsTest, ADeviceReportOfAGpuGivenByBytes) {
  prometheus::Registry registry;
  FeedbackMetrics metrics(registry);
  v1::CheckRecord record = TwoStageRecord();
  record.clear_gpu_name();
  v1::StoredReport report = Report({DeviceUsed("node1/0", 65)});
  report.set_source(v1::MEASUREMENT_SOURCE_DCGM);
  metrics.Observe(record, report);
  const std::map<std::string, double> s = Samples(registry);
  const std::string labels = "{family=unknown,gpu=unknown,measure=device,source=dcgm,}";
  EXPECT_EQ(s.at("oomguard_feedback_reports_total{outcome=unspecified,source=dcgm,}"), 1);
  EXPECT_EQ(s.at("oomguard_measured_peaks_total" + labels), 1);
  EXPECT_EQ(s.at("oomguard_measured_peaks_under_bound_total" + labels), 1);
  EXPECT_NEAR(s.at("oomguard_estimate_error_ratio_sum" + labels), -1.0 / 13, 1e-12);
}

TEST(FeedbackMetricsTest, AnAdmittedJobThatRanOutOfMemoryCountsOncePerCheck) {
  prometheus::Registry registry;
  FeedbackMetrics metrics(registry);
  v1::CheckRecord record = TwoStageRecord();  // FITS
  const v1::StoredReport oom = Report({}, v1::JOB_OUTCOME_CUDA_OOM);
  metrics.Observe(record, oom);
  // The same check's second report of the OOM (Slurm's after the log's):
  // its record now holds the first.
  *record.add_reports() = oom;
  record.set_outcome(v1::JOB_OUTCOME_CUDA_OOM);
  metrics.Observe(record, oom);
  // A check the verdict refused that ran out of memory anyway.
  v1::CheckRecord refused = TwoStageRecord();
  refused.set_verdict(v1::VERDICT_DOES_NOT_FIT);
  metrics.Observe(refused, oom);
  // Admitted with settings, then OOM.
  v1::CheckRecord with_settings = TwoStageRecord();
  with_settings.set_verdict(v1::VERDICT_FITS_WITH_SETTINGS);
  metrics.Observe(with_settings, oom);
  const std::map<std::string, double> s = Samples(registry);
  EXPECT_EQ(s.at("oomguard_admitted_then_oom_total{family=unknown,gpu=H100-SXM-80GB,}"), 2);
  EXPECT_EQ(s.at("oomguard_feedback_reports_total{outcome=cuda_oom,source=megatron_log,}"), 4);
}

TEST(FeedbackMetricsTest, TheRecordBeforeAReportIsTheReportsBeforeIt) {
  // Two OOM reports of one check stored at once, read back after both: each
  // sees only what came before it, so exactly one counts.
  v1::CheckRecord after = TwoStageRecord();
  v1::StoredReport log = Report({Allocated(0, 40)}, v1::JOB_OUTCOME_CUDA_OOM);
  v1::StoredReport slurm = Report({}, v1::JOB_OUTCOME_CUDA_OOM);
  slurm.set_source(v1::MEASUREMENT_SOURCE_SLURM);
  *after.add_reports() = log;
  *after.add_reports() = slurm;
  after.set_outcome(v1::JOB_OUTCOME_CUDA_OOM);

  const v1::CheckRecord before_log = RecordBeforeReport(after, log);
  EXPECT_EQ(before_log.reports_size(), 0);
  EXPECT_EQ(before_log.outcome(), v1::JOB_OUTCOME_UNSPECIFIED);
  EXPECT_EQ(before_log.estimate_size(), 2);
  const v1::CheckRecord before_slurm = RecordBeforeReport(after, slurm);
  ASSERT_EQ(before_slurm.reports_size(), 1);
  EXPECT_EQ(before_slurm.reports(0).source(), v1::MEASUREMENT_SOURCE_MEGATRON_LOG);
  EXPECT_EQ(before_slurm.outcome(), v1::JOB_OUTCOME_CUDA_OOM);

  prometheus::Registry registry;
  FeedbackMetrics metrics(registry);
  metrics.Observe(before_log, log);
  metrics.Observe(before_slurm, slurm);
  EXPECT_EQ(
      Samples(registry).at("oomguard_admitted_then_oom_total{family=unknown,gpu=H100-SXM-80GB,}"),
      1);
  // A report the record does not hold: all of it came before.
  EXPECT_EQ(RecordBeforeReport(after, Report({Allocated(1, 1)})).reports_size(), 2);
}

TEST(FeedbackMetricsTest, TheLearnedWideningGauge) {
  prometheus::Registry registry;
  FeedbackMetrics metrics(registry);
  EXPECT_EQ(Samples(registry).at("oomguard_learned_bound_widening_ratio{}"), 0);
  metrics.SetLearnedWidening(0.05);
  EXPECT_EQ(Samples(registry).at("oomguard_learned_bound_widening_ratio{}"), 0.05);
}

}  // namespace
}  // namespace oomguard::service
